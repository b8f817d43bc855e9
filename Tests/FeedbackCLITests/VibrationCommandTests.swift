@testable import FeedbackCLI
import FeedbackServices
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
        (["vibrate", "--primitive", "boing"], "'boing' is not"),
        (["vibrate", "--primitive", "click", "--duration", "5"], "--primitive excludes --duration and --pattern"),
        (["vibrate", "--primitive", "click", "--pattern", "0,20"], "--primitive excludes"),
    ])
    func argumentErrorsAreUsageErrors(arguments: [String], message: String) {
        let result = run(arguments)
        #expect(result.status == 64)
        #expect(result.errors.contains(message), "\(result.errors)")
        #expect(result.output.isEmpty)
    }

    /// The named primitives, step by step (what a rumble motor is given), scaled by intensity.
    @Test func primitivesAreTheirSteps() throws {
        func steps(_ primitive: HapticPrimitive, _ intensity: Double = 1) throws -> [String] {
            try VibrationPattern.primitive(primitive, intensity: intensity).steps.map { "\($0.duration)@\($0.intensity)" }
        }
        #expect(try steps(.click) == ["20@1.0"])
        #expect(try steps(.doubleClick) == ["20@1.0", "80@0.0", "20@1.0"])
        #expect(try steps(.heavyClick) == ["30@1.0"])
        #expect(try steps(.tick) == ["10@0.5"])
        #expect(try steps(.thud) == ["15@1.0", "45@0.35"])
        #expect(try steps(.quickRise) == ["10@0.2", "10@0.4", "10@0.6", "10@0.8", "10@1.0"])
        #expect(try steps(.slowRise).count == 6 && steps(.slowRise).first == "25@0.2" && steps(.slowRise).last == "25@1.0")
        #expect(try steps(.quickFall) == ["10@1.0", "10@0.8", "10@0.6", "10@0.4", "10@0.2"])
        #expect(try steps(.doubleClick, 0.5) == ["20@0.5", "80@0.0", "20@0.5"])
        #expect(throws: VibrationPattern.Invalid.intensityOutOfRange(1.5)) { try VibrationPattern.primitive(.click, intensity: 1.5) }
        #expect(throws: VibrationPattern.Invalid.empty) { try VibrationPattern.primitive(.click, intensity: 0) }
        // Each within the service's Vibrate bounds (64 steps, 10 s a step), so it plays there too.
        for primitive in HapticPrimitive.allCases {
            let pattern = try VibrationPattern.primitive(primitive)
            #expect(pattern.steps.count <= 64 && pattern.duration <= 200, "\(primitive)")
        }
        let directory = try emptyInputDirectory()
        let result = run(["vibrate", "--primitive", "thud", "--input-dir", directory])
        #expect(result.status == 69, "\(result.errors)")
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
