import Foundation
import Testing

@testable import FeedbackServices
@testable import FeedbackPlayer

/// `Sound` and `SoundManager` rendered into a file by a `FileOutput`: the manager's crossfades,
/// fades, levels, loops and seeks are commands on the engine's timeline, so what they make is a
/// pure function of those commands, checked here sample by sample with no server and no clock.
/// What only a live output shows (ends while a server plays, stream roles, the position kept by a
/// stop) stays in `SoundManagerTests`.
struct SoundManagerRenderTests {
    let directory = TemporaryDirectory()
    let rate = 48_000
    /// Rounding of a float product and sum: far below a 24-bit step.
    let exact: Float = 1e-6

    /// A manager playing effects and music on one file output at 48 kHz.
    func manager() -> (SoundManager, FileOutput) {
        let output = FileOutput(path: directory.file("render-\(UUID().uuidString).wav"), format: .wavFloat)
        let manager = SoundManager(output: output)
        manager.searchDirectories = [directory.path]
        return (manager, output)
    }

    /// Writes a mono 48 kHz float WAV into the test directory.
    func write(_ name: String, _ samples: [Float]) throws {
        try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: rate), to: directory.file(name), format: .wavFloat)
    }

    func tone(_ frequency: Double, amplitude: Double, seconds: Double) -> [Float] {
        Signal.sines([frequency], amplitude: amplitude, seconds: seconds, rate: rate)
    }

    /// Writes the file and reads its two channels back.
    func render(_ output: FileOutput) throws -> (left: [Float], right: [Float]) {
        try output.finish()
        let decoded = try SoundDecoder(sampleRate: rate, maximumDuration: nil).decode(fileAt: output.path)
        let samples = decoded.buffer.samples
        #expect(decoded.buffer.channelCount == 2)
        return (stride(from: 0, to: samples.count, by: 2).map { samples[$0] },
                stride(from: 1, to: samples.count, by: 2).map { samples[$0] })
    }

    /// The largest difference between `rendered` and `expected` over `range`, and where it is.
    func worst(_ rendered: [Float], _ expected: (Int) -> Float, over range: Range<Int>) -> (error: Float, frame: Int) {
        range.reduce((0, range.lowerBound)) { worst, frame in
            let error = abs(rendered[frame] - expected(frame))
            return error > worst.0 ? (error, frame) : worst
        }
    }

    // MARK: Crossfades

    @Test func aCrossfadeIsAQuarterSineEachWayStartingOnOneFrame() throws {
        // Whole cycles in a second: seamless loops.
        let low = tone(500, amplitude: 0.3, seconds: 1)
        let high = tone(1_300, amplitude: 0.3, seconds: 1)
        try write("low.wav", low)
        try write("high.wav", high)
        let (manager, output) = manager()
        manager.musicFadeDuration = 0.5
        manager.playMusic("low", fadeIn: false)
        output.advance(by: 0.4)
        manager.playMusic("high")
        output.advance(by: 0.9)
        manager.stopMusic(fadeOut: false)
        let (left, right) = try render(output)

        let start = 19_200, fade = 24_000, stop = 62_400
        #expect(left.count == stop + Int(Timeline.stopRamp * Double(rate)))
        func expected(_ frame: Int) -> Float {
            guard frame >= start else { return low[frame % rate] }
            let t = min(1, Double(frame - start) / Double(fade))
            return low[frame % rate] * Float(cos(t * .pi / 2)) + high[(frame - start) % rate] * Float(sin(t * .pi / 2))
        }
        // Before and after the ramps each track is itself; during them the quarter sines are drawn
        // with 32 chords (`Envelope.equalPowerSegments`), off by at most 0.12 % of the span.
        #expect(worst(left, expected, over: 0..<start).error <= exact)
        let during = worst(left, expected, over: start..<(start + fade))
        #expect(during.error < 2 * 0.3 * 0.0012, "frame \(during.frame) off by \(during.error)")
        #expect(worst(left, expected, over: (start + fade)..<stop).error <= exact)
        #expect(left == right, "a mono sound in the middle is the same on both sides")
        // Power summed over each 10 ms: constant to within the chords' error.
        let steady = 0.3 * 0.3 / 2
        let deviation = windowPowers(Array(left[..<stop]), window: 480).map { abs(10 * log10($0 / steady)) }.max() ?? .infinity
        #expect(deviation < 0.05, "summed power strays \(deviation) dB from constant")
    }

    @Test func playingTheSameTrackAgainDoesNothing() throws {
        let theme = tone(600, amplitude: 0.2, seconds: 1)
        try write("theme.wav", theme)
        let (manager, output) = manager()
        manager.playMusic("theme", fadeIn: false)
        output.advance(by: 0.3)
        let track = try #require(manager.currentMusic)
        let observer = FinishObserver(track)
        manager.playMusic("theme")
        manager.playMusic(directory.file("theme.wav"))
        #expect(manager.currentMusic === track)
        #expect(manager.isPlayingMusic)
        output.advance(by: 0.3)
        manager.stopMusic(fadeOut: false)
        let (left, _) = try render(output)
        // Neither restarted nor dipped: the track runs on unbroken through both calls.
        #expect(worst(left, { theme[$0 % rate] }, over: 0..<28_800).error <= exact)
        #expect(observer.wait(for: 1))
        #expect(observer.all == [false], "the only end is the final stop")
    }

    @Test func aTrackFadingOutComesBackAndACrossfadeCanTurnBack() throws {
        try write("first.wav", tone(400, amplitude: 0.2, seconds: 1))
        try write("second.wav", tone(1_000, amplitude: 0.2, seconds: 1))
        let (manager, output) = manager()
        manager.musicFadeDuration = 0.4
        manager.playMusic("first", fadeIn: false)
        output.advance(by: 0.2)
        manager.stopMusic()
        output.advance(by: 0.1)
        manager.playMusic("first")
        #expect(manager.isPlayingMusic, "playing again after the fade-out was turned back")
        output.advance(by: 0.6)
        // Half-way through a crossfade, back to the first track.
        manager.playMusic("second")
        output.advance(by: 0.2)
        manager.playMusic("first")
        output.advance(by: 0.7)
        #expect(manager.isPlayingMusic)
        #expect(manager.currentMusic?.name == "first")
        manager.stopMusic(fadeOut: false)
        let (left, _) = try render(output)
        // The last 100 ms before the stop: the first track alone, at full level.
        let end = Int(1.8 * Double(rate))
        let last = Array(left[(end - 4_800)..<end])
        #expect(abs(Analysis.amplitude(of: 400, in: last, rate: rate) - 0.2) < 0.001, "the first track at full level")
        #expect(Analysis.amplitude(of: 1_000, in: last, rate: rate) < 0.0001, "the second track gone")
    }

    // MARK: Fades and levels

    @Test func fadeInAndFadeOutAreStraightRampsAsLongAsAsked() throws {
        // A constant level shows the gain itself, frame by frame.
        try write("level.wav", [Float](repeating: 0.4, count: rate))
        let (manager, output) = manager()
        manager.soundFadeDuration = 0.3
        let sound = try #require(manager.sound(for: "level"))
        let observer = FinishObserver(sound)
        manager.playSound(sound, looping: true, fadeIn: true)
        output.advance(by: 0.6)
        sound.fadeOut(duration: 0.2)
        #expect(sound.isPlaying, "playing until the fade has ended")
        output.advance(by: 0.3)
        let (left, _) = try render(output)

        let fadeIn = 14_400, fadeOutStart = 28_800, fadeOut = 9_600
        func expected(_ frame: Int) -> Float {
            if frame < fadeIn { return 0.4 * Float(frame) / Float(fadeIn) }
            if frame < fadeOutStart { return 0.4 }
            return 0.4 * max(0, 1 - Float(frame - fadeOutStart) / Float(fadeOut))
        }
        let error = worst(left, expected, over: 0..<left.count)
        #expect(error.error <= exact, "frame \(error.frame) off by \(error.error)")
        #expect(left.count == Int(0.9 * Double(rate)), "the file runs to the cursor, silent after the fade")
        #expect(observer.wait(for: 1))
        #expect(observer.all == [false], "the fade-out ends the play once, not finished")
        #expect(!sound.isPlaying)
    }

    @Test func aFadeOutThatStoppedTheSoundGivesItsVolumeBack() throws {
        try write("level.wav", [Float](repeating: 0.4, count: rate))
        let (manager, output) = manager()
        let sound = try Sound(named: "level", manager: manager)
        sound.volume = 0.7
        let observer = FinishObserver(sound)
        manager.playSound(sound, looping: true)
        output.advance(by: 0.1)
        sound.fadeOut(duration: 0.1)
        output.advance(by: 0.2)
        let (left, _) = try render(output)
        #expect(worst(left, { _ in 0.4 * 0.7 }, over: 0..<4_800).error <= exact)
        #expect(worst(left, { _ in 0 }, over: 9_600..<left.count).error == 0)
        #expect(observer.wait(for: 1))
        #expect(!sound.isPlaying)
        #expect(abs(sound.volume - 0.7) < exact, "the next play() is heard at the level before the fade")
    }

    @Test func theHeardLevelIsVolumeTimesBaseVolumeTimesTheGroupVolume() throws {
        try write("flat.wav", [Float](repeating: 0.5, count: rate))
        let (manager, output) = manager()
        let sound = try Sound(named: "flat", manager: manager)
        sound.baseVolume = 0.5
        sound.volume = 0.8
        manager.soundVolume = 0.5
        manager.playSound(sound, looping: true)
        output.advance(by: 0.1)
        manager.soundVolume = 1
        output.advance(by: 0.1)
        sound.pan = -1
        output.advance(by: 0.1)
        manager.stopSound("flat", fadeOut: false)
        let (left, right) = try render(output)
        // Each change ramps over 5 ms (`PlaybackHandle.setVolume`, `setPan`), then holds.
        let ramp = 240
        #expect(worst(left, { _ in 0.5 * 0.8 * 0.5 * 0.5 }, over: 0..<4_800).error <= exact)
        #expect(worst(left, { _ in 0.5 * 0.8 * 0.5 }, over: (4_800 + ramp)..<14_400).error <= exact, "a group change applies at once")
        #expect(worst(right, { _ in 0.5 * 0.8 * 0.5 }, over: (4_800 + ramp)..<9_600).error <= exact)
        #expect(worst(right, { _ in 0 }, over: (9_600 + ramp)..<14_400).error == 0, "panned hard left: the right is silent")
    }

    // MARK: Loops and seeks

    @Test(arguments: [false, true])
    func aLoopRepeatsTheFileWithoutASeam(streamed: Bool) throws {
        // 110 whole cycles of 440 Hz.
        let hum = tone(440, amplitude: 0.4, seconds: 0.25)
        try write("hum.wav", hum)
        let (manager, output) = manager()
        manager.streamingThreshold = streamed ? 0.1 : 30
        let sound = try Sound(contentsOfFile: directory.file("hum.wav"), manager: manager)
        #expect(sound.content.isStreamed == streamed)
        if streamed { manager.playMusic(sound, fadeIn: false) } else { manager.playSound(sound, looping: true) }
        output.advance(by: 1.2)
        let (left, _) = try render(output)
        // Four seams and more: every frame is the file's, in order.
        let error = worst(left, { hum[$0 % hum.count] }, over: 0..<57_600)
        #expect(error.error <= exact, "\(streamed ? "streamed" : "effect") loop: frame \(error.frame) off by \(error.error)")
    }

    @Test func aSeekStartsAtTheRequestedFrameBeforeAndWhilePlaying() throws {
        // Not periodic, so a frame can only match its own position.
        let samples = (0..<(5 * rate)).map { frame in
            let t = Double(frame) / 48_000
            return Float(0.4 * sin(2 * .pi * (200 * t + 600 * t * t)))
        }
        try write("sweep.wav", samples)
        let (manager, output) = manager()
        let sound = try Sound(named: "sweep", manager: manager)
        sound.currentTime = 1.0
        #expect(sound.currentTime == 1.0)
        let observer = FinishObserver(sound)
        sound.play()
        output.advance(by: 0.4)
        // Seeking while playing: the old play stops with the click-free ramp, the new one starts
        // on the same frame, and no finish is reported for the old one.
        sound.currentTime = 0.2
        #expect(sound.isPlaying)
        output.advance(by: 0.3)
        sound.stop()
        let (left, _) = try render(output)
        let seek = 19_200, ramp = Int(Timeline.stopRamp * Double(rate))
        #expect(worst(left, { samples[48_000 + $0] }, over: 0..<seek).error <= exact)
        #expect(worst(left, { samples[9_600 + $0 - seek] }, over: (seek + ramp)..<33_600).error <= exact)
        #expect(observer.wait(for: 1))
        #expect(observer.all == [false], "one end, the stop's")
    }
}
