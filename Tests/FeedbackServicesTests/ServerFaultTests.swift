import Dispatch
import Glibc
import Testing

@testable import FeedbackServices

/// Every way a sound server can fail a play, on each output: killed mid-play, hung (SIGSTOP)
/// mid-play, hung before the first sound, gone before the start. Each play ends exactly once, with
/// the reason the output documents, within the output's bound. Each test has a server of its own,
/// so stopping or killing it disturbs no other test.
@Suite(.enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
struct EngineFaultTests {
    /// A connected engine on a server of its own.
    func engine(_ name: String) throws -> (PulseAudioTestServer, PulseAudioOutput) {
        let server = try PulseAudioTestServer.shared(named: name, recording: false)
        let output = PulseAudioOutput(configuration: .init(server: server.server))
        try output.prepare()
        return (server, output)
    }

    @Test func killedMidPlayFailsOnceAsConnectionLost() throws {
        let (server, output) = try engine("faults-engine-killed")
        let played = try faultMidPlay(output, seconds: 3, timeout: 3) { server.kill() }
        #expect(played.end.error?.reason == .connectionLost, "\(played.end)")
        #expect(played.sinceFault < 1)
        expectExactlyOnce(played.ends)
    }

    /// The issue's case: a 1 s sound on a server stopped 0.3 s in used to report `.finished` at
    /// 1 s. It fails `.serverStalled` once the read position has stood still for `EngineTimeouts.stall`,
    /// and after the server resumes the engine plays again.
    @Test func hungMidPlayFailsOnceAsStalledNeverFinished() throws {
        let (server, output) = try engine("faults-engine-hung")
        defer { server.resume() }
        let played = try faultMidPlay(output, seconds: 1, timeout: 6) { server.stop() }
        #expect(played.end.error?.reason == .serverStalled, "\(played.end)")
        #expect(played.sinceFault < EngineTimeouts.stall + 1)
        #expect(played.sinceFault > 1, "not before the sound could have ended")
        server.resume()
        let again = EndRecorder()
        output.play(tone(seconds: 0.2), completion: again.completion)
        #expect(again.wait(timeout: 5)?.end == .finished)
        #expect(played.ends.all.count == 1, "\(played.ends.all)")
    }

    /// Connected and idle when the server hangs: the next play fails `.serverStalled` within the
    /// bound (the stall clock starts with the sound), and so does one played meanwhile.
    @Test func hungBeforeTheFirstSoundFailsEveryPlayOnce() throws {
        let (server, output) = try engine("faults-engine-hung-idle")
        defer { server.resume() }
        usleep(100_000)
        server.stop()
        let started = MonotonicClock.now
        let first = EndRecorder(), second = EndRecorder()
        output.play(tone(seconds: 0.5), completion: first.completion)
        usleep(500_000)
        output.play(tone(seconds: 0.5), completion: second.completion)
        for ends in [first, second] {
            let (end, time) = try #require(ends.wait(timeout: 6))
            #expect(end.error?.reason == .serverStalled, "\(end)")
            #expect(time - started < EngineTimeouts.stall + 1)
        }
        expectExactlyOnce(first)
        expectExactlyOnce(second)
    }

    /// A server that accepts the connection but never answers: `prepare` and the automatic
    /// choice give up within their timeout, and a play fails once the connection attempt does
    /// (`EngineTimeouts.open`), never waiting for libpulse's 30 s.
    @Test func connectingToAHungServerEndsWithinItsTimeout() throws {
        let server = try PulseAudioTestServer.shared(named: "faults-engine-hung-connect", recording: false)
        server.stop()
        defer { server.resume() }
        var started = MonotonicClock.now
        #expect(throws: PlaybackError.self) { try AudioOutputSelection.automatic(server: server.server, timeout: 1) }
        #expect(MonotonicClock.now - started < 1.5)

        let output = PulseAudioOutput(configuration: .init(server: server.server))
        started = MonotonicClock.now
        let ends = EndRecorder()
        output.play(tone(seconds: 0.2), completion: ends.completion)
        let (end, time) = try #require(ends.wait(timeout: EngineTimeouts.open + 3))
        #expect(end.error?.reason == .serverUnavailable, "\(end)")
        #expect(time - started < EngineTimeouts.open + 1)
        expectExactlyOnce(ends)
    }

    /// A server gone before the play: a new engine and one that was connected both fail at once.
    @Test func goneBeforeTheStartFailsAtOnce() throws {
        let (server, connected) = try engine("faults-engine-gone")
        server.kill()
        usleep(200_000)
        for output in [connected, PulseAudioOutput(configuration: .init(server: server.server))] {
            let started = MonotonicClock.now
            let ends = EndRecorder()
            output.play(tone(seconds: 0.2), completion: ends.completion)
            let (end, time) = try #require(ends.wait(timeout: 3))
            #expect(end.error?.reason == .serverUnavailable, "\(end)")
            #expect(time - started < 1)
            expectExactlyOnce(ends)
        }
    }
}

extension AudioServerSuites {
    /// The same faults through libcanberra. Nested in the serialized audio suites: libcanberra
    /// finds its server through `PULSE_SERVER`, which is process-wide, so no other libcanberra
    /// suite may run meanwhile.
    @Suite(.serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
    struct CanberraFaultTests {
        let cache = TemporaryDirectory()

        /// A server of its own, which libcanberra is pointed at.
        func server(_ name: String) throws -> PulseAudioTestServer {
            let server = try PulseAudioTestServer.shared(named: name, recording: false)
            setenv("PULSE_SERVER", server.server, 1)
            return server
        }

        @Test func killedMidPlayFailsOnceWithLibcanberrasError() throws {
            let server = try server("faults-canberra-killed")
            let output = try CanberraOutput(cacheDirectory: cache.file("cache"))
            let played = try faultMidPlay(output, seconds: 3, timeout: 3) { server.kill() }
            guard case .canberra = played.end.error?.reason else {
                Issue.record("expected a libcanberra error, got \(played.end)")
                return
            }
            #expect(played.sinceFault < 1)
            expectExactlyOnce(played.ends)
        }

        /// libcanberra's finish callback never comes while the server is stopped: the watchdog
        /// fails the play at its length + `stallMargin`, and the callback that comes once the
        /// server resumes reports nothing more.
        @Test func hungMidPlayFailsOnceAtItsLengthPlusTheMargin() throws {
            let server = try server("faults-canberra-hung")
            defer { server.resume() }
            let output = try CanberraOutput(cacheDirectory: cache.file("cache"))
            let played = try faultMidPlay(output, seconds: 1, timeout: 6) { server.stop() }
            #expect(played.end.error?.reason == .serverStalled, "\(played.end)")
            let bound = 1 + CanberraOutput.stallMargin
            #expect(played.sinceStart >= bound - 0.05 && played.sinceStart < bound + 0.5, "ended after \(played.sinceStart) s")
            server.resume()
            expectExactlyOnce(played.ends, after: 1)
            let again = EndRecorder()
            output.play(tone(seconds: 0.2), completion: again.completion)
            #expect(again.wait(timeout: 5)?.end == .finished)
        }

        /// Open when the server hangs: `ca_context_play_full` itself blocks, so the plays queued
        /// behind it fail by their watchdogs, a stop still ends its play at once, and each play
        /// reports once.
        @Test func hungBeforeTheFirstSoundFailsEveryPlayOnce() throws {
            let server = try server("faults-canberra-hung-idle")
            defer { server.resume() }
            let output = try CanberraOutput(cacheDirectory: cache.file("cache"))
            server.stop()
            let started = MonotonicClock.now
            let sound = tone(seconds: 0.5)
            let first = EndRecorder(), second = EndRecorder(), stopped = EndRecorder()
            output.play(sound, completion: first.completion)
            output.play(sound, completion: second.completion)
            let handle = output.play(sound, completion: stopped.completion)
            usleep(200_000)
            handle.stop()
            #expect(stopped.wait(timeout: 1)?.end == .stopped)
            for ends in [first, second] {
                let (end, time) = try #require(ends.wait(timeout: 6))
                #expect(end.error?.reason == .serverStalled, "\(end)")
                #expect(time - started < sound.duration + CanberraOutput.stallMargin + 0.5)
            }
            server.resume()
            usleep(500_000)
            for ends in [first, second, stopped] { expectExactlyOnce(ends, after: 0) }
        }

        /// Opening libcanberra on a hung server gives up within its timeout (libpulse alone waits 30 s).
        @Test func openingOnAHungServerEndsWithinItsTimeout() throws {
            let server = try server("faults-canberra-hung-open")
            server.stop()
            defer { server.resume() }
            func expectGivesUpInTime(_ open: () throws -> Void) {
                let started = MonotonicClock.now
                do {
                    try open()
                    Issue.record("libcanberra opened on a stopped server")
                } catch {
                    #expect((error as? PlaybackError)?.reason == .serverUnavailable, "\(error)")
                }
                #expect(MonotonicClock.now - started < 1.5)
            }
            expectGivesUpInTime { _ = try CanberraOutput(timeout: 1) }
            expectGivesUpInTime { try CanberraOutput.checkAvailability(timeout: 1) }
        }

        /// A server gone before the start: opening fails at once, and so does a play on an output
        /// opened before the server went.
        @Test func goneBeforeTheStartFailsAtOnce() throws {
            let server = try server("faults-canberra-gone")
            let output = try CanberraOutput(cacheDirectory: cache.file("cache"))
            server.kill()
            usleep(200_000)
            var started = MonotonicClock.now
            #expect(throws: PlaybackError.self) { try CanberraOutput(cacheDirectory: cache.file("cache")) }
            #expect(MonotonicClock.now - started < 1)
            started = MonotonicClock.now
            let ends = EndRecorder()
            output.play(tone(seconds: 0.2), completion: ends.completion)
            let (end, time) = try #require(ends.wait(timeout: 3))
            guard case .canberra = end.error?.reason else {
                Issue.record("expected a libcanberra error, got \(end)")
                return
            }
            #expect(time - started < 1)
            expectExactlyOnce(ends)
        }
    }
}

private func tone(seconds: Double) -> PCMBuffer {
    Signal.buffer(Signal.sines([440], amplitude: 0.2, seconds: seconds, rate: 48_000), channels: 1, rate: 48_000)
}

/// Plays `seconds` of tone on `output`, brings about `fault` 0.3 s in, and waits up to `timeout`
/// seconds for the play to end.
/// - Returns: how it ended, seconds from the start and from the fault to that, and its recorder
///   (to check that nothing more is reported).
private func faultMidPlay(_ output: some AudioOutput, seconds: Double, timeout: Double, _ fault: () -> Void)
    throws -> (end: PlaybackEnd, sinceStart: Double, sinceFault: Double, ends: EndRecorder)
{
    let ends = EndRecorder()
    let started = MonotonicClock.now
    output.play(tone(seconds: seconds), options: PlaybackOptions(), queue: .global(), completion: ends.completion)
    usleep(300_000)
    let faulted = MonotonicClock.now
    fault()
    let (end, time) = try #require(ends.wait(timeout: timeout))
    return (end, time - started, time - faulted, ends)
}

/// Waits a little longer, then checks that nothing more was reported than the one end.
private func expectExactlyOnce(_ ends: EndRecorder, after seconds: Double = 0.3) {
    usleep(UInt32(seconds * 1_000_000))
    #expect(ends.all.count == 1, "\(ends.all)")
}

extension PlaybackEnd {
    /// The error of a failed play.
    var error: PlaybackError? {
        if case .failed(let error) = self { error } else { nil }
    }
}
