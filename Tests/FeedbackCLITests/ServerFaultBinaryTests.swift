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
        let started = MonotonicClock.now
        let child = try start(["play"] + output.arguments + [source], on: server)
        usleep(300_000)
        server.stop()
        let status = child.wait(timeout: 10)
        let elapsed = MonotonicClock.now - started
        #expect(status == 69, "\(child.errors)")
        #expect(child.errors.contains("the sound server stopped playing (it does not answer)"), "\(child.errors)")
        let bound = output == .engine ? 0.3 + PulseAudioOutput.stallTimeout : 1 + CanberraOutput.stallMargin
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
}
