import Foundation
import Glibc
import Testing

import FeedbackServices
import FeedbackTestSupport

/// The built feedbackctl on a hung sound server (SIGSTOP), on each output: it ends with 69 and a
/// message in bounded time (it used to report "finished" for audio never played, or wait 30 s to
/// minutes with libcanberra), and SIGTERM still ends it within a second. Each test stops a server
/// of its own, so no other test is disturbed.
@Suite(.enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
struct ServerFaultBinaryTests {
    enum Output: String, CaseIterable, Sendable {
        case engine, canberra

        var arguments: [String] { self == .canberra ? ["--canberra"] : [] }
    }

    let directory = TemporaryDirectory()

    /// One second of a quiet tone.
    func source() throws -> String {
        let path = directory.file("second.wav")
        let tone = try SoundDecoder().decode(
            samples: [Float](repeating: 0.1, count: 48_000), sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(tone, to: path, format: .wav16)
        return path
    }

    func start(_ arguments: [String], on server: PulseAudioTestServer) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = server.server
        environment["XDG_CACHE_HOME"] = directory.file("cache")
        return try ChildProcess(feedbackctlBinary, arguments, environment: environment)
    }

    /// Stopped 0.3 s into a one-second sound: the engine notices within its stall timeout, the
    /// libcanberra watchdog at the sound's length + its margin.
    @Test(arguments: Output.allCases)
    func hungMidPlayIsExit69(output: Output) throws {
        let server = try PulseAudioTestServer.shared(named: "cli-faults-hung-\(output)", recording: false)
        defer { server.resume() }
        let source = try source()
        let child = try start(["play"] + output.arguments + [source], on: server)
        // Stopped once it plays: a server stopped before the stream exists is the other test's
        // case (a fixed 0.3 s, on a loaded machine, sometimes was).
        _ = waitForPactl(server: server.server, ["list", "short", "sink-inputs"], timeout: 5) { !$0.isEmpty }
        let started = MonotonicClock.now
        usleep(300_000)
        server.stop()
        let status = child.wait(timeout: 10)
        let elapsed = MonotonicClock.now - started
        #expect(status == 69, "\(child.errors)")
        #expect(child.errors.contains("the sound server stopped playing (it does not answer)"), "\(child.errors)")
        let bound = output == .engine ? 0.3 + EngineTimeouts.stall : 1 + CanberraOutput.stallMargin
        #expect(elapsed < bound + 1.5, "ended after \(elapsed) s")
    }

    /// Stopped before the command starts: connecting gives up after 2 s on either output.
    @Test(arguments: Output.allCases)
    func hungBeforeTheFirstSoundIsExit69(output: Output) throws {
        let server = try PulseAudioTestServer.shared(named: "cli-faults-hung-before-\(output)", recording: false)
        server.stop()
        defer { server.resume() }
        let started = MonotonicClock.now
        let child = try start(["play"] + output.arguments + [try source()], on: server)
        let status = child.wait(timeout: 10)
        #expect(status == 69, "\(child.errors)")
        #expect(child.errors.contains("not available"), "\(child.errors)")
        #expect(MonotonicClock.now - started < 3.5)
    }

    /// SIGTERM while the server hangs, mid-play and while connecting: 143 within a second.
    @Test(arguments: Output.allCases, [true, false])
    func sigtermOnAHungServerEndsAtOnce(output: Output, midPlay: Bool) throws {
        let server = try PulseAudioTestServer.shared(named: "cli-faults-term-\(output)-\(midPlay)", recording: false)
        defer { server.resume() }
        if !midPlay { server.stop() }
        let child = try start(["play"] + output.arguments + [try source()], on: server)
        usleep(300_000)
        if midPlay { server.stop() }
        usleep(300_000)
        let terminated = terminate(child)
        #expect(terminated.status == 143, "\(child.errors)")
        #expect(terminated.seconds < 1)
    }

    /// ALSA's `default` leads to the *default* PulseAudio server (no PULSE_SERVER) through the
    /// pulse plugin, whose `snd_pcm_open` waits without a time limit for a server that hangs: the
    /// open gives up after its 2 s with a clear error and exit 69, and SIGTERM, while it waits,
    /// ends the command within a second (the stuck open used to keep the process from exiting).
    @Test(.enabled(if: runningInCI || access(Self.pulsePlugin, F_OK) == 0, "the pulse ALSA plugin (libasound2-plugins) is not installed"))
    func aHungDefaultServerBehindALSAsDefaultIsBounded() throws {
        try #require(access(Self.pulsePlugin, F_OK) == 0, "\(Self.pulsePlugin) is needed (libasound2-plugins)")
        let server = try PulseAudioTestServer.shared(named: "cli-faults-alsa-default", recording: false)
        // The server as a session's default: $XDG_RUNTIME_DIR/pulse/native.
        let runtime = directory.file("runtime")
        for path in [runtime, "\(runtime)/pulse"] { mkdir(path, 0o700) }
        unlink("\(runtime)/pulse/native")
        try #require(symlink(server.socket, "\(runtime)/pulse/native") == 0)
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = nil
        environment["XDG_RUNTIME_DIR"] = runtime
        environment["XDG_CACHE_HOME"] = directory.file("cache")
        environment["FEEDBACKSERVICES_OUTPUT"] = "alsa"
        environment["FEEDBACKSERVICES_ALSA_PCM"] = "default"
        server.stop()
        defer { server.resume() }

        let started = MonotonicClock.now
        let child = try ChildProcess(feedbackctlBinary, ["fire", "1007"], environment: environment)
        let status = child.wait(timeout: 10)
        #expect(status == 69, "\(child.errors)")
        #expect(child.errors.contains("ALSA PCM default not open after 2.0 s (snd_pcm_open has not returned"), "\(child.errors)")
        #expect(MonotonicClock.now - started < 3.5)

        let interrupted = try ChildProcess(feedbackctlBinary, ["fire", "1007"], environment: environment)
        usleep(500_000)
        let terminated = terminate(interrupted)
        #expect(terminated.status == 143, "\(interrupted.errors)")
        #expect(terminated.seconds < 1)
    }

    static let pulsePlugin = "/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pulse.so"
}
