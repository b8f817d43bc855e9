import Dispatch
import FeedbackTestSupport
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// Collects every end a play reports, to prove there is exactly one.
final class EndRecorder: Sendable {
    private let ends = Lock<[(PlaybackEnd, Double)]>([])
    private let semaphore = DispatchSemaphore(value: 0)

    var completion: @Sendable (PlaybackEnd) -> Void {
        { [self] end in
            ends.withLock { $0.append((end, MonotonicClock.now)) }
            semaphore.signal()
        }
    }

    /// Waits for the first end; nil on time-out.
    func wait(timeout: Double = 5) -> (end: PlaybackEnd, time: Double)? {
        guard semaphore.wait(timeout: .now() + timeout) == .success else { return nil }
        return ends.withLock { $0.first }
    }

    var all: [PlaybackEnd] { ends.withLock { $0.map(\.0) } }
}

extension AudioServerSuites {
    /// The engine against a real PulseAudio server: what the server's monitor recorded is compared
    /// with what was played.
    @Suite(
        .serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"),
        .shutsDownSoundServers(named: EngineRoute.serverNames("engine")))
    struct EngineTests {
        let rate = 48_000

        /// This suite's server for `route` and an engine connected to it.
        func rig(_ route: EngineRoute) throws -> (server: any SoundTestServer, output: any EngineOutput) {
            let server = try route.server(named: "engine")
            let output = route.output(on: server)
            try output.prepare(timeout: 2)
            return (server, output)
        }

        func mono(_ samples: [Float]) -> PCMBuffer { Signal.buffer(samples, channels: 1, rate: rate) }

        /// `body` measured again while `output` under-ran during it and, on the PipeWire routes,
        /// while `acceptable` rejects its result: PipeWire's timer-driven graph can drop a cycle
        /// under load with no underflow of ours (`measuredAgainAfterUnderflows`).
        func measured<Result>(
            _ output: any EngineOutput, on route: EngineRoute, acceptable: @escaping (Result) -> Bool,
            _ body: () throws -> Result
        ) throws -> Result {
            try measuredAgainAfterUnderflows(on: route.server, underflows: { output.statistics.underflows }, acceptable: acceptable, body)
        }

        /// A 40 ms 1 kHz tone at half scale: short, and easy to find in a recording.
        var loudBeep: PCMBuffer { mono(Signal.sines([1_000], amplitude: 0.5, seconds: 0.04, rate: rate)) }

        /// A sound that is not periodic, so correlation can only peak at the right alignment.
        func chirp(seconds: Double, amplitude: Float = 0.4) -> PCMBuffer {
            let frames = Int(seconds * Double(rate))
            return mono((0..<frames).map { frame in
                let t = Double(frame) / Double(rate)
                let envelope = min(1, t * 50, (seconds - t) * 50)
                return amplitude * Float(envelope * sin(2 * .pi * (300 * t + 1_200 * t * t)))
            })
        }

        /// Plays and waits for the end; returns it, the recording from just before the play, and the
        /// frame at which sound first appeared in it.
        func playAndRecord(
            _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(),
            on rig: (server: any SoundTestServer, output: any EngineOutput)
        ) throws -> (end: PlaybackEnd, left: [Float], right: [Float], onset: Int) {
            let (server, output) = rig
            let mark = server.recorder.frameCount
            let ends = EndRecorder()
            output.play(buffer, options: options, completion: ends.completion)
            let end = try #require(ends.wait()?.end)
            server.recorder.wait(seconds: 0.05)
            let onset = try #require(server.recorder.firstSound(after: mark, timeout: 1), "nothing reached the server")
            #expect(ends.all.count == 1)
            return (end, server.recorder.channel(0, from: onset), server.recorder.channel(1, from: onset), onset)
        }

        @Test(arguments: EngineRoute.testable)
        func capturedAudioCorrelatesWithWhatWasPlayed(_ route: EngineRoute) throws {
            let (server, output) = try rig(route)
            let sound = chirp(seconds: 0.4)
            let matches = { (left: [Float], right: [Float]) in
                [left, right].map { Analysis.bestCorrelation(sound.samples, $0, lags: -100...100) }
            }
            let result = try measured(output, on: route, acceptable: { matches($0.left, $0.right).allSatisfy { $0.value >= 0.99 } }) {
                try playAndRecord(sound, on: (server, output))
            }
            #expect(result.end == .finished)
            for match in matches(result.left, result.right) {
                #expect(match.value >= 0.99, "correlation \(match.value) at lag \(match.lag), underflows \(output.statistics.underflows)")
            }
        }

        /// A streamed file (decoded ahead by a feeder, read from a ring by the mixer) plays as the
        /// same sound in memory would, from the offset asked for.
        @Test(arguments: EngineRoute.testable)
        func aStreamedFilePlaysFromItsOffset(_ route: EngineRoute) throws {
            let (server, output) = try rig(route)
            let sound = chirp(seconds: 0.6)
            let directory = TemporaryDirectory()
            let path = directory.file("chirp.wav")
            try SoundFileWriter.write(sound, to: path, format: .wavFloat)
            let tail = Array(sound.samples[9_600...])
            let match = { (recorded: [Float]) in Analysis.bestCorrelation(tail, recorded, lags: -100...100) }
            let (end, recorded) = try measured(output, on: route, acceptable: { match($0.1).value >= 0.99 }) {
                let mark = server.recorder.frameCount
                let ends = EndRecorder()
                output.play(.streamed(fileAt: path), from: 0.2, options: PlaybackOptions(), queue: .global(), completion: ends.completion)
                let end = ends.wait()?.end
                server.recorder.wait(seconds: 0.05)
                let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
                return (end, server.recorder.channel(0, from: onset))
            }
            #expect(end == .finished)
            let best = match(recorded)
            #expect(best.value >= 0.99, "correlation \(best.value) at lag \(best.lag), underflows \(output.statistics.underflows)")
        }

        /// What only the server shows of pan: the stream's two channels reach its left and its
        /// right, in that order. The pan law (the cosine balance, the levels) and the sum of
        /// overlapping sounds are the mixer's, a pure function checked exactly offline
        /// (`MixerTests.panIsABalanceWithCosineLaw`, `MixerTests.voicesSum`); concurrent plays'
        /// ends are `sixtyFourConcurrentPlaysCompleteExactlyOnce`'s. A gap in the recording (an
        /// underflow) cannot move sound from one channel to the other, so nothing is measured again.
        @Test(arguments: EngineRoute.testable, [Float(-1), 1])
        func aSoundPannedToOneSideIsHeardOnlyOnThatSide(_ route: EngineRoute, pan: Float) throws {
            let (server, output) = try rig(route)
            let tone = mono(Signal.sines([800], amplitude: 0.4, seconds: 0.3, rate: rate))
            let result = try playAndRecord(tone, options: PlaybackOptions(pan: pan), on: (server, output))
            let window = 0..<min(12_000, result.left.count, result.right.count)
            let (heard, silent) = pan < 0 ? (result.left, result.right) : (result.right, result.left)
            let (heardLevel, silentLevel) = (Analysis.rms(Array(heard[window])), Analysis.rms(Array(silent[window])))
            #expect(result.end == .finished)
            #expect(window.count >= 4_800, "\(window.count) frames recorded after the onset")
            #expect(heardLevel > 0.1, "pan \(pan): the side it was panned to is at \(heardLevel)")
            #expect(silentLevel < 0.001, "pan \(pan): the other side is at \(silentLevel) (the loud one \(heardLevel))")
        }

        @Test(arguments: EngineRoute.testable)
        func fadeOutEndsInSilence(_ route: EngineRoute) throws {
            let (server, output) = try rig(route)
            let tone = mono(Signal.sines([600], amplitude: 0.4, seconds: 0.25, rate: rate))
            // Whether the recording is silent after its last loud frame, and its levels over the
            // 0.3 s before that frame in 50 ms windows; nil when less than that was recorded (a
            // recorder lagging under load: a failure, not an index trap that ends the whole run).
            let fade = { (left: [Float]) -> (silentAfter: Bool, levels: [Double])? in
                let loud = left.lastIndex { abs($0) > 0.001 } ?? 0
                guard loud >= 14_400 else { return nil }
                let window = 2_400
                let levels = stride(from: loud - 14_400, to: loud - window, by: window).map {
                    Analysis.rms(Array(left[$0..<($0 + window)]))
                }
                return (left[(loud + 1)...].allSatisfy { abs($0) <= 0.001 }, levels)
            }
            let falling = { (levels: [Double]) in zip(levels, levels.dropFirst()).allSatisfy { $0 > $1 } }
            let (end, left) = try measured(output, on: route, acceptable: { fade($0.1).map { $0.silentAfter && falling($0.levels) } == true }) {
                let mark = server.recorder.frameCount
                let ends = EndRecorder()
                let handle = output.play(tone, options: PlaybackOptions(playCount: PlaybackOptions.forever), completion: ends.completion)
                usleep(300_000)
                handle.fadeOut(duration: 0.3)
                let end = ends.wait()?.end
                server.recorder.wait(seconds: 0.3)
                let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
                return (end, server.recorder.channel(0, from: onset))
            }
            #expect(end == .stopped)
            let measuredFade = try #require(fade(left), "\(left.count) frames recorded after the onset")
            #expect(measuredFade.silentAfter, "silence after the fade")
            // The fade took about 0.3 s: levels fall through the last 0.3 s before silence.
            #expect(falling(measuredFade.levels), "\(measuredFade.levels)")
        }

        @Test(arguments: EngineRoute.testable)
        func stopCutsWithinOneBuffer(_ route: EngineRoute) throws {
            let (server, output) = try rig(route)
            let tone = mono(Signal.sines([700], amplitude: 0.4, seconds: 2, rate: rate))
            let mark = server.recorder.frameCount
            let ends = EndRecorder()
            let handle = output.play(tone, completion: ends.completion)
            usleep(300_000)
            let stopped = MonotonicClock.now
            handle.stop()
            #expect(ends.wait()?.end == .stopped)
            server.recorder.wait(seconds: 0.2)
            let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
            let left = server.recorder.channel(0, from: onset)
            let last = try #require(left.lastIndex { abs($0) > 0.001 })
            let silentAt = try #require(server.recorder.arrivalTime(ofFrame: onset + last))
            let lag = silentAt - stopped
            #expect(lag < output.queueDuration, "sound went on for \(lag * 1000) ms after stop")
            handle.stop()
            #expect(ends.all == [.stopped], "a second stop reports nothing more")
        }

        @Test(arguments: EngineRoute.testable)
        func finishedMeansTheLastSampleWasPlayed(_ route: EngineRoute) throws {
            let (server, output) = try rig(route)
            let sound = mono(Signal.sines([900], amplitude: 0.4, seconds: 0.2, rate: rate))
            let mark = server.recorder.frameCount
            let ends = EndRecorder()
            output.play(sound, completion: ends.completion)
            let (end, time) = try #require(ends.wait())
            #expect(end == .finished)
            server.recorder.wait(seconds: 0.1)
            let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
            let left = server.recorder.channel(0, from: onset)
            let last = try #require(left.lastIndex { abs($0) > 0.001 })
            let lastHeard = try #require(server.recorder.arrivalTime(ofFrame: onset + last))
            // Finished is reported after the last sample reached the server (the recorder's
            // jitter on the route allowed), and promptly.
            #expect(time >= lastHeard - route.monitorJitter, "reported \((lastHeard - time) * 1000) ms early")
            #expect(time <= lastHeard + 0.05, "reported \((time - lastHeard) * 1000) ms late")
        }

        @Test(arguments: EngineRoute.testable)
        func sixtyFourConcurrentPlaysCompleteExactlyOnce(_ route: EngineRoute) throws {
            let (_, output) = try rig(route)
            let beep = mono(Signal.sines([1_000], amplitude: 0.01, seconds: 0.05, rate: rate))
            let recorders = (0..<64).map { _ in EndRecorder() }
            let handles = Lock<[PlaybackHandle]>([])
            onThreads(8) { thread in
                for index in stride(from: thread, to: 64, by: 8) {
                    let handle = output.play(beep, completion: recorders[index].completion)
                    handles.withLock { $0.append(handle) }
                    if index % 4 == 0 { handle.stop() }
                    if index % 8 == 0 { handle.stop() }
                }
            }
            for (index, recorder) in recorders.enumerated() {
                #expect(recorder.wait() != nil, "play \(index) never ended")
            }
            usleep(200_000)
            for (index, recorder) in recorders.enumerated() {
                #expect(recorder.all == [index % 4 == 0 ? .stopped : .finished], "play \(index): \(recorder.all)")
            }
            for handle in handles.withLock({ $0 }) { handle.stop() }
            usleep(50_000)
            #expect(recorders.allSatisfy { $0.all.count == 1 })
        }

        @Test(arguments: EngineRoute.testable)
        func disposingWhilePlayingLetsTheSoundFinish(_ route: EngineRoute) throws {
            let (server, output) = try rig(route)
            let sound = chirp(seconds: 0.3)
            let match = { (recorded: [Float]) in Analysis.bestCorrelation(sound.samples, recorded, lags: -100...100) }
            let (ends, recorded) = try measured(output, on: route, acceptable: { match($0.1).value >= 0.99 }) {
                let registry = SoundRegistry()
                let id = try registry.register(samples: sound.samples, sampleRate: rate, channelCount: 1)
                let buffer = try #require(registry.sound(id)?.buffer)
                let mark = server.recorder.frameCount
                let ends = EndRecorder()
                output.play(buffer, completion: ends.completion)
                try registry.dispose(id)
                _ = ends.wait()
                let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
                return (ends, server.recorder.channel(0, from: onset))
            }
            #expect(ends.all == [.finished])
            let best = match(recorded)
            #expect(best.value >= 0.99, "correlation \(best.value), underflows \(output.statistics.underflows)")
        }

        @Test(arguments: EngineRoute.testable)
        func cancellingTheAwaitingTaskStopsTheSound(_ route: EngineRoute) async throws {
            let (_, output) = try rig(route)
            let tone = mono(Signal.sines([500], amplitude: 0.2, seconds: 2, rate: rate))
            let started = MonotonicClock.now
            let task = Task { await output.play(tone) }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            let cancelled = MonotonicClock.now - started
            let end = await task.value
            // What came instead, and when, says which way it went wrong (a ThreadSanitizer CI run
            // once failed here without saying).
            #expect(
                end == .cancelled,
                "came \(end) \(MonotonicClock.now - started) s after the play; cancelled at \(cancelled) s; underflows \(output.statistics.underflows), finishes held \(output.statistics.heldFinishes)")
        }

        @Test(arguments: EngineRoute.testable)
        func aSoundAtAnotherRateFailsClearly(_ route: EngineRoute) throws {
            let (_, output) = try rig(route)
            let ends = EndRecorder()
            output.play(Signal.buffer([0.1, 0.2], channels: 1, rate: 44_100), completion: ends.completion)
            guard case .failed(let error) = ends.wait()?.end else {
                Issue.record("expected .failed")
                return
            }
            #expect(error.reason == .unsupportedSound)
        }

        /// PipeWireOutput's process callback runs on a real-time thread where the system allows it:
        /// as root (and so in CI, which runs as root) `SCHED_FIFO` or `SCHED_RR`; and what
        /// `streamThreadScheduling()` (`feedbackctl devices`) finds without a stream is what the
        /// callback's thread had.
        @Test(.enabled(if: EngineRoute.testable.contains(.pipeWire), "pipewire is not installed (scripts/setup)"))
        func thePipeWireStreamThreadIsRealTimeWhereTheSystemAllowsIt() throws {
            let (_, output) = try rig(.pipeWire)
            let pipeWire = try #require(output as? PipeWireOutput)
            let ends = EndRecorder()
            output.play(mono(Signal.sines([700], amplitude: 0.1, seconds: 0.05, rate: rate)), completion: ends.completion)
            #expect(ends.wait()?.end == .finished)
            let thread = try #require(pipeWire.statistics.streamThread, "the process callback never ran")
            #expect(PipeWireOutput.streamThreadScheduling() == thread)
            if geteuid() == 0 || runningInCI {
                #expect(thread.isRealTime, "the stream's thread is \(thread)")
            }
        }

        @Test(arguments: EngineRoute.testable)
        func closesWhenIdleAndReopensOnTheNextPlay(_ route: EngineRoute) throws {
            let server = try route.server(named: "engine")
            let idle = route.output(on: server, idleTimeout: 0.2)
            let beep = mono(Signal.sines([1_000], amplitude: 0.05, seconds: 0.05, rate: rate))
            let first = EndRecorder()
            idle.play(beep, completion: first.completion)
            #expect(first.wait()?.end == .finished)
            usleep(500_000)
            let second = EndRecorder()
            idle.play(beep, completion: second.completion)
            #expect(second.wait()?.end == .finished)
            #expect(idle.statistics.opens == 2)
            #expect(first.all.count == 1)
        }

        /// A stream opened by `prepare()` that never plays closes when idle too (it stayed open for
        /// good on PulseAudio: nothing started its idle tick).
        @Test(arguments: EngineRoute.testable)
        func aPreparedStreamThatNeverPlaysClosesWhenIdle(_ route: EngineRoute) throws {
            let server = try route.server(named: "engine")
            let idle = route.output(on: server, idleTimeout: 0.2)
            try idle.prepare(timeout: 2)
            #expect(idle.statistics.opens == 1)
            usleep(600_000)
            // Closed by now: preparing again connects again.
            try idle.prepare(timeout: 2)
            #expect(idle.statistics.opens == 2)
        }

        /// A stream opened with nothing to play waits unstarted: its first sound starts it, written
        /// in order from its first frame rather than rewritten over a queue of silence the server
        /// was already playing.
        @Test(arguments: EngineRoute.testable.filter { $0 != .pipeWire })
        func aPreparedStreamStartsWithItsFirstSound(_ route: EngineRoute) throws {
            let server = try route.server(named: "engine")
            let output = PulseAudioOutput(configuration: .init(server: server.server))
            try output.prepare(timeout: 2)
            usleep(200_000)
            let mark = server.recorder.frameCount
            let ends = EndRecorder()
            output.play(loudBeep, completion: ends.completion)
            #expect(ends.wait()?.end == .finished)
            #expect(server.recorder.firstSound(after: mark, threshold: 0.05, timeout: 1) != nil)
            #expect(output.statistics.rewrites == 0)
            #expect(output.statistics.underflows == 0)
        }

        /// A stream started by its first sound after being held half a second takes the next sound
        /// as any playing stream does: rewritten at the read position, heard at once, not behind
        /// the 50 ms queue.
        @Test(arguments: EngineRoute.testable.filter { $0 != .pipeWire })
        func theSecondSoundAfterAHeldStartIsHeardAtOnce(_ route: EngineRoute) throws {
            let server = try route.server(named: "engine")
            var onsets: [Double] = []
            for _ in 0..<4 {
                let output = PulseAudioOutput(configuration: .init(server: server.server))
                try output.prepare(timeout: 2)
                // Held long enough for libpulse's automatic timing reports to arrive.
                usleep(500_000)
                // The first sound starts the stream: a quiet tone long enough to be playing still.
                output.play(mono(Signal.sines([300], amplitude: 0.02, seconds: 0.2, rate: rate)))
                usleep(20_000)
                let mark = server.recorder.frameCount
                let start = MonotonicClock.now
                output.play(loudBeep)
                let frame = try #require(server.recorder.firstSound(after: mark, threshold: 0.1, timeout: 2))
                onsets.append(try #require(server.recorder.arrivalTime(ofFrame: frame)) - start)
            }
            // Behind the queue would be 50 ms or more, every time. The median is held to the route's
            // figure; three onsets of four to below the queue, because a busy 2-core machine (the
            // daemon suite's flood tests run beside this one) once delayed one of four by 22 ms
            // (PulseAudio) and once one to 71 ms (pipewire-pulse: 71, 23, 25, 27).
            let limit = route == .pulseAudio ? 0.02 : 0.035
            let sorted = onsets.sorted()
            let median = (sorted[1] + sorted[2]) / 2
            #expect(median < limit && sorted[2] < limit + 0.025, "onsets: \(onsets.map { ($0 * 1000).rounded() })")
        }

        /// The first sound on a stream just coming to be is heard at once, not a queue's length
        /// (50 ms) later behind silence queued before the server reported where it reads. Each way
        /// a stream comes to be: a play right after it became ready (held, so that play starts
        /// it), the play that opens it, and the first play after the idle close.
        @Test(arguments: EngineRoute.testable)
        func theFirstSoundOnANewStreamIsNotQueuedBehindSilence(_ route: EngineRoute) throws {
            let server = try route.server(named: "engine")
            func onset(_ output: any EngineOutput) throws -> Double {
                let mark = server.recorder.frameCount
                let start = MonotonicClock.now
                output.play(loudBeep)
                let frame = try #require(server.recorder.firstSound(after: mark, threshold: 0.05, timeout: 2))
                let arrival = try #require(server.recorder.arrivalTime(ofFrame: frame))
                return arrival - max(start, output.statistics.readyTime ?? start)
            }
            var onsets: [Double] = []
            for _ in 0..<8 {
                server.recorder.wait(seconds: 0.1)
                let ready = route.output(on: server)
                try ready.prepare(timeout: 2)
                onsets.append(try onset(ready))
                server.recorder.wait(seconds: 0.1)
                onsets.append(try onset(route.output(on: server)))
            }
            let idle = route.output(on: server, idleTimeout: 0.05)
            for _ in 0..<4 {
                usleep(200_000)
                onsets.append(try onset(idle))
            }
            #expect(idle.statistics.opens == 4)
            // The queue is 50 ms; 20 ms leaves room for a loaded machine and none for that mode.
            // pipewire-pulse does not honour rewrites, so there the engine writes a 20 ms queue in
            // order and a sound waits behind up to that much, plus the graph's quantum.
            // PipeWireOutput: within a graph cycle (`pipeWireQuantum`) and a little.
            let cycle = Double(EngineRoute.pipeWireQuantum) / 48_000
            let limit = route == .pulseAudio ? 0.02 : route == .pipeWire ? 0.01 + cycle : 0.035
            // The mode this guards against delays every new stream by the 50 ms queue; one late
            // onset of twenty, short of that, is the loaded machine (a CI run: 38 ms once on
            // pipewire-pulse, the other nineteen 1-15 ms).
            let late = onsets.filter { $0 >= limit }
            #expect(late.count <= 1 && late.allSatisfy { $0 < 0.05 }, "onsets: \(onsets.map { ($0 * 1000).rounded() })")
        }

        @Test func anUnreachableServerFailsEveryPlayOnce() {
            let nowhere = PulseAudioOutput(configuration: .init(server: "unix:/nonexistent/socket"))
            #expect(throws: PlaybackError.self) { try nowhere.prepare(timeout: 2) }
            let ends = EndRecorder()
            nowhere.play(mono([0.1, 0.2]), completion: ends.completion)
            guard case .failed(let error) = ends.wait()?.end else {
                Issue.record("expected .failed")
                return
            }
            #expect(error.reason == .serverUnavailable)
            usleep(100_000)
            #expect(ends.all.count == 1)
        }

        /// Last in the suite: it kills the shared server and starts it again.
        @Test(arguments: EngineRoute.testable)
        func serverKilledMidPlayFailsOnceAndTheEngineRecovers(_ route: EngineRoute) throws {
            let (server, output) = try rig(route)
            // Ten seconds, so that the kill comes mid-play whatever the wait for the tone takes:
            // with three, a ThreadSanitizer CI run killed the server "once heard" and the tone came
            // `.finished` (the recorder, slowed by TSan, can hear late; the times below say how late).
            let tone = mono(Signal.sines([440], amplitude: 0.2, seconds: 10, rate: rate))
            let ends = EndRecorder()
            let mark = server.recorder.frameCount
            let played = MonotonicClock.now
            output.play(tone, completion: ends.completion)
            // Killed once the tone is heard, or after 5 s at most: mid-play either way. (A fixed 0.3 s
            // after the play, in another ThreadSanitizer CI run through pipewire-pulse, no `.failed`
            // came within 3 s; and under ThreadSanitizer this process's recorder can hear more than
            // 5 s late: a CI run did not hear the tone within 5 s, and the kill then failed it.)
            _ = server.recorder.firstSound(after: mark, timeout: 5)
            let killed = MonotonicClock.now
            server.kill()
            let end = ends.wait(timeout: 3)
            guard case .failed(let error) = end?.end else {
                let came: String = end.map { "\($0.end), \($0.time - played) s after the play" } ?? "nothing"
                Issue.record("expected .failed within 3 s of the kill, \(killed - played) s after the play; came: \(came)")
                return
            }
            #expect(error.reason == .connectionLost)
            try server.restart()
            let sound = chirp(seconds: 0.3)
            #if FEEDBACKSERVICES_TSAN
                // Under ThreadSanitizer (scripts/tsan) the engine's thread runs several times slower
                // and under-runs, so the recovered play is checked by its end and by the server
                // hearing it, not by its fidelity (a CI run there: correlation 0.098, 1 underflow).
                // The fidelity is checked by the same test without TSan, in the same CI run.
                let result = try playAndRecord(sound, on: (server, output))
                #expect(result.end == .finished)
                #expect(result.left.contains { abs($0) > 0.05 }, "the recovered engine played nothing")
            #else
                let match = { (left: [Float]) in Analysis.bestCorrelation(sound.samples, left, lags: -100...100) }
                let result = try measured(output, on: route, acceptable: { match($0.left).value >= 0.99 }) {
                    try playAndRecord(sound, on: (server, output))
                }
                #expect(result.end == .finished)
                let best = match(result.left)
                #expect(best.value >= 0.99, "correlation \(best.value), underflows \(output.statistics.underflows)")
            #endif
            #expect(ends.all.count == 1)
        }
    }
}
