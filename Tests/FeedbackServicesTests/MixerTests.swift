import Dispatch
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// The mixer is a pure function of the timeline; these check it without a server.
@Suite struct MixerTests {
    func voice(
        _ samples: [Float], channels: Int = 1, start: Int64 = 0, playCount: Int = 1, gain: Float = 1, pan: Float = 0,
        id: UInt64 = 1
    ) -> Voice {
        Voice(id: id, buffer: Signal.buffer(samples, channels: channels, rate: 48_000), start: start,
              playCount: playCount, gain: Envelope(gain), pan: Envelope(pan))
    }

    func render(_ voices: [Voice], from start: Int64 = 0, frames: Int) -> [Float] {
        var output = [Float](repeating: .nan, count: frames * 2)
        output.withUnsafeMutableBufferPointer { out in
            voices.withUnsafeBufferPointer { Mixer.render($0, from: start, frameCount: frames, into: out.baseAddress!) }
        }
        return output
    }

    @Test func renderingARangeAgainGivesTheSameSamples() {
        var faded = voice(Signal.sines([440], seconds: 0.2, rate: 48_000), start: 100, playCount: 3, pan: 0.3)
        faded.gain.ramp(at: 2_000, to: 0.2, over: 3_000)
        let voices = [faded, voice(Signal.sines([700, 900], seconds: 0.05, rate: 48_000), channels: 2, start: 50, id: 2)]
        let whole = render(voices, frames: 30_000)
        #expect(render(voices, frames: 30_000) == whole)
        var pieces: [Float] = []
        var frame = 0
        for size in [1, 7, 480, 1_000, 4_096, 24_416] {
            pieces += render(voices, from: Int64(frame), frames: size)
            frame += size
        }
        #expect(Analysis.maximumDifference(pieces, whole) < 1e-6)
    }

    @Test func monoFeedsBothChannelsAndStereoPassesThrough() {
        let mono = render([voice([0.5, -0.25], start: 1)], frames: 4)
        #expect(mono == [0, 0, 0.5, 0.5, -0.25, -0.25, 0, 0])
        let stereo = render([voice([0.5, -0.25], channels: 2)], frames: 2)
        #expect(stereo == [0.5, -0.25, 0, 0])
    }

    @Test func panIsABalanceWithCosineLaw() {
        #expect(render([voice([0.5], pan: -1)], frames: 1) == [0.5, 0])
        #expect(render([voice([0.5], pan: 1)], frames: 1) == [0, 0.5])
        let half = render([voice([0.5], pan: 0.5)], frames: 1)
        #expect(abs(half[0] - 0.5 * 0.70710677) < 1e-6)
        #expect(half[1] == 0.5)
    }

    @Test func voicesSum() {
        let sum = render([voice([0.25, 0.25]), voice([0.125, -0.5], id: 2)], frames: 2)
        #expect(sum == [0.375, 0.375, -0.25, -0.25])
    }

    @Test func repeatsAndEnds() {
        let looped = voice([0.1, 0.2, 0.3], start: 2, playCount: 3)
        #expect(looped.end == 11)
        let left = Signal.channel(0, of: render([looped], frames: 12), channels: 2)
        #expect(left == [0, 0, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0])
        #expect(voice([0.1], playCount: PlaybackOptions.forever).end == .max)
    }

    @Test func stopRampsToSilenceAndEnds() {
        var tone = voice([Float](repeating: 0.5, count: 1_000))
        tone.stop(at: 100, ramp: 10)
        #expect(tone.end == 110)
        let left = Signal.channel(0, of: render([tone], frames: 200), channels: 2)
        #expect(left[99] == 0.5)
        #expect(zip(left[100..<110], left[101..<111]).allSatisfy { $0 >= $1 })
        #expect(left[110...].allSatisfy { $0 == 0 })
    }

    @Test func fadeIsALinearRamp() {
        var tone = voice([Float](repeating: 0.5, count: 1_000), gain: 0)
        tone.gain.ramp(at: 0, to: 1, over: 100)
        let left = Signal.channel(0, of: render([tone], frames: 200), channels: 2)
        #expect(left[0] == 0)
        #expect(abs(left[50] - 0.25) < 1e-5)
        #expect(left[150] == 0.5)
    }

    @Test func theLimiterNeverWrapsOrExceedsFullScale() {
        let loud = (0..<20).map { voice(Signal.sines([200 + Double($0) * 10], amplitude: 1, seconds: 0.1, rate: 48_000), id: UInt64($0)) }
        let mix = render(loud, frames: 4_800)
        #expect(mix.allSatisfy { abs($0) <= 1 })
        // The unlimited sum's sign is kept: limiting bends, it never folds over.
        let plain = render([voice([0.5]), voice([0.6], id: 2)], frames: 1)
        #expect(plain[0] > Mixer.limiterKnee && plain[0] < 1)
        #expect(render([voice([0.3])], frames: 1) == [0.3, 0.3], "below the knee nothing changes")
        #expect(render([voice([-0.7]), voice([-0.7], id: 2)], frames: 1)[0] < -0.8)
    }

    @Test func envelopeSegments() {
        var envelope = Envelope(1)
        envelope.ramp(at: 100, to: 0, over: 100)
        #expect(envelope.value(at: 50) == 1)
        #expect(envelope.value(at: 150) == 0.5)
        #expect(envelope.value(at: 500) == 0)
        let segment = envelope.segment(at: 150)
        #expect(segment.value == 0.5 && segment.until == 200 && segment.slope == -0.01)
        // A later change starts from wherever the envelope is then.
        envelope.ramp(at: 150, to: 1, over: 50)
        #expect(envelope.value(at: 150) == 0.5)
        #expect(envelope.value(at: 200) == 1)
    }
}

@Suite struct FileOutputTests {
    @Test func rendersTheMixIntoAFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("mix.wav")
        let output = FileOutput(path: path, format: .wavFloat)
        let a = Signal.buffer(Signal.sines([440], amplitude: 0.3, seconds: 0.5, rate: 48_000), channels: 1, rate: 48_000)
        let b = Signal.buffer(Signal.sines([660], amplitude: 0.3, seconds: 0.25, rate: 48_000), channels: 1, rate: 48_000)
        let ends = Lock<[PlaybackEnd]>([])
        let group = DispatchGroup()
        for (buffer, pan) in [(a, Float(-1)), (b, Float(1))] {
            group.enter()
            output.play(buffer, options: PlaybackOptions(pan: pan)) { end in
                ends.withLock { $0.append(end) }
                group.leave()
            }
            if pan < 0 { output.advance(by: 0.5) }
        }
        // Starts with b at 0.5 s and repeats until the file ends at 1 s, where it is cut.
        let looping = output.play(b, options: PlaybackOptions(volume: 0.5, pan: 1, playCount: PlaybackOptions.forever))
        output.advance(by: 0.5)
        #expect(try output.finish() == 1.0)
        group.wait()
        #expect(ends.withLock { $0 } == [.finished, .finished])
        #expect(!looping.isPlaying)

        let decoded = try SoundDecoder().decode(fileAt: path).buffer
        #expect(decoded.frameCount == 48_000)
        let left = Signal.channel(0, of: decoded.samples, channels: 2)
        let right = Signal.channel(1, of: decoded.samples, channels: 2)
        #expect(Analysis.maximumDifference(Array(left[0..<24_000]), a.samples) < 1e-6)
        #expect(Analysis.maximumDifference(Array(right[24_000..<36_000]), b.samples.map { $0 * 1.5 }) < 1e-6)
        #expect(Analysis.maximumDifference(Array(right[36_000..<48_000]), b.samples.map { $0 * 0.5 }) < 1e-6)
        #expect(right[0..<24_000].allSatisfy { $0 == 0 })
    }

    @Test func playsAfterFinishFailAndAnUnwritablePathFailsEveryPlay() {
        let output = FileOutput(path: "/nonexistent-dir/out.wav")
        let end = Lock<PlaybackEnd?>(nil)
        let done = DispatchSemaphore(value: 0)
        output.play(Signal.buffer([0.1], channels: 1, rate: 48_000)) { result in
            end.withLock { $0 = result }
            done.signal()
        }
        #expect(throws: FileError.self) { try output.finish() }
        done.wait()
        if case .failed = end.withLock({ $0 }) {} else { Issue.record("expected .failed, got \(String(describing: end.withLock { $0 }))") }
        let late = output.play(Signal.buffer([0.1], channels: 1, rate: 48_000))
        #expect(!late.isPlaying)
    }
}
