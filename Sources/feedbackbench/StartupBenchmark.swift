import FeedbackServices
import Glibc

/// What starting a process costs, start to exit, each program printing one line: C programs
/// (`echo`; `aplay --version` and `paplay --version`, which load libasound and libpulse before
/// `main`), `startup-floor` (a Swift program that only prints, linked as feedbackctl is) and
/// `feedbackctl version`. Interleaved, one run of each per round, with each run's minor page
/// faults (`wait4`'s rusage): the part of `fire`'s whole-process figures (CommandBenchmark, the
/// VM's `--pcm` row) that lies before `feedbackctl` does any work of its own (issues 14 and 16).
struct StartupBenchmark {
    let runs: Int

    func run() {
        let floor = CommandBenchmark.siblingExecutable("startup-floor")
        let feedbackctl = getenv("FEEDBACKBENCH_FEEDBACKCTL").map { String(cString: $0) } ?? CommandBenchmark.siblingExecutable("feedbackctl")
        for program in [floor, feedbackctl] where access(program, X_OK) != 0 {
            print("start-up: \(program) is not built; run 'swift build -c release' first")
            return
        }
        var contenders: [(name: String, command: [String])] = [
            ("C: echo x", ["/bin/echo", "x"]),
            ("Swift: startup-floor", [floor]),
            ("feedbackctl version", [feedbackctl, "version"]),
        ]
        for (program, name) in [("aplay", "C + libasound: aplay --version"), ("paplay", "C + libpulse: paplay --version")]
        where programExists(program) {
            contenders.append((name, [program, "--version"]))
        }
        var times = [[Double]](repeating: [], count: contenders.count)
        var faults = [[Double]](repeating: [], count: contenders.count)
        for round in -2..<runs {
            for (index, contender) in contenders.enumerated() {
                guard let (seconds, minorFaults) = Self.timed(contender.command) else {
                    fatalError("\(contender.name) failed")
                }
                // Two rounds warm the page cache for every contender alike.
                guard round >= 0 else { continue }
                times[index].append(seconds)
                faults[index].append(Double(minorFaults))
            }
        }
        print("start-up, start to exit, each printing one line (\(runs) runs each, interleaved)")
        for (index, contender) in contenders.enumerated() {
            let pageFaults = Int(Timings(samples: faults[index]).median)
            print("  \(padded(contender.name)) \(Timings(samples: times[index]).summary)  \(pageFaults) page faults")
        }
        let median = { (index: Int) in Timings(samples: times[index]).median }
        print("  startup-floor − echo: \(milliseconds(median(1) - median(0))) (Swift's static runtime and libraries)")
        print("  feedbackctl version − startup-floor: \(milliseconds(median(2) - median(1))) (feedbackctl's own code and data)")
    }

    /// Runs `command` with its output to /dev/null; its time from `posix_spawn` to its exit and its
    /// minor page faults, or nil when it could not start or failed.
    private static func timed(_ command: [String]) -> (Double, Int)? {
        let start = MonotonicClock.now
        guard let pid = spawnProgram(command[0], Array(command.dropFirst())) else { return nil }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { return nil }
        }
        let elapsed = MonotonicClock.now - start
        guard status == 0 else { return nil }
        return (elapsed, usage.ru_minflt)
    }
}
