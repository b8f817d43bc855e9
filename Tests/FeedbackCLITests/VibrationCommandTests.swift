@testable import FeedbackCLI
import Glibc
import Testing

struct VibrationCommandTests {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
    }

    func run(_ arguments: [String]) -> Run {
        var output = ""
        var errors = ""
        let status = FeedbackCommand.run(arguments: arguments, output: &output, errors: &errors)
        return Run(status: status, output: output, errors: errors)
    }

    /// An empty directory standing in for /dev/input.
    func emptyInputDirectory() throws -> String {
        var template = Array("/tmp/fbs-cli-input-XXXXXX".utf8CString)
        return try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
    }

    @Test(arguments: [
        (["vibrate", "--duration", "abc"], "--duration takes milliseconds"),
        (["vibrate", "--duration", "-4"], "--duration takes milliseconds"),
        (["vibrate", "--intensity", "1.5"], "--intensity takes a strength 0...1"),
        (["vibrate", "--pattern", "10,,20"], "--pattern needs a comma-separated list"),
        (["vibrate", "--amplitudes", "1"], "--amplitudes needs --pattern"),
        (["vibrate", "--pattern", "10,20", "--amplitudes", "1"], "--pattern has 2 timings but --amplitudes has 1"),
        (["vibrate", "--pattern", "10,20", "--duration", "5"], "exclude each other"),
        (["vibrate", "--pattern", "100"], "never vibrates"),
        (["vibrate", "--loud"], "unknown option '--loud'"),
        (["vibrate", "now"], "unexpected argument 'now'"),
        (["devices", "--device"], "unknown option '--device'"),
    ])
    func argumentErrorsAreUsageErrors(arguments: [String], message: String) {
        let result = run(arguments)
        #expect(result.status == 64)
        #expect(result.errors.contains(message), "\(result.errors)")
        #expect(result.output.isEmpty)
    }

    @Test func withoutAVibratorVibrateExitsUnavailable() throws {
        let directory = try emptyInputDirectory()
        let result = run(["vibrate", "--duration", "50", "--input-dir", directory])
        #expect(result.status == 69)
        #expect(result.errors == "Error: \(directory): no vibration device (an evdev device with force-feedback rumble or periodic effects)\n")
        let named = run(["vibrate", "--device", "/nonexistent/event7"])
        #expect(named.status == 69)
        #expect(named.errors.hasPrefix("Error: /nonexistent/event7: no vibration device"))
    }

    @Test func devicesListsNothingWhenThereIsNothing() throws {
        let directory = try emptyInputDirectory()
        let text = run(["devices", "--vibrators", "--input-dir", directory])
        #expect(text.status == 0 && text.output == "No vibrators in \(directory).\n")
        let json = run(["devices", "--vibrators", "--json", "--input-dir", directory])
        #expect(json.status == 0)
        #expect(json.output == "{\"version\":\"\(FeedbackCommand.version)\",\"vibrators\":[]}\n")
    }

    @Test(arguments: ["vibrate", "devices"])
    func helpIsPrintedAlike(command: String) {
        let help = run(["help", command])
        #expect(help.status == 0 && help.output.hasPrefix("OVERVIEW: "))
        #expect(run([command, "--help"]).output == help.output)
        #expect(run([command, "-h"]).output == help.output)
        #expect(run([]).output.contains("  \(command) "))
    }
}
