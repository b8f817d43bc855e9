import FeedbackTestSupport
import Testing

@testable import FeedbackServices

/// `AudioOutputSelection`: which output is chosen, and why, against a real headless PipeWire (with
/// its recorder: audio reaching it proves WirePlumber links streams, so a stream can start).
@Suite(
    .enabled(if: PipeWireTestServer.shouldRun, "pipewire is not installed (scripts/setup)"),
    .shutsDownSoundServers(named: ["selection"]))
struct OutputSelectionTests {
    @Test func aPipeWireDaemonThatAnswersIsChosen() throws {
        let server = try PipeWireTestServer.shared(named: "selection")
        let environment = ["XDG_RUNTIME_DIR": server.runtime]
        let choice = AudioOutputSelection.choice(environment: environment)
        #expect(choice.kind == .pipeWire, "\(choice.reason)")
        let output = try AudioOutputSelection.automatic(environment: environment)
        #expect(output is PipeWireOutput)
    }

    @Test func pulseServerAndTheVariableDecideFirst() throws {
        let server = try PipeWireTestServer.shared(named: "selection")
        let runtime = ["XDG_RUNTIME_DIR": server.runtime]
        #expect(AudioOutputSelection.choice(environment: runtime.merging(["PULSE_SERVER": server.server]) { $1 }).kind == .pulseAudio)
        let forced = runtime.merging(["FEEDBACKSERVICES_OUTPUT": "pulseaudio"]) { $1 }
        #expect(AudioOutputSelection.choice(environment: forced).kind == .pulseAudio)
        let unknown = AudioOutputSelection.choice(environment: ["FEEDBACKSERVICES_OUTPUT": "oss"])
        #expect(unknown.kind == nil && unknown.reason.contains("pipewire, pulseaudio, alsa, canberra"))
        #expect(throws: PlaybackError.self) { try AudioOutputSelection.automatic(environment: ["FEEDBACKSERVICES_OUTPUT": "alsa"]) }
    }

    @Test func aSocketNobodyListensOnIsNotPipeWire() {
        let directory = TemporaryDirectory()
        let choice = AudioOutputSelection.choice(environment: ["XDG_RUNTIME_DIR": directory.path])
        #expect(choice.kind == .pulseAudio)
        #expect(choice.reason.contains("no PipeWire daemon answers at \(directory.path)/pipewire-0"))
    }
}
