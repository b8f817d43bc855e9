// feedbackbench: the project's speed figures, each printed beside its reference in the same run.
//
// Usage: feedbackbench [--iterations N] [--quick]
import FeedbackServices
import FoundationEssentials
import Glibc

var iterations = 15
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
    case "-h", "--help":
        print("USAGE: feedbackbench [--iterations N] [--quick]")
        exit(0)
    default:
        print("feedbackbench: unknown argument '\(argument)'")
        exit(64)
    }
}

let workDirectory = makeTemporaryDirectory()
defer { removeTree(workDirectory) }

print("feedbackbench: \(iterations) iterations per figure; medians; ratio = ours / reference (lower is faster)")
print("")
RegistrationBenchmark(directory: workDirectory, iterations: iterations).run()
print("")
VolumeBenchmark(directory: workDirectory, iterations: iterations).run()
print("")
EngineBenchmark(directory: workDirectory, plays: max(30, iterations * 2)).run()
