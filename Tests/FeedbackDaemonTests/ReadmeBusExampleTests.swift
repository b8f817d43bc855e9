import FeedbackBus
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// The README's D-Bus examples, run as written against feedbackservicesd on a private bus, with a
/// private PulseAudio whose monitor must hear each: every `gdbus call` line of its shell blocks
/// (run by `/bin/sh`), and its Python block (by `/usr/bin/python3`, with GIO), which must print
/// the end it promises.
@Suite(.serialized, .enabled(if: DaemonTools.shouldRun))
struct ReadmeBusExampleTests {
    let pulse: PulseAudioTestServer

    init() throws {
        pulse = try PulseAudioTestServer.shared(named: "readme-bus")
    }

    private static var readme: String {
        var root = "\(#filePath)"
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        return "\(root)/README.md"
    }

    /// The fenced blocks of `language` in the README, each as its text.
    private static func blocks(_ language: String) throws -> [String] {
        let text = try String(contentsOfFile: readme, encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if let lines = current {
                    blocks.append(lines.joined(separator: "\n"))
                    current = nil
                } else if line == "```\(language)" {
                    current = []
                }
                continue
            }
            current?.append(line)
        }
        return blocks
    }

    /// Each `gdbus call` of the README's shell blocks, continuation lines joined, comments left out.
    private static func gdbusCalls() throws -> [String] {
        var calls: [String] = []
        for block in try blocks("sh") {
            var pending = ""
            for line in block.split(separator: "\n") {
                var command = String(line)
                if let comment = command.firstRange(of: " # ") { command = String(command[..<comment.lowerBound]) }
                command = String(command.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
                if command.hasSuffix("\\") {
                    pending += command.dropLast() + " "
                    continue
                }
                command = pending + command
                pending = ""
                if command.hasPrefix("gdbus call") { calls.append(command) }
            }
        }
        return calls
    }

    @Test func everyGdbusCallRunsAndIsHeard() throws {
        let calls = try Self.gdbusCalls()
        #expect(calls.count >= 2, "\(calls)")
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let environment = harness.environment().map { "\($0.key)=\($0.value)" }
        for call in calls {
            let start = pulse.recorder.frameCount
            let ran = runProcess("/bin/sh", ["-c", call], environment: environment)
            #expect(ran.status == 0, "\(call): \(ran.errors)")
            #expect(ran.output.hasPrefix("(uint32 "), "\(call): \(ran.output)")
            #expect(pulse.recorder.firstSound(after: start, timeout: 3) != nil, "\(call): nothing was heard")
            pulse.recorder.wait(seconds: 0.8)
        }
    }

    @Test func thePythonExamplePrintsTheEndItPromises() throws {
        let python = try #require(try Self.blocks("python").first { $0.contains("Gio.bus_get_sync") })
        let promised = try #require(python.firstMatch(of: /# prints (.+)$/)?.1, "the example says what it prints")
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = pulse.recorder.frameCount
        let ran = runProcess(
            DaemonTools.python, ["-c", python], environment: harness.environment().map { "\($0.key)=\($0.value)" })
        #expect(ran.status == 0, "\(ran.errors)")
        #expect(ran.output == "\(promised)\n", "\(ran.output) \(ran.errors)")
        #expect(pulse.recorder.firstSound(after: start, timeout: 3) != nil, "nothing was heard")
    }
}
