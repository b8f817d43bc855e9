import Dispatch
import Synchronization
import Testing

@testable import FeedbackServices

/// The timeline every output plays, without a server: a pure function of the commands (and the
/// frames they were applied at) to rendered frames and ends.
@Suite struct TimelineTests {
    let rate = 48_000
    /// The stop ramp in frames (2.5 ms).
    var stopFrames: Int64 { Int64(Timeline.stopRamp * Double(rate)) }

    func timeline(history: Int64? = nil) -> Timeline {
        Timeline(sampleRate: rate, history: history)
    }

    /// A constant level, so that gains can be read straight off the render.
    func level(_ value: Float, frames: Int = 48_000) -> VoiceSamples {
        .buffer(Signal.buffer([Float](repeating: value, count: frames), channels: 1, rate: rate))
    }

    func start(
        _ id: UInt64, _ samples: VoiceSamples, volume: Float = 1, pan: Float = 0, playCount: Int = 1,
        fadeIn: Double = 0, curve: Envelope.Curve = .linear, replacing: UInt64? = nil
    ) -> Timeline.Command {
        var options = PlaybackOptions(volume: volume, pan: pan, playCount: playCount, fadeIn: fadeIn)
        options.fadeCurve = curve
        options.replacing = replacing
        return .start(id: id, samples: samples, offset: 0, options: options)
    }

    /// Renders `frames` frames from `first` in blocks of `block`, as an output would.
    func render(_ timeline: Timeline, from first: Int64 = 0, frames: Int, block: Int = 1_000) -> [Float] {
        var output = [Float](repeating: .nan, count: frames * 2)
        output.withUnsafeMutableBufferPointer { out in
            var frame = 0
            while frame < frames {
                let count = min(block, frames - frame)
                timeline.render(from: first + Int64(frame), frames: count, into: out.baseAddress! + frame * 2)
                frame += count
            }
        }
        return output
    }

    func left(_ samples: [Float]) -> [Float] { Signal.channel(0, of: samples, channels: 2) }
    func right(_ samples: [Float]) -> [Float] { Signal.channel(1, of: samples, channels: 2) }

    @Test func aFadeInRisesFromSilenceFromTheStartFrame() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5), volume: 0.8, fadeIn: 0.01), at: 100)
        let heard = left(render(timeline, frames: 1_000))
        #expect(heard[0..<100].allSatisfy { $0 == 0 })
        #expect(heard[100] == 0)
        #expect(abs(heard[340] - 0.2) < 1e-5, "half-way up a 480-frame ramp to 0.4")
        #expect(heard[580...].allSatisfy { abs($0 - 0.4) < 1e-6 })
    }

    @Test func aReplacingStartCrossfadesOnTheSameFrames() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5), pan: -1, playCount: PlaybackOptions.forever), at: 0)
        timeline.apply(start(2, level(0.5), pan: 1, fadeIn: 0.01, replacing: 1), at: 1_000)
        let mix = render(timeline, frames: 2_000)
        let (outgoing, incoming) = (left(mix), right(mix))
        #expect(outgoing[999] == 0.5 && incoming[999] == 0, "nothing changes before the start frame")
        for step in [0, 1, 120, 240, 479] {
            let t = Float(step) / 480
            #expect(abs(outgoing[1_000 + step] - 0.5 * (1 - t)) < 1e-5, "outgoing at +\(step)")
            #expect(abs(incoming[1_000 + step] - 0.5 * t) < 1e-5, "incoming at +\(step)")
        }
        #expect(outgoing[1_480...].allSatisfy { $0 == 0 })
        #expect(incoming[1_480...].allSatisfy { $0 == 0.5 })
        var retiring = timeline
        #expect(retiring.retire(playedUpTo: 1_480).map(\.id) == [1])
        #expect(timeline.retire(playedUpTo: 1_480).map(\.end) == [.stopped], "the replaced voice was stopped")
    }

    @Test func anEqualPowerCrossfadeKeepsThePower() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5), pan: -1, playCount: PlaybackOptions.forever), at: 0)
        timeline.apply(start(2, level(0.5), pan: 1, fadeIn: 0.1, curve: .equalPower, replacing: 1), at: 1_000)
        let mix = render(timeline, frames: 6_000)
        for frame in stride(from: 1_000, to: 5_800, by: 97) {
            let power = (mix[2 * frame] * mix[2 * frame] + mix[2 * frame + 1] * mix[2 * frame + 1]) / 0.25
            #expect(abs(power - 1) < 0.005, "power \(power) at \(frame)")
        }
    }

    @Test func aStopRampsToSilenceThenEndsStopped() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5), playCount: PlaybackOptions.forever), at: 0)
        timeline.apply(.stop(id: 1), at: 1_000)
        let heard = left(render(timeline, frames: 2_000))
        #expect(heard[999] == 0.5)
        #expect(zip(heard[1_000..<1_120], heard[1_001..<1_121]).allSatisfy { $0 > $1 }, "a ramp, not a cut")
        #expect(heard[Int(1_000 + stopFrames)...].allSatisfy { $0 == 0 })
        #expect(timeline.retire(playedUpTo: 1_000 + stopFrames - 1).isEmpty, "not before its ramp has played")
        #expect(timeline.retire(playedUpTo: 1_000 + stopFrames).map(\.end) == [.stopped])
        #expect(timeline.isEmpty)
    }

    @Test func aFadeOutEndsStoppedWhereItReachesSilence() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5), playCount: PlaybackOptions.forever), at: 0)
        timeline.apply(.fadeOut(id: 1, duration: 0.01, curve: .linear), at: 1_000)
        let heard = left(render(timeline, frames: 2_000))
        #expect(abs(heard[1_240] - 0.25) < 1e-5)
        #expect(heard[1_480...].allSatisfy { $0 == 0 })
        #expect(timeline.voices.first?.end == 1_480)
        #expect(timeline.retire(playedUpTo: 1_480).map(\.end) == [.stopped])
    }

    @Test func aSoundThatPlaysToItsEndFinishes() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5, frames: 300), playCount: 2), at: 50)
        #expect(timeline.retire(playedUpTo: 649).isEmpty)
        #expect(timeline.retire(playedUpTo: 650).map(\.end) == [.finished])
    }

    /// A position that runs ahead of real time (here: the whole 2 s sound "played" 0.2 s after it
    /// started, as a server catching up on cycles it missed reports it) does not finish a sound
    /// still playing: a live output's timeline holds the voice until its length has passed since
    /// its start, and counts the hold. Without the hold this reported `.finished` at 0.2 s. The
    /// timeline's history (how far back a rewrite may render again) does not shorten the hold.
    /// The slack grows with the length, for a device whose clock runs fast: 61 ms for 5 minutes.
    @Test func aPositionAheadOfTheClockDoesNotFinishASoundStillPlaying() {
        var timeline = timeline(history: 2_400)
        timeline.apply(start(7, level(0.5, frames: 96_000)), at: 1_000, time: 100)
        #expect(timeline.retire(playedUpTo: 200_000, time: 100.2).isEmpty)
        #expect(timeline.heldFinishes == 1)
        // 2 s less the slack of 1 ms and 0.2 ms a second: 101.9986 s.
        #expect(timeline.retire(playedUpTo: 200_000, time: 101.9985).isEmpty)
        #expect(timeline.retire(playedUpTo: 200_000, time: 101.9987).map(\.end) == [.finished])
        #expect(timeline.heldFinishes == 2)
        #expect(timeline.isEmpty)
    }

    /// The hold is for `.finished` only: a stopped voice ends once its ramp has played, however
    /// soon after its start; and where no time is known (an offline render) nothing is held.
    @Test func stopsAndOfflineRendersAreNotHeld() {
        var live = timeline(history: 0)
        live.apply(start(1, level(0.5, frames: 96_000)), at: 0, time: 10)
        live.apply(.stop(id: 1), at: 4_800, time: 10.1)
        #expect(live.retire(playedUpTo: 4_800 + stopFrames, time: 10.11).map(\.end) == [.stopped])
        var offline = timeline()
        offline.apply(start(2, level(0.5, frames: 96_000)), at: 0)
        #expect(offline.retire(playedUpTo: 96_000, time: 0).map(\.end) == [.finished])
        live.apply(start(3, level(0.5, frames: 96_000)), at: 0, time: 10)
        #expect(live.retire(playedUpTo: 96_000).map(\.end) == [.finished], "no time given: nothing held")
        #expect(live.heldFinishes == 0 && offline.heldFinishes == 0)
    }

    /// The case the engine and the file output once handled differently: a stop or fade-out of a
    /// voice that is gone changes nothing, and the voice ends as it would have.
    @Test func aStopOfAVoiceThatIsGoneDoesNothing() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5, frames: 100)), at: 0)
        timeline.apply(start(2, level(0.25), playCount: PlaybackOptions.forever), at: 0)
        let before = render(timeline, frames: 2_000)
        timeline.apply(.stop(id: 99), at: 500)
        timeline.apply(.fadeOut(id: 99, duration: 1, curve: .linear), at: 500)
        timeline.apply(start(3, level(0.1), replacing: 98), at: 2_000)
        // Voice 1 ended at frame 100 and is not retired yet: it is gone all the same.
        timeline.apply(.fadeOut(id: 1, duration: 1, curve: .linear), at: 500)
        timeline.apply(.stop(id: 1), at: 500)
        #expect(Analysis.maximumDifference(render(timeline, frames: 2_000), before) == 0)
        #expect(timeline.retire(playedUpTo: 2_000).map(\.end) == [.finished], "voice 1 finished; it was never stopped")
        #expect(timeline.removeAll() == [2, 3])
    }

    @Test func aVolumeChangeOnAStoppingVoiceKeepsTheFade() {
        var fading = timeline()
        fading.apply(start(1, level(0.5), playCount: PlaybackOptions.forever), at: 0)
        fading.apply(.fadeOut(id: 1, duration: 0.01, curve: .linear), at: 1_000)
        var changed = fading
        changed.apply(.volume(id: 1, 1, ramp: 0.001, curve: .linear), at: 1_100)
        changed.apply(.pan(id: 1, 1, ramp: 0), at: 1_200)
        let heard = render(changed, frames: 2_000)
        let unchanged = render(fading, frames: 2_000)
        #expect(Array(left(heard)[0..<1_200]) == Array(left(unchanged)[0..<1_200]))
        #expect(Analysis.maximumDifference(right(heard), right(unchanged)) < 1e-6, "the fade goes on; only the pan moved")
        #expect(changed.voices.first?.end == 1_480)
    }

    @Test func aSecondStopTakesOverOnlyIfItEndsTheVoiceSooner() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5), playCount: PlaybackOptions.forever), at: 0)
        timeline.apply(.fadeOut(id: 1, duration: 0.01, curve: .linear), at: 1_000)
        let fading = render(timeline, frames: 2_000)
        // Ending later would cut the first fade off half-way down.
        timeline.apply(.fadeOut(id: 1, duration: 1, curve: .linear), at: 1_100)
        #expect(Analysis.maximumDifference(render(timeline, frames: 2_000), fading) == 0)
        // A stop ends it sooner: a short ramp from wherever the fade has got to.
        timeline.apply(.stop(id: 1), at: 1_240)
        #expect(timeline.voices.first?.end == 1_240 + stopFrames)
        let heard = left(render(timeline, frames: 2_000))
        #expect(abs(heard[1_240] - 0.25) < 1e-5)
        #expect(heard[Int(1_240 + stopFrames)...].allSatisfy { $0 == 0 })
        #expect(timeline.retire(playedUpTo: 2_000).map(\.end) == [.stopped])
    }

    @Test func aVoiceLoopsForeverUntilItIsTakenOut() {
        var timeline = timeline()
        let ramp: [Float] = [0.1, 0.2, 0.3]
        timeline.apply(start(7, .buffer(Signal.buffer(ramp, channels: 1, rate: rate)), playCount: PlaybackOptions.forever), at: 0)
        #expect(timeline.voices.first?.end == .max)
        let far: Int64 = 3 * 10_000_000_000
        #expect(left(render(timeline, from: far, frames: 6)) == ramp + ramp)
        #expect(timeline.retire(playedUpTo: .max - 1).isEmpty)
        #expect(timeline.removeAll() == [7])
        #expect(timeline.isEmpty)
    }

    @Test func voicesRetireInTheOrderTheyEnded() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5, frames: 300)), at: 0)
        timeline.apply(start(2, level(0.5, frames: 100)), at: 0)
        timeline.apply(start(3, level(0.5, frames: 1_000)), at: 0)
        timeline.apply(start(4, level(0.5, frames: 150)), at: 50)
        timeline.apply(.stop(id: 3), at: 80)
        timeline.apply(start(5, level(0.5, frames: 50)), at: 150)
        let ends = timeline.retire(playedUpTo: 1_000)
        // Ends at 100 (2); at 200 three of them, in the order they started: 3 (stopped at 80, with
        // its 120-frame ramp), 4, 5; at 300 (1).
        #expect(ends.map(\.id) == [2, 3, 4, 5, 1])
        #expect(ends.map(\.end) == [.finished, .stopped, .finished, .finished, .finished])
    }

    @Test func aCommandChangesNothingBeforeItsFrame() {
        var timeline = timeline()
        timeline.apply(start(1, level(0.5), playCount: PlaybackOptions.forever), at: 0)
        timeline.apply(start(2, level(0.25, frames: 3_000), pan: 0.5, playCount: 3), at: 300)
        for (frame, command) in [
            (4_000, Timeline.Command.volume(id: 1, 0.2, ramp: 0.01, curve: .equalPower)),
            (5_000, .pan(id: 2, -1, ramp: 0.005)), (6_000, .fadeOut(id: 1, duration: 0.05, curve: .equalPower)),
            (7_000, .stop(id: 2)),
        ] {
            let before = render(timeline, frames: frame)
            timeline.apply(command, at: Int64(frame))
            // An output re-renders from the command's frame on: what came before must not move.
            #expect(Analysis.maximumDifference(render(timeline, frames: frame), before) == 0, "before \(frame)")
        }
    }

    @Test func envelopesForgetWhatLiesBeyondTheHistory() {
        var timeline = timeline(history: 480)
        timeline.apply(start(1, level(0.5), playCount: PlaybackOptions.forever), at: 0)
        for step in 1...200 {
            timeline.apply(.volume(id: 1, Float(step % 2), ramp: 0.001, curve: .linear), at: Int64(step * 1_000))
        }
        let points = timeline.voices.first?.gain.points.count ?? 0
        #expect(points <= 4, "\(points) points kept")
        var offline = self.timeline()
        offline.apply(start(1, level(0.5), playCount: PlaybackOptions.forever), at: 0)
        for step in 1...200 {
            offline.apply(.volume(id: 1, Float(step % 2), ramp: 0.001, curve: .linear), at: Int64(step * 1_000))
        }
        #expect(render(timeline, from: 199_600, frames: 2_000) == render(offline, from: 199_600, frames: 2_000))
    }

    @Test func everyVoiceEndsExactlyOnce() {
        var timeline = timeline(history: 2_400)
        var random = SplitMix64(seed: 12)
        var started: [UInt64] = []
        var ends: [UInt64: [PlaybackEnd]] = [:]
        var frame: Int64 = 0
        for step in 0..<400 {
            let id = UInt64(step / 4 + 1)
            let command: Timeline.Command =
                switch step % 4 {
                case 0:
                    start(id, level(0.1, frames: Int.random(in: 1...4_000, using: &random)),
                          playCount: Bool.random(using: &random) ? 1 : PlaybackOptions.forever,
                          fadeIn: Double.random(in: 0...0.05, using: &random),
                          replacing: started.randomElement(using: &random))
                case 1: .stop(id: UInt64.random(in: 1...id + 2, using: &random))
                case 2: .fadeOut(id: UInt64.random(in: 1...id, using: &random), duration: 0.02, curve: .equalPower)
                default: .volume(id: UInt64.random(in: 1...id, using: &random), 0.3, ramp: 0.01, curve: .linear)
                }
            if step % 4 == 0 { started.append(id) }
            timeline.apply(command, at: frame)
            frame += Int64.random(in: 0...600, using: &random)
            for (id, end) in timeline.retire(playedUpTo: frame - 1_000) { ends[id, default: []].append(end) }
        }
        for (id, end) in timeline.retire(playedUpTo: frame + 1_000_000) { ends[id, default: []].append(end) }
        for id in timeline.removeAll() { ends[id, default: []].append(.stopped) }
        #expect(Set(ends.keys) == Set(started))
        #expect(ends.values.allSatisfy { $0.count == 1 })
    }

    @Test func aDiscardedStartStopsItsStream() {
        let ring = StreamingSource(channelCount: 1, frameCount: 1_000, capacity: 100, history: 10)
        Timeline.Command.start(id: 1, samples: .stream(ring), offset: 0, options: PlaybackOptions()).discard()
        #expect(ring.isCancelled)
        var timeline = timeline()
        let other = StreamingSource(channelCount: 1, frameCount: 1_000, capacity: 100, history: 10)
        timeline.apply(start(2, .stream(other)), at: 0)
        #expect(!other.isCancelled)
        _ = timeline.retire(playedUpTo: 1_000)
        #expect(other.isCancelled, "a retired voice's feeder stops")
    }
}

extension FileOutputTests {
    /// The file output once marked a voice it had no sound for as stopping, so a fade-out after a
    /// sound's end turned its `.finished` into `.stopped`.
    @Test func aFadeOutAfterASoundEndedLeavesItFinished() throws {
        let directory = TemporaryDirectory()
        let output = FileOutput(path: directory.file("ended.wav"), format: .wavFloat)
        let ends = EndRecorder()
        let handle = output.play(
            Signal.buffer([Float](repeating: 0.25, count: 4_800), channels: 1, rate: 48_000), completion: ends.completion)
        let crossfaded = EndRecorder()
        let other = output.play(
            Signal.buffer([Float](repeating: 0.25, count: 4_800), channels: 1, rate: 48_000),
            completion: crossfaded.completion)
        output.advance(by: 0.5)
        #expect(handle.isPlaying, "a file output completes its plays when it is written")
        handle.fadeOut(duration: 0.25)
        var options = PlaybackOptions(fadeIn: 0.1)
        options.replacing = other.id
        output.play(Signal.buffer([0.1], channels: 1, rate: 48_000), options: options)
        try output.finish()
        #expect(ends.wait()?.end == .finished)
        #expect(crossfaded.wait()?.end == .finished)
    }
}

/// A seeded generator, so that a failing sequence can be run again.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
