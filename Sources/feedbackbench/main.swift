// feedbackbench: the project's speed figures, each printed beside its reference in the same run.
//
// Usage: feedbackbench [--iterations N] [--quick] [--only registration|volume|engine|start|startup|command|daemon|daemon-fire|pipewire|pipewire-load|notifications|notify-round-trip]
// (daemon-fire: only the daemon section's `feedbackctl fire` through the service against paplay;
// pipewire-load: only the pipewire section's tones under load; notifications, run only when
// named: the notification bridge under dunst against dunst's script running paplay;
// notify-round-trip: only its Notify round trip with and without the service)
import FeedbackServices
import FoundationEssentials
// @preconcurrency: Glibc's `stdout` is a mutable global, which Swift 6 refuses to touch otherwise;
// it is set once here, before any thread starts.
@preconcurrency import Glibc

// Line by line even into a file or a pipe: a run stopped part-way (a `timeout`, Ctrl-C) keeps the
// figures it printed; fully buffered, a half-hour run's output was lost with it.
setvbuf(stdout, nil, _IOLBF, 0)

var iterations = 15
let figures = [
    "registration", "volume", "engine", "start", "startup", "command", "daemon", "daemon-fire", "pipewire", "pipewire-load",
    "notifications", "notify-round-trip",
]
var only: Set<String> = Set(figures).subtracting(["daemon-fire", "pipewire-load", "notifications", "notify-round-trip"])
// Latency figures always use at least 30 plays each; --quick only shortens the others.
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--iterations":
        guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
            fatalError("--iterations needs a positive number")
        }
        iterations = value
    case "--quick": iterations = 3
    case "--only":
        guard let names = arguments.popFirst()?.split(separator: ",").map(String.init),
            names.allSatisfy(figures.contains)
        else {
            fatalError("--only takes a comma-separated list of \(figures.joined(separator: ", "))")
        }
        only = Set(names)
    case "-h", "--help":
        print("USAGE: feedbackbench [--iterations N] [--quick] [--only \(figures.joined(separator: ","))]")
        exit(0)
    default:
        print("feedbackbench: unknown argument '\(argument)'")
        exit(64)
    }
}

let workDirectory = makeTemporaryDirectory()
defer { removeTree(workDirectory) }

print("feedbackbench: \(iterations) iterations per figure; medians; ratio = ours / reference (lower is faster)")
if only.contains("registration") {
    print("")
    RegistrationBenchmark(directory: workDirectory, iterations: iterations).run()
}
if only.contains("volume") {
    print("")
    VolumeBenchmark(directory: workDirectory, iterations: iterations).run()
}
if only.contains("engine") {
    print("")
    EngineBenchmark(directory: workDirectory, plays: max(30, iterations * 2)).run()
}
if only.contains("start") {
    print("")
    StreamStartBenchmark(plays: max(100, iterations * 2)).run()
}
if only.contains("startup") {
    print("")
    StartupBenchmark(runs: max(200, iterations * 2)).run()
}
if only.contains("command") {
    print("")
    CommandBenchmark(plays: max(30, iterations * 2)).run()
}
if only.contains("daemon") || only.contains("daemon-fire") {
    print("")
    DaemonBenchmark(triggers: max(100, iterations * 2), fireOnly: !only.contains("daemon")).run()
}
if only.contains("notifications") || only.contains("notify-round-trip") {
    print("")
    NotificationBenchmark(notifications: max(100, iterations * 2), roundTripOnly: !only.contains("notifications")).run()
}
if only.contains("pipewire") || only.contains("pipewire-load") {
    print("")
    PipeWireBenchmark(directory: workDirectory, plays: max(100, iterations * 2), loadOnly: !only.contains("pipewire")).run()
}
