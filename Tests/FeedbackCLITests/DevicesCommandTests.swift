import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// `feedbackctl devices`: the audio side against a real PulseAudio server, a missing one and one
/// that never answers, run as the built binary so that PULSE_SERVER is its own.
@Suite(.serialized) struct DevicesCommandTests {
    let input = TemporaryDirectory()

    func devices(_ arguments: [String], server: String) -> (CommandResult, elapsed: Double) {
        let started = MonotonicClock.now
        // The vibrators and LEDs of an empty directory: none, whatever the machine has.
        let vibrators = arguments.contains("--audio") ? [] : ["--input-dir", input.path, "--sysfs-root", input.path]
        let result = runProcess(feedbackctlBinary, ["devices"] + vibrators + arguments, environment: ["PULSE_SERVER=\(server)"])
        return (result, MonotonicClock.now - started)
    }

    func object(_ result: CommandResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
    }

    @Test(.enabled(if: PulseAudioTestServer.shouldRun))
    func listsTheServerItsSinksAndLibcanberra() throws {
        let server = try PrivateSoundServer.address()
        let (json, _) = devices(["--json"], server: server)
        #expect(json.status == 0, "\(json.errors)")
        let object = try object(json)
        #expect(object["version"] as? String == FeedbackCommand.version)
        let audio = try #require(object["audio"] as? [String: Any])
        let info = try #require(audio["server"] as? [String: Any])
        #expect(info["name"] as? String == "pulseaudio")
        #expect(info["pipewire"] as? Bool == false)
        #expect((info["address"] as? String)?.hasSuffix("/native") == true)
        let sinks = try #require(audio["sinks"] as? [[String: Any]])
        // scripts/private-pulseaudio's null sink, the server's only sink and so its default.
        let sink = try #require(sinks.first { $0["name"] as? String == "feedbackservices" }, "\(sinks)")
        #expect(sink["default"] as? Bool == true)
        #expect(sink["description"] as? String == "Null Output")
        #expect(sink["rate"] as? Int == 48_000 && sink["channels"] as? Int == 2)
        #expect(["running", "idle", "suspended"].contains(sink["state"] as? String ?? ""))
        #expect((object["canberra"] as? [String: Any])?["available"] as? Bool == true)
        #expect(object["audioError"] == nil)
        #expect((object["output"] as? [String: Any])?["kind"] as? String == "pulseaudio", "PULSE_SERVER names one")
        #expect((object["vibrators"] as? [Any])?.isEmpty == true)
        #expect((object["leds"] as? [Any])?.isEmpty == true)

        let (text, _) = devices([], server: server)
        #expect(text.status == 0)
        #expect(text.output.hasPrefix("Sound server: pulseaudio "))
        #expect(text.output.contains("  feedbackservices (default)\n    description: Null Output\n"))
        #expect(text.output.contains("libcanberra: available\n"))
        #expect(text.output.hasSuffix("\nNo vibrators in \(input.path).\n\nNo LEDs in \(input.path)/sys/class/leds.\n"))
    }

    /// With a PipeWire daemon answering, the output is PipeWire, and a line under it says how the
    /// thread its stream would run on is scheduled: real-time as root (CI runs as root).
    @Test(.enabled(if: PipeWireTestServer.shouldRun))
    func withPipeWireItSaysWhetherTheStreamThreadIsRealTime() throws {
        let server = try PipeWireTestServer.shared(named: "devices", recording: false)
        // What a client of that session sees: its runtime directory, and no PULSE_SERVER.
        func devices(_ arguments: [String]) throws -> ProcessResult {
            let environment = ["XDG_RUNTIME_DIR": server.runtime, "HOME": server.directory.path, "PATH": "/usr/bin:/bin"]
            let child = try ChildProcess(feedbackctlBinary, ["devices", "--audio"] + arguments, environment: environment)
            let status = child.wait()
            return ProcessResult(status: status, output: child.output, errors: child.errors)
        }
        let json = try devices(["--json"])
        #expect(json.status == 0, "\(json.errors)")
        let output = try #require(try object(json)["output"] as? [String: Any])
        #expect(output["kind"] as? String == "pipewire", "\(output)")
        let thread = try #require(output["streamThread"] as? [String: Any], "\(output)")
        let realTime = geteuid() == 0 || runningInCI
        if realTime {
            #expect(thread["realTime"] as? Bool == true, "\(thread)")
            #expect(["SCHED_FIFO", "SCHED_RR"].contains(thread["policy"] as? String ?? ""), "\(thread)")
        }
        let text = try devices([])
        #expect(text.status == 0, "\(text.errors)")
        let line = "Output: pipewire: a PipeWire daemon answers at \(server.socket)\n  stream thread: "
        #expect(text.output.contains(line + (realTime ? "real-time (SCHED_" : "")), "\(text.output)")
    }

    /// Where the process may not make PipeWire's data thread real-time (uid 65534: no
    /// CAP_SYS_NICE, RLIMIT_RTPRIO 0, no RTKit), `devices` says so, and `fire` plays all the same
    /// with one line on standard error saying so. Needs root, to run the commands as uid 65534:
    /// under CI, not being root fails the test rather than skipping it.
    @Test(.enabled(if: PipeWireTestServer.shouldRun && (runningInCI || geteuid() == 0), "needs pipewire and root"))
    func withoutRealTimeSchedulingFireStillPlaysAndSaysSoOnce() throws {
        try #require(geteuid() == 0, "runs the commands as uid 65534, which needs root")
        let server = try PipeWireTestServer.shared(named: "devices", recording: false)
        // Let uid 65534 reach the daemon's socket, for this test only.
        let modes = [(server.directory.path, mode_t(0o711), mode_t(0o700)), (server.runtime, 0o711, 0o700), (server.socket, 0o777, 0o755)]
        for (path, open, _) in modes { #expect(chmod(path, open) == 0) }
        defer { for (path, _, closed) in modes { chmod(path, closed) } }
        func asNobody(_ arguments: [String]) throws -> ProcessResult {
            let environment = [
                "XDG_RUNTIME_DIR": server.runtime, "HOME": "/nonexistent", "PATH": "/usr/bin:/bin",
                "FEEDBACKSERVICES_OUTPUT": "pipewire",
            ]
            let child = try ChildProcess(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", feedbackctlBinary] + arguments,
                environment: environment)
            let status = child.wait()
            return ProcessResult(status: status, output: child.output, errors: child.errors)
        }
        let devices = try asNobody(["devices", "--audio"])
        #expect(devices.output.contains("\n  stream thread: not real-time (SCHED_OTHER)\n"), "\(devices.output)\(devices.errors)")
        let fire = try asNobody(["fire", "1007"])
        #expect(fire.status == 0, "\(fire.errors)")
        let said = fire.errors.split(separator: "\n").filter { $0.contains("PipeWire's stream thread is not real-time") }
        #expect(said.count == 1, "\(fire.errors)")
    }

    @Test func noServerIsSaidPromptlyAndTheVibratorsAreStillListed() throws {
        let address = "unix:/nonexistent/native"
        let (json, elapsed) = devices(["--json"], server: address)
        #expect(json.status == 0, "without --audio a missing server is not an error: \(json.errors)")
        #expect(elapsed < 1.5)
        let object = try object(json)
        #expect(object["audio"] is NSNull)
        #expect(object["audioError"] as? String == "no PulseAudio server at \(address) (PULSE_SERVER): Connection refused")
        #expect((object["canberra"] as? [String: Any])?["available"] as? Bool == false)
        #expect((object["vibrators"] as? [Any])?.isEmpty == true)
        #expect((object["leds"] as? [Any])?.isEmpty == true)

        let (text, _) = devices([], server: address)
        #expect(text.output.hasPrefix("Sound server: none\n  no PulseAudio server at \(address) (PULSE_SERVER)"))
        #expect(text.output.hasSuffix("No vibrators in \(input.path).\n\nNo LEDs in \(input.path)/sys/class/leds.\n"))

        let audio = runProcess(feedbackctlBinary, ["devices", "--audio"], environment: ["PULSE_SERVER=\(address)"])
        #expect(audio.status == 69)
        #expect(audio.errors == "Error: no PulseAudio server at \(address) (PULSE_SERVER): Connection refused\n")
    }

    /// Something accepts the connection and never answers: the query gives up after 2 s.
    @Test func aServerThatNeverAnswersTimesOut() throws {
        let silent = try SilentServer(path: input.file("silent.sock"))
        let (result, elapsed) = devices(["--audio"], server: silent.server)
        #expect(result.status == 69)
        #expect(result.errors.contains("did not answer within 2.0 s"), "\(result.errors)")
        #expect(result.output.contains("libcanberra: not available"))
        #expect(elapsed > 1.9 && elapsed < 4, "\(elapsed)")
    }

    @Test(arguments: [
        (["devices", "--audio", "--vibrators"], "--audio and --vibrators exclude each other"),
        (["devices", "--vibrators", "--leds"], "--vibrators and --leds exclude each other"),
        (["devices", "--audio", "--input-dir", "/dev/input"], "--input-dir lists vibrators"),
    ])
    func usageErrors(arguments: [String], message: String) {
        let result = feedbackctl(arguments)
        #expect(result.status == 64)
        #expect(result.errors.contains(message), "\(result.errors)")
    }
}
