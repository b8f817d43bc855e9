import FeedbackTestSupport
import Glibc
import Testing

@testable import FeedbackPlayer
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

    /// `feedbackctl fire`'s early open: `automatic()` with the same environment takes the output
    /// opened in the background, once; another environment, or a second call, opens its own.
    @Test func anOutputOpenedInTheBackgroundIsTakenOnceForItsEnvironment() throws {
        let server = try PipeWireTestServer.shared(named: "selection")
        // A variable of its own, so that no other test's call matches this environment.
        let environment = ["XDG_RUNTIME_DIR": server.runtime, "FEEDBACKSERVICES_TEST": "early open"]
        AudioOutputSelection.openInBackground(environment: environment)
        let other = try #require(try AudioOutputSelection.automatic(environment: ["XDG_RUNTIME_DIR": server.runtime]) as? PipeWireOutput)
        // Ready before the call that takes it (a fixed 0.5 s wait was not, in a CI run beside
        // other work: ready 48 ms after the call).
        #expect(AudioOutputSelection.earlyOpenFinished(timeout: 10), "the background open did not finish")
        let asked = MonotonicClock.now
        let taken = try #require(try AudioOutputSelection.automatic(environment: environment) as? PipeWireOutput)
        let again = try #require(try AudioOutputSelection.automatic(environment: environment) as? PipeWireOutput)
        let takenReady = try #require(taken.statistics.readyTime)
        #expect(takenReady < asked, "the taken output was ready before it was asked for")
        #expect(try #require(again.statistics.readyTime) > asked, "the second call opened its own")
        #expect(try #require(other.statistics.readyTime) != takenReady)
        #expect(taken !== again && taken !== other)
    }

    @Test func aSocketNobodyListensOnIsNotPipeWire() {
        let directory = TemporaryDirectory()
        let choice = AudioOutputSelection.choice(environment: ["XDG_RUNTIME_DIR": directory.path])
        #expect(choice.kind == .pulseAudio)
        #expect(choice.reason.contains("no PipeWire daemon answers at \(directory.path)/pipewire-0"))
    }

    /// `SoundManager()`'s outputs: the engine the choice names, on the role asked for, opened only
    /// by its first sound (which then plays at the daemon); libcanberra, which cannot stream or
    /// fade, gives way to the servers' choice.
    @Test func theSoundManagersEngineFollowsTheChoiceAndOpensAtItsFirstSound() throws {
        let server = try PipeWireTestServer.shared(named: "selection")
        let runtime = ["XDG_RUNTIME_DIR": server.runtime]
        let music = try #require(AudioOutputSelection.engine(mediaRole: "music", environment: runtime) as? PipeWireOutput)
        #expect(music.configuration.mediaRole == "Music")
        #expect(music.statistics.opens == 0, "made, not opened")
        let ends = EndRecorder()
        let tone = Signal.buffer(Signal.sines([440, 440], amplitude: 0.2, seconds: 0.05, rate: 48_000), channels: 2, rate: 48_000)
        music.play(tone, queue: .global(), completion: ends.completion)
        #expect(ends.wait()?.end == .finished)
        #expect(music.statistics.opens == 1)

        let canberra = runtime.merging(["FEEDBACKSERVICES_OUTPUT": "canberra"]) { $1 }
        #expect(AudioOutputSelection.engine(mediaRole: "event", environment: canberra) is PipeWireOutput)
        let pulse = try #require(
            AudioOutputSelection.engine(mediaRole: "game", environment: runtime.merging(["PULSE_SERVER": server.server]) { $1 })
                as? PulseAudioOutput)
        #expect(pulse.configuration.mediaRole == "game")
        #expect(pulse.configuration.server == server.server, "the environment's PULSE_SERVER, not the process's")
        let alsa = try #require(
            AudioOutputSelection.engine(
                mediaRole: "event", environment: ["FEEDBACKSERVICES_OUTPUT": "alsa", "FEEDBACKSERVICES_ALSA_PCM": "null"])
                as? ALSAOutput)
        #expect(alsa.configuration.device == "null")

        // The manager: its music on a stream of the music role (the game role for background
        // music) of the same kind; on ALSA, which has no roles, on the effects output.
        let manager = SoundManager(environment: runtime)
        let effects = try #require(manager.output(for: .effect) as? PipeWireOutput)
        #expect(effects.configuration.mediaRole == "Notification")
        #expect((manager.output(for: .music) as? PipeWireOutput)?.configuration.mediaRole == "Music")
        manager.allowsBackgroundMusic = true
        #expect((manager.output(for: .music) as? PipeWireOutput)?.configuration.mediaRole == "Game")
        let pcm = SoundManager(environment: ["FEEDBACKSERVICES_OUTPUT": "alsa", "FEEDBACKSERVICES_ALSA_PCM": "null"])
        #expect(pcm.output(for: .music) === pcm.output(for: .effect))
    }
}
