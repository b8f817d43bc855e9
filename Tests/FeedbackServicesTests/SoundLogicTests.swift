import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices
@testable import FeedbackPlayer

/// The player's building blocks without a server: curves, seeks in the mixer, the streaming ring,
/// the feeder, name lookup, the decode cache, and the manager on a file output.
@Suite struct SoundLogicTests {
    let rate = 48_000

    func render(_ voices: [Voice], from start: Int64 = 0, frames: Int) -> [Float] {
        var output = [Float](repeating: .nan, count: frames * 2)
        output.withUnsafeMutableBufferPointer { out in
            voices.withUnsafeBufferPointer { Mixer.render($0, from: start, frameCount: frames, into: out.baseAddress!) }
        }
        return output
    }

    @Test func equalPowerRampsSumToConstantPower() {
        var falling = Envelope(1)
        var rising = Envelope(0)
        falling.ramp(at: 1_000, to: 0, over: 48_000, curve: .equalPower)
        rising.ramp(at: 1_000, to: 1, over: 48_000, curve: .equalPower)
        var worst = 0.0
        for frame in stride(from: Int64(0), through: 50_000, by: 37) {
            let power = Double(falling.value(at: frame) * falling.value(at: frame) + rising.value(at: frame) * rising.value(at: frame))
            worst = max(worst, abs(10 * log10(power)))
        }
        #expect(worst < 0.02, "power off by \(worst) dB")
        #expect(falling.value(at: 25_000) > 0.70 && falling.value(at: 25_000) < 0.72, "cos(π/4) at the middle")
        #expect(falling.value(at: 49_000) == 0)
        #expect(rising.value(at: 49_000) == 1)
    }

    @Test func linearRampsStayLinear() {
        var gain = Envelope(0)
        gain.ramp(at: 0, to: 1, over: 1_000)
        #expect(gain.points.count == 2)
        #expect(abs(gain.value(at: 250) - 0.25) < 1e-6)
    }

    @Test func envelopesKeepTheirHistoryUntilTheEngineForgetsIt() {
        var gain = Envelope(1)
        for step in 0..<10 { gain.ramp(at: Int64(step * 100), to: Float(step % 2), over: 50) }
        // Every ramp is still there: an offline render of the whole timeline sees them all.
        #expect(gain.value(at: 25) == 0.5)
        #expect(gain.value(at: 125) == 0.5)
        let later = gain.value(at: 925)
        gain.forget(before: 900)
        #expect(gain.points.count <= 3)
        #expect(gain.value(at: 925) == later, "values from the forgotten point on are unchanged")
    }

    @Test func aHandleFadeOutOnAFileEndsStoppedWhereTheRampEnds() throws {
        let directory = TemporaryDirectory()
        let output = FileOutput(path: directory.file("fade.wav"), format: .wavFloat)
        let ends = EndRecorder()
        let handle = output.play(
            Signal.buffer([Float](repeating: 0.25, count: 4_800), channels: 1, rate: rate),
            options: PlaybackOptions(playCount: PlaybackOptions.forever), completion: ends.completion)
        output.advance(by: 0.5)
        handle.fadeOut(duration: 0.25)
        output.advance(by: 0.1)
        handle.setVolume(1, ramp: 0.01)
        try output.finish()
        #expect(ends.wait()?.end == .stopped)
        let left = Signal.channel(0, of: try SoundDecoder(maximumDuration: nil).decode(fileAt: output.path).buffer.samples, channels: 2)
        #expect(left.count == 36_000, "the file ends where the fade-out ends")
        #expect(abs(left[24_000 + 6_000] - 0.125) < 1e-4, "half-way down the ramp, the level change ignored (\(left[30_000]))")
        #expect(abs(left[24_000 - 10] - 0.25) < 1e-6, "full level before the fade")
    }

    @Test func aVoiceWithAnOffsetStartsInsideItsSound() {
        let samples = (0..<10).map { Float($0) / 20 }
        let buffer = Signal.buffer(samples, channels: 1, rate: rate)
        let voice = Voice(id: 1, source: .buffer(buffer), start: 5, offset: 4, playCount: 1, gain: Envelope(1), pan: Envelope(0))
        #expect(voice.end == 11)
        let left = Signal.channel(0, of: render([voice], frames: 12), channels: 2)
        #expect(Array(left[5..<11]) == Array(samples[4...]))
        #expect(left[11] == 0)
        let looped = Voice(id: 2, source: .buffer(buffer), start: 0, offset: 8, playCount: .max, gain: Envelope(1), pan: Envelope(0))
        let loopLeft = Signal.channel(0, of: render([looped], frames: 4), channels: 2)
        #expect(loopLeft == [0.4, 0.45, 0, 0.05], "a looping voice wraps to the sound's start, not the offset")
    }

    @Test func fadeOutEndsTheVoiceAtTheEndOfTheRamp() {
        var voice = Voice(id: 1, buffer: Signal.buffer([Float](repeating: 0.5, count: 1_000), channels: 1, rate: rate),
                          start: 0, playCount: .max, gain: Envelope(1), pan: Envelope(0))
        voice.stop(at: 100, ramp: 200)
        #expect(voice.end == 300)
        let left = Signal.channel(0, of: render([voice], frames: 400), channels: 2)
        #expect(abs(left[200] - 0.25) < 1e-4)
        #expect(left[300...].allSatisfy { $0 == 0 })
    }

    @Test func theRingKeepsHistoryForRewritesAndNeverOverwritesIt() {
        let ring = StreamingSource(channelCount: 1, frameCount: 1_000_000, capacity: 1_000, history: 200)
        #expect(ring.writableFrames == 1_000)
        let chunk = (0..<1_000).map(Float.init)
        chunk.withUnsafeBufferPointer { ring.write($0.baseAddress!, frameCount: 1_000) }
        #expect(ring.writableFrames == 0, "nothing may be overwritten before the mixer moves on")
        ring.noteDemand(upTo: 500)
        #expect(ring.writableFrames == 300, "only frames more than `history` behind the demand are recycled")
        let next = (1_000..<1_300).map(Float.init)
        next.withUnsafeBufferPointer { ring.write($0.baseAddress!, frameCount: 300) }
        // Frames still inside the history read as written; recycled ones are silent.
        let run = ring.readableRun(at: 300, limit: 50)
        #expect(run.count == 50)
        #expect(run.samples?[0] == 300)
        #expect(ring.readableRun(at: 299, limit: 10).samples == nil)
        let wrapped = ring.readableRun(at: 990, limit: 100)
        #expect(wrapped.count == 10, "a run stops at the ring's end")
        #expect(ring.readableRun(at: 1_000, limit: 10).samples?[0] == 1_000)
        #expect(ring.readableRun(at: 1_300, limit: 10).samples == nil, "not decoded yet")
        #expect(ring.highWaterMark == 1_000)
    }

    @Test func theFeederStreamsAFileAsTheOneShotDecoderDecodesIt() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("long.flac")
        let samples = Signal.sines([440, 660], amplitude: 0.4, seconds: 3, rate: 44_100)
        try SoundFileWriter.write(Signal.buffer(samples, channels: 2, rate: 44_100), to: path, format: .flac16)
        let whole = try SoundDecoder(maximumDuration: nil).decode(fileAt: path).buffer
        let feeder = try StreamFeeder(path: path, engineRate: rate, offset: 0, looping: false, bufferDuration: 0.5, history: 0.1)
        #expect(feeder.source.frameCount == Int64(whole.frameCount))
        let streamed = drain(feeder, frames: whole.frameCount)
        // Streaming and one-shot soxr agree except for rounding inside the filter.
        let left = Signal.channel(0, of: streamed, channels: 2)
        let reference = Signal.channel(0, of: whole.samples, channels: 2)
        #expect(Analysis.maximumDifference(Array(left[100..<(left.count - 100)]), Array(reference[100..<(reference.count - 100)])) < 1e-3)
        #expect(feeder.source.highWaterMark <= Int64(feeder.source.capacity))
    }

    @Test func aLoopingFeederWrapsSeamlessly() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("loop.wav")
        // 0.1 s of 500 Hz: exactly 50 cycles, so the loop seam is continuous.
        try SoundFileWriter.write(
            Signal.buffer(Signal.sines([500], amplitude: 0.5, seconds: 0.1, rate: rate), channels: 1, rate: rate),
            to: path, format: .wavFloat)
        let feeder = try StreamFeeder(path: path, engineRate: rate, offset: 2_400, looping: true, bufferDuration: 0.5, history: 0.1)
        #expect(feeder.source.frameCount == 2_400, "one pass from the offset")
        let streamed = Signal.channel(0, of: drain(feeder, frames: 24_000, playCount: .max), channels: 2)
        let expected = (0..<24_000).map { Float(0.5 * sin(2 * .pi * 500 * Double(($0 + 2_400) % 4_800) / Double(rate))) }
        #expect(Analysis.maximumDifference(streamed, expected) < 1e-5)
        feeder.source.cancel()
    }

    /// Renders a stream voice with the mixer, as fast as the feeder thread decodes.
    func drain(_ feeder: StreamFeeder, frames: Int, playCount: Int = 1) -> [Float] {
        feeder.prefill(seconds: 0.1, engineRate: rate)
        feeder.start()
        let voice = Voice(id: 1, source: .stream(feeder.source), start: 0, offset: 0, playCount: playCount, gain: Envelope(1), pan: Envelope(0))
        var output = [Float](repeating: 0, count: frames * 2)
        var frame = 0
        let block = 1_024
        output.withUnsafeMutableBufferPointer { out in
            [voice].withUnsafeBufferPointer { voices in
                while frame < frames {
                    let count = min(block, frames - frame)
                    // The feeder runs ahead on its thread; at the very end it may have less to give.
                    let deadline = MonotonicClock.now + 1
                    while feeder.source.decodedFrames < Int64(frame + count) && MonotonicClock.now < deadline {
                        feeder.source.noteDemand(upTo: Int64(frame))
                        usleep(200)
                    }
                    Mixer.render(voices, from: Int64(frame), frameCount: count, into: out.baseAddress! + frame * 2)
                    frame += count
                }
            }
        }
        return output
    }

    @Test func namesResolveInTheSearchDirectoriesCafFirst() throws {
        let directory = TemporaryDirectory()
        let other = TemporaryDirectory()
        let tone = Signal.buffer(Signal.sines([440], seconds: 0.1, rate: rate), channels: 1, rate: rate)
        try SoundFileWriter.write(tone, to: directory.file("ping.wav"), format: .wav16)
        try SoundFileWriter.write(tone, to: directory.file("ping.caf"), format: .caf16)
        try SoundFileWriter.write(tone, to: other.file("pong.flac"), format: .flac16)
        let manager = SoundManager(output: FileOutput(path: directory.file("out.wav")))
        manager.searchDirectories = [directory.path, other.path]
        #expect(manager.url(forSoundNamed: "ping")?.lastPathComponent == "ping.caf")
        #expect(manager.url(forSoundNamed: "ping.wav")?.lastPathComponent == "ping.wav")
        #expect(manager.url(forSoundNamed: "pong")?.path == other.file("pong.flac"))
        #expect(manager.url(forSoundNamed: "nothing") == nil)
        #expect(throws: SoundError.self) { try Sound(named: "nothing", manager: manager) }
        let sound = try Sound(named: "pong", manager: manager)
        #expect(sound.name == "pong")
        #expect(abs(sound.duration - 0.1) < 1e-9)
    }

    @Test func effectsAreDecodedOnceAndShared() throws {
        let directory = TemporaryDirectory()
        try SoundFileWriter.write(
            Signal.buffer(Signal.sines([440], seconds: 0.1, rate: 44_100), channels: 1, rate: 44_100),
            to: directory.file("click.wav"), format: .wav16)
        let manager = SoundManager(output: FileOutput(path: directory.file("out.wav")))
        manager.searchDirectories = [directory.path]
        let prepared = manager.prepareToPlay(with: ["click", directory.file("click.wav"), "missing"])
        #expect(prepared.count == 2)
        #expect(prepared[0] === prepared[1], "a name and a path of one file are one Sound")
        #expect(manager.decodeCount == 1)
        for _ in 0..<5 { manager.playSound("click") }
        _ = try Sound(contentsOf: URL(fileURLWithPath: directory.file("click.wav")), manager: manager)
        #expect(manager.decodeCount == 1, "playing and making more Sounds of the file decode nothing")
    }

    @Test func prepareToPlayLoadsEverySoundInTheSearchDirectories() throws {
        let directory = TemporaryDirectory()
        let tone = Signal.buffer(Signal.sines([440], seconds: 0.05, rate: rate), channels: 1, rate: rate)
        for name in ["a.wav", "b.caf", "c.flac"] { try SoundFileWriter.write(tone, to: directory.file(name), format: .wav16) }
        let manager = SoundManager(output: FileOutput(path: directory.file("out.wav")))
        manager.searchDirectories = [directory.path]
        manager.prepareToPlay()
        #expect(manager.decodeCount == 3)
    }

    @Test func aCrossfadeOnAFileOutputIsEqualPowerToTheFrame() throws {
        let directory = TemporaryDirectory()
        try SoundFileWriter.write(
            Signal.buffer([Float](repeating: 0.5, count: rate), channels: 1, rate: rate), to: directory.file("a.wav"), format: .wavFloat)
        try SoundFileWriter.write(
            Signal.buffer([Float](repeating: -0.5, count: rate), channels: 1, rate: rate), to: directory.file("b.wav"), format: .wavFloat)
        let output = FileOutput(path: directory.file("out.wav"), format: .wavFloat)
        let manager = SoundManager(output: output)
        manager.searchDirectories = [directory.path]
        manager.musicFadeDuration = 0.5
        manager.playMusic("a", fadeIn: false)
        output.advance(by: 0.25)
        manager.playMusic("b")
        manager.playMusic("b")
        output.advance(by: 1)
        manager.stopMusic(fadeOut: false)
        try output.finish()
        let left = Signal.channel(0, of: try SoundDecoder(maximumDuration: nil).decode(fileAt: output.path).buffer.samples, channels: 2)
        // a is +0.5, b is −0.5: their gains are recovered from the sum at two points.
        #expect(abs(left[6_000] - 0.5) < 1e-4)
        let middle = 12_000 + 12_000
        let g = Double(left[middle]) / -0.5
        #expect(abs(g) < 1e-3, "half-way, cos = sin: the constant parts cancel (got \(left[middle]))")
        #expect(abs(left[12_000 + 24_000 + 100] + 0.5) < 1e-4, "after the fade only b plays")
    }
}
