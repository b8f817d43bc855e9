import Dispatch
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// The engine core, offline: the rules every backend (PulseAudio, PipeWire, ALSA) follows, driven
/// here by the test acting as the backend's audio thread, with no device. The backends' own
/// suites check the same rules at real servers.
@Suite struct EngineCoreTests {
    /// A backend with no device: the test takes its commands and plays its timeline by hand.
    final class Bench: QueuedEngine, Sendable {
        let core = EngineCore()
        let wakes = Atomic<Int>(0)
        var timelineRate: Int { 48_000 }
        var reportsOnsets: Bool { true }
        func wakeAudioThread() { wakes.add(1, ordering: .relaxed) }
    }

    /// Every end a play reports, in order.
    final class Ends: Sendable {
        private let ends = Lock<[PlaybackEnd]>([])
        private let arrived = DispatchSemaphore(value: 0)
        var completion: @Sendable (PlaybackEnd) -> Void {
            { end in
                self.ends.withLock { $0.append(end) }
                self.arrived.signal()
            }
        }
        /// The ends so far, once `count` have come (or after a second).
        func wait(for count: Int) -> [PlaybackEnd] {
            for _ in 0..<count { _ = arrived.wait(timeout: .now() + 1) }
            return ends.withLock { $0 }
        }
    }

    static let tone = PCMBuffer(validSamples: [Float](repeating: 0.5, count: 480 * 2), channelCount: 2, sampleRate: 48_000)

    @Test func theStateGoesClosedOpeningReadyAndBackCountingEachOpen() throws {
        let bench = Bench()
        let core = bench.core
        #expect(core.state == .closed)
        #expect(!core.beginOpeningIfWanted(), "nothing waits: nothing opens")
        bench.play(.buffer(Self.tone), from: 0, options: PlaybackOptions(), delivery: .immediate, completion: nil)
        #expect(bench.wakes.load(ordering: .relaxed) == 1)
        #expect(core.beginOpeningIfWanted(now: 10))
        #expect(core.state == .opening(since: 10))
        #expect(!core.beginOpeningIfWanted(now: 10.1), "opened once, however often asked")
        #expect(!core.isOpeningOverdue(now: 10 + EngineTimeouts.open))
        #expect(core.isOpeningOverdue(now: 10.001 + EngineTimeouts.open))
        core.becameReady(now: 11)
        #expect(core.state == .ready)
        #expect(core.statistics.readyTime == 11)
        #expect(core.closed(with: nil), "closed when idle with a play queued: the backend opens again")
        #expect(core.state == .closed)
        #expect(core.beginOpeningIfWanted(now: 12))
        #expect(core.statistics.opens == 2)
        core.closed(with: nil, closing: true)
        #expect(!core.beginOpeningIfWanted(now: 13), "shut down: nothing opens, though a play is still queued")
        #expect(core.statistics.opens == 2)
    }

    /// A play placed, played and retired ends `.finished` once, told when it is heard; a failure
    /// afterwards ends nothing more.
    @Test func aPlayedVoiceFinishesOnceAndIsToldWhenItIsHeard() throws {
        let bench = Bench()
        let ends = Ends()
        let handle = bench.play(.buffer(Self.tone), from: 0, options: PlaybackOptions(), delivery: .immediate, completion: ends.completion)
        let heard = Lock<Double?>(nil)
        handle.whenHeard { time in heard.withLock { $0 = time } }
        var timeline = Timeline(sampleRate: 48_000, history: 0)
        var commands: [Timeline.Command] = []
        bench.core.requests.takeCommands(into: &commands)
        var asked = 0
        bench.core.place(commands, on: &timeline, at: 100, time: 5) {
            asked += 1
            return 5.25
        }
        #expect(asked == 1)
        #expect(heard.withLock { $0 } == 5.25)
        bench.core.retire(on: &timeline, playedUpTo: 100 + 479, at: 6)
        #expect(ends.wait(for: 0).isEmpty, "one frame short of the end: still playing")
        bench.core.retire(on: &timeline, playedUpTo: 100 + 480, at: 6)
        bench.core.closed(with: PlaybackError(.connectionLost))
        #expect(ends.wait(for: 1) == [.finished])
        #expect(!bench.core.requests.hasPendingWork)
    }

    /// A play stopped before the audio thread took it ends `.stopped` at once; a connection lost
    /// then ends every other play queued or playing `.failed`, and nothing ends twice.
    @Test func aLostConnectionFailsEveryPlayOnceAndAStoppedOneStaysStopped() throws {
        let bench = Bench()
        let ends = Ends()
        var timeline = Timeline(sampleRate: 48_000, history: 0)
        var commands: [Timeline.Command] = []
        bench.play(.buffer(Self.tone), from: 0, options: PlaybackOptions(), delivery: .immediate, completion: ends.completion)
        bench.core.requests.takeCommands(into: &commands)
        bench.core.place(commands, on: &timeline, at: 0, time: 1) { 1 }
        commands.removeAll()
        let stopped = bench.play(.buffer(Self.tone), from: 0, options: PlaybackOptions(), delivery: .immediate, completion: ends.completion)
        stopped.stop()
        bench.play(.buffer(Self.tone), from: 0, options: PlaybackOptions(), delivery: .immediate, completion: ends.completion)
        bench.core.requests.takeCommands(into: &commands)
        bench.core.place(commands, on: &timeline, at: 0, time: 1) { 1 }
        bench.core.closed(with: PlaybackError(.connectionLost))
        let seen = ends.wait(for: 3)
        #expect(seen.count == 3)
        #expect(seen.first == .stopped)
        #expect(seen.filter { $0 == .stopped }.count == 1)
        #expect(seen.filter { $0.error?.reason == .connectionLost }.count == 2)
        // The voices a backend still had when the connection went: retired now, they end nothing.
        bench.core.retire(on: &timeline, playedUpTo: 10_000, at: 2)
        #expect(timeline.isEmpty)
        #expect(ends.wait(for: 0).count == 3, "nothing ends twice")
    }

    /// Starts the audio thread took just before a failure ended their plays are let go, not
    /// placed; the sound is heard once for all the starts of one hand-off.
    @Test func startsOfPlaysAlreadyEndedAreLetGoAndTheOnsetIsAskedOnce() {
        let bench = Bench()
        let ends = Ends()
        var timeline = Timeline(sampleRate: 48_000, history: 0)
        var commands: [Timeline.Command] = []
        for _ in 0..<3 {
            bench.play(.buffer(Self.tone), from: 0, options: PlaybackOptions(), delivery: .immediate, completion: ends.completion)
        }
        bench.core.requests.takeCommands(into: &commands)
        var asked = 0
        bench.core.place(commands, on: &timeline, at: 0, time: 1) {
            asked += 1
            return 1
        }
        #expect(asked == 1 && timeline.voices.count == 3)
        commands.removeAll()
        bench.play(.buffer(Self.tone), from: 0, options: PlaybackOptions(), delivery: .immediate, completion: ends.completion)
        bench.core.requests.takeCommands(into: &commands)
        bench.core.closed(with: PlaybackError(.connectionLost))
        timeline.removeAll()
        bench.core.place(commands, on: &timeline, at: 0, time: 1) { 1 }
        #expect(timeline.isEmpty, "the failed play's start was let go")
        #expect(ends.wait(for: 4).count == 4)
    }

    /// `prepare` waits for the core to become ready; a device that closed before it was ready
    /// (its first write failed), or an output shut down, does not become ready.
    @Test func prepareReturnsOnceReadyAndOnlyAnOpeningBecomesReady() throws {
        let bench = Bench()
        let core = bench.core
        let returned = DispatchSemaphore(value: 0)
        let thrown = Lock<PlaybackError?>(nil)
        DispatchQueue.global().async {
            do throws(PlaybackError) {
                try core.requests.prepare(timeout: 5, timedOut: PlaybackError(.serverUnavailable), wake: {})
            } catch {
                thrown.withLock { $0 = error }
            }
            returned.signal()
        }
        while !core.requests.isWanted { usleep(1_000) }
        #expect(core.beginOpeningIfWanted(now: 1))
        #expect(core.becameReady(now: 2))
        #expect(returned.wait(timeout: .now() + 5) == .success)
        #expect(thrown.withLock { $0 } == nil)

        core.closed(with: nil)
        #expect(!core.becameReady(now: 3), "closed, not opening")
        #expect(core.state == .closed)
        #expect(core.statistics.readyTime == 2)
    }

    @Test func theStallClockStartsWithTheSoundAndMovesWithThePosition() {
        var watch = EngineWatch(idleTimeout: 10)
        watch.soundsBegan(at: 100)
        watch.observe(position: 0, at: 100)
        #expect(!watch.isStalled(at: 100 + EngineTimeouts.stall))
        #expect(watch.isStalled(at: 100.001 + EngineTimeouts.stall))
        watch.observe(position: 0, at: 101.5)
        #expect(watch.isStalled(at: 102.1), "a position reported again is not progress")
        watch.observe(position: 480, at: 101.5)
        #expect(!watch.isStalled(at: 103.4))
        watch.excuse(1)
        #expect(!watch.isStalled(at: 104.4), "time the thread did not run is not held against the device")
        watch.progressed(at: 104)
        #expect(!watch.isStalled(at: 105.9))
        watch.progressed(at: 90)
        #expect(!watch.isStalled(at: 105.9), "an older stamp moves nothing back")
        watch.soundsBegan(at: 200)
        #expect(!watch.isStalled(at: 201), "sounds beginning after a quiet spell start the clock again")
    }

    @Test func theIdleCloseComesAfterTheIdleTimeoutWithoutSound() {
        var watch = EngineWatch(idleTimeout: 10)
        #expect(watch.idleTimeLeft(idle: false, at: 0) == nil)
        #expect(watch.idleTimeLeft(idle: true, at: 1) == 10)
        #expect(watch.idleTimeLeft(idle: true, at: 7) == 4)
        #expect(watch.idleTimeLeft(idle: false, at: 8) == nil, "a sound restarts the idle time")
        #expect(watch.idleTimeLeft(idle: true, at: 9) == 10)
        #expect(watch.idleTimeLeft(idle: true, at: 18.5) == 0.5)
        #expect(watch.idleTimeLeft(idle: true, at: 19) == 0)
        watch.reset()
        #expect(watch.idleTimeLeft(idle: true, at: 30) == 10, "a new device starts its own idle time")
    }
}
