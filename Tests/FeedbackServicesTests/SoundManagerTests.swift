import Foundation
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices
@testable import FeedbackPlayer

extension AudioServerSuites {
    /// `Sound` and `SoundManager` against a real PulseAudio server: what its monitor recorded is
    /// measured (levels, fade lengths, seams, seek positions) and every end is counted.
    @Suite(.serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
    final class SoundManagerTests {
        let server: PulseAudioTestServer
        let manager: SoundManager
        let directory = TemporaryDirectory()
        let rate = 48_000

        init() throws {
            server = try PlayerTestServers.server(for: "SoundManagerTests")
            manager = SoundManager(configuration: .init(server: server.server))
            manager.searchDirectories = [directory.path]
            manager.prepareToPlay(with: [])
        }

        deinit {
            manager.stopAllSounds(fadeOut: false)
            manager.stopMusic(fadeOut: false)
            usleep(50_000)
        }

        /// Writes a mono 48 kHz float WAV into the test directory.
        func write(_ name: String, _ samples: [Float]) throws {
            try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: rate), to: directory.file(name), format: .wavFloat)
        }

        func tone(_ frequency: Double, amplitude: Double, seconds: Double) -> [Float] {
            Signal.sines([frequency], amplitude: amplitude, seconds: seconds, rate: rate)
        }

        /// A sound that is not periodic, so correlation can only peak at the right alignment.
        func chirp(seconds: Double, amplitude: Float = 0.4) -> [Float] {
            let frames = Int(seconds * Double(rate))
            return (0..<frames).map { frame in
                let t = Double(frame) / Double(rate)
                return amplitude * Float(sin(2 * .pi * (200 * t + 600 * t * t)))
            }
        }

        var recorder: MonitorRecorder { server.recorder }

        /// `body` measured again while the engine under-ran during it (`measuredAgainAfterUnderflows`).
        func measured<Result>(_ body: () throws -> Result) throws -> Result {
            try measuredAgainAfterUnderflows(underflows: { manager.underflows }, body)
        }

        // MARK: Crossfade

        @Test func aCrossfadeKeepsTheSummedPowerWithinOneDecibel() throws {
            // Whole cycles in a second and in a 10 ms window: seamless loops, no leakage between tones.
            try write("low.wav", tone(500, amplitude: 0.3, seconds: 1))
            try write("high.wav", tone(1_300, amplitude: 0.3, seconds: 1))
            manager.musicFadeDuration = 0.5
            let window = 480
            let (worst, span, count) = try measured { () throws -> (Double, Double, Int) in
                let mark = recorder.frameCount
                manager.playMusic("low", fadeIn: false)
                usleep(400_000)
                manager.playMusic("high")
                usleep(900_000)
                manager.stopMusic(fadeOut: false)
                recorder.wait(seconds: 0.1)
                let onset = try #require(recorder.firstSound(after: mark))
                let left = Array(recorder.channel(0, from: onset).prefix(Int(1.2 * Double(rate))))
                let powers = windowPowers(left, window: window).dropFirst(2).dropLast(2)
                let steady = 0.3 * 0.3 / 2
                let worst = powers.map { abs(10 * log10($0 / steady)) }.max() ?? .infinity
                // It really was a crossfade: some windows hold both tones at comparable levels.
                let both = stride(from: 0, to: left.count - window, by: window).filter { start in
                    let slice = Array(left[start..<(start + window)])
                    return Analysis.amplitude(of: 500, in: slice, rate: rate) > 0.1
                        && Analysis.amplitude(of: 1_300, in: slice, rate: rate) > 0.1
                }
                usleep(100_000)
                return (worst, Double(both.count * window) / Double(rate), powers.count)
            }
            print("crossfade: worst summed-power deviation \(worst) dB over \(count) windows of 10 ms")
            #expect(worst < 1, "summed power strays \(worst) dB from constant")
            #expect(span > 0.25 && span < 0.5, "tones overlapped for \(span) s")
        }

        @Test func playingTheSameTrackAgainDoesNothing() throws {
            try write("theme.wav", tone(600, amplitude: 0.2, seconds: 1))
            let (ends, playing, powers) = try measured { () throws -> ([Bool], Bool, [Double]) in
                let mark = recorder.frameCount
                manager.playMusic("theme", fadeIn: false)
                usleep(300_000)
                let track = try #require(manager.currentMusic)
                let observer = FinishObserver(track)
                manager.playMusic("theme")
                manager.playMusic(directory.file("theme.wav"))
                usleep(300_000)
                let playing = manager.isPlayingMusic
                let onset = try #require(recorder.firstSound(after: mark))
                let left = recorder.channel(0, from: onset)
                let powers = windowPowers(Array(left.prefix(Int(0.5 * Double(rate)))), window: 480)
                manager.stopMusic(fadeOut: false)
                _ = observer.wait(for: 1)
                usleep(100_000)
                return (observer.all, playing, Array(powers.dropFirst()))
            }
            #expect(ends == [false], "the track was not restarted: the only end is the final stop")
            #expect(playing)
            // No dip: every 10 ms window since the start is at full level.
            #expect(powers.allSatisfy { abs(10 * log10($0 / 0.02)) < 0.5 }, "\(powers.min() ?? 0)")
        }

        @Test func aTrackFadingOutComesBackAndACrossfadeCanTurnBack() throws {
            try write("first.wav", tone(400, amplitude: 0.2, seconds: 1))
            try write("second.wav", tone(1_000, amplitude: 0.2, seconds: 1))
            manager.musicFadeDuration = 0.4
            manager.playMusic("first", fadeIn: false)
            usleep(200_000)
            manager.stopMusic()
            usleep(100_000)
            manager.playMusic("first")
            usleep(600_000)
            #expect(manager.isPlayingMusic, "playing again after the fade-out was turned back")
            // Half-way through a crossfade, back to the first track.
            manager.playMusic("second")
            usleep(200_000)
            manager.playMusic("first")
            usleep(700_000)
            #expect(manager.isPlayingMusic)
            #expect(manager.currentMusic?.name == "first")
            let last = Array(recorder.channel(0, from: recorder.frameCount - 4_800))
            #expect(Analysis.amplitude(of: 400, in: last, rate: rate) > 0.18, "the first track at full level")
            #expect(Analysis.amplitude(of: 1_000, in: last, rate: rate) < 0.01, "the second track gone")
            manager.stopMusic(fadeOut: false)
        }

        // MARK: Fades and levels

        /// The frame at which `levels` first crosses `threshold` (rising or falling), from `start`.
        func crossing(_ levels: [Float], _ threshold: Float, from start: Int = 0, rising: Bool) -> Int? {
            (start..<levels.count).first { rising ? levels[$0] >= threshold : levels[$0] <= threshold }
        }

        @Test func fadeInAndFadeOutLastAsLongAsAsked() throws {
            // A constant level shows the gain itself, frame by frame.
            try write("level.wav", [Float](repeating: 0.4, count: rate))
            manager.soundFadeDuration = 0.3
            let sound = try #require(manager.sound(for: "level"))
            let observer = FinishObserver(sound)
            struct Fades { var fadeIn = 0.0, fadeOut = 0.0, tail = 0.0, silentAfter = false, playingDuringFade = false }
            let fades = try measured { () throws -> Fades in
                var result = Fades()
                let mark = recorder.frameCount
                manager.playSound(sound, looping: true, fadeIn: true)
                usleep(600_000)
                sound.fadeOut(duration: 0.2)
                result.playingDuringFade = sound.isPlaying
                while sound.isPlaying { usleep(2_000) }
                recorder.wait(seconds: 0.15)
                let start = try #require(recorder.firstSound(after: mark, threshold: 0.0001)) - 1
                let left = recorder.channel(0, from: start)
                let low = try #require(crossing(left, 0.04, rising: true))
                let high = try #require(crossing(left, 0.36, rising: true))
                result.fadeIn = Double(high - low) / 0.8 / Double(rate)
                let fallStart = try #require(crossing(left, 0.36, from: high + rate / 10, rising: false))
                let fallEnd = try #require(crossing(left, 0.04, from: fallStart, rising: false))
                result.fadeOut = Double(fallEnd - fallStart) / 0.8 / Double(rate)
                let silent = try #require(crossing(left, 0.0001, from: fallEnd, rising: false))
                result.tail = Double(silent - fallEnd) / Double(rate)
                result.silentAfter = left[silent..<min(left.count, silent + rate / 10)].allSatisfy { abs($0) <= 0.0001 }
                return result
            }
            print("fades: fade-in \(fades.fadeIn * 1000) ms for 300, fade-out \(fades.fadeOut * 1000) ms for 200")
            #expect(fades.playingDuringFade, "playing until the fade has ended")
            #expect(abs(fades.fadeIn - 0.3) < 0.005, "fade-in took \(fades.fadeIn) s")
            #expect(abs(fades.fadeOut - 0.2) < 0.005, "fade-out took \(fades.fadeOut) s")
            #expect(fades.tail < 0.2 * 0.1 + 0.001, "silent right at the end of the ramp")
            #expect(fades.silentAfter)
            #expect(!sound.isPlaying)
            #expect(observer.wait(for: 1))
            usleep(50_000)
            #expect(observer.all.allSatisfy { !$0 } && !observer.all.isEmpty, "each fade-out ends once, not finished")
            #expect(abs(sound.volume - 1) < 1e-6, "volume restored after the fade-out stopped the sound")
        }

        @Test func theHeardLevelIsVolumeTimesBaseVolumeTimesTheGroupVolume() throws {
            try write("flat.wav", [Float](repeating: 0.5, count: rate))
            let sound = try Sound(named: "flat", manager: manager)
            sound.baseVolume = 0.5
            sound.volume = 0.8
            manager.soundVolume = 0.5
            sound.isLooping = true
            let mark = recorder.frameCount
            manager.playSound(sound, looping: true)
            let onset = try #require(recorder.firstSound(after: mark, threshold: 0.01))
            // Waits for recorded audio, not wall time: a slow run (ThreadSanitizer, a loaded
            // machine) must still have the frames indexed below.
            recorder.wait(seconds: 0.1)
            var left = recorder.channel(0, from: onset)
            #expect(abs(left[2_400] - 0.5 * 0.8 * 0.5 * 0.5) < 0.002, "\(left[2_400])")
            let changed = recorder.frameCount
            manager.soundVolume = 1
            recorder.wait(seconds: 0.2)
            left = recorder.channel(0, from: changed)
            #expect(abs(left[left.count - 480] - 0.5 * 0.8 * 0.5) < 0.002, "a group change applies at once")
            sound.pan = -1
            recorder.wait(seconds: 0.1)
            let right = recorder.channel(1, from: recorder.frameCount - 480)
            #expect(right.allSatisfy { abs($0) < 0.001 }, "panned hard left")
            manager.stopSound("flat", fadeOut: false)
            manager.soundVolume = 1
        }

        // MARK: Loops and seeks

        @Test func loopSeamsAreSmoothForEffectsAndStreamedMusic() throws {
            // 110 whole cycles of 440 Hz: a seam that clicks would show as a jump larger than the
            // sine's steepest step.
            let amplitude = 0.4
            try write("hum.wav", tone(440, amplitude: amplitude, seconds: 0.25))
            let steepest = Float(2 * .pi * 440 * amplitude / Double(rate))
            for streamed in [false, true] {
                manager.streamingThreshold = streamed ? 0.1 : 30
                let sound = try Sound(contentsOfFile: directory.file("hum.wav"), manager: manager)
                #expect(sound.content.isStreamed == streamed)
                let (jump, level) = try measured { () throws -> (Float, Double) in
                    let mark = recorder.frameCount
                    if streamed { manager.playMusic(sound, fadeIn: false) } else { manager.playSound(sound, looping: true) }
                    usleep(1_200_000)
                    if streamed { manager.stopMusic(fadeOut: false) } else { sound.stop() }
                    let onset = try #require(recorder.firstSound(after: mark))
                    let left = Array(recorder.channel(0, from: onset + 240).prefix(rate))
                    usleep(100_000)
                    return (zip(left, left.dropFirst()).map { abs($1 - $0) }.max() ?? .infinity, Analysis.rms(left))
                }
                #expect(jump < steepest * 1.05, "\(streamed ? "streamed" : "effect") loop: step \(jump), sine's steepest \(steepest)")
                #expect(abs(level - amplitude / 2.0.squareRoot()) < 0.01, "no gaps across four seams")
            }
            manager.streamingThreshold = 30
        }

        @Test func seekingStartsAtTheRequestedFrame() throws {
            // Long enough that the analysis between the steps (slow in a debug build) never outlasts it.
            let samples = chirp(seconds: 5)
            try write("sweep.wav", samples)
            let sound = try Sound(named: "sweep", manager: manager)
            sound.currentTime = 1.0
            #expect(sound.currentTime == 1.0)
            // The stream started first, with silence: a PulseAudio monitor misses the first 1–2 ms
            // of any stream that starts (paplay's alike, measured with a ramp), which is not what
            // this test measures.
            try write("silence.wav", [Float](repeating: 0, count: 2_400))
            try Sound(named: "silence", manager: manager).play()
            usleep(100_000)
            let mark = recorder.frameCount
            let played = MonotonicClock.now
            sound.play()
            usleep(400_000)
            sound.stop()
            let stopped = MonotonicClock.now
            let kept = sound.currentTime
            // The position is the time played: at least the 400 ms slept, at most all until the
            // stop returned (a loaded machine oversleeps; ±50 ms around 1.4 failed on that).
            #expect(kept > 1.35 && kept < 1.01 + (stopped - played), "stop keeps the position (\(kept), \(stopped - played) s)")
            let onset = try #require(recorder.firstSound(after: mark, threshold: 0.001))
            let heard = Array(recorder.channel(0, from: onset).prefix(9_600))
            let expected = Array(samples[48_000..<(48_000 + 9_600)])
            let match = Analysis.bestCorrelation(expected, heard, lags: -480...480)
            print("seek: started \(match.lag) frames from the requested position, correlation \(match.value)")
            #expect(match.value > 0.99)
            #expect(abs(match.lag) <= 1, "started \(match.lag) frames off")

            // Resuming plays on from the kept position.
            usleep(100_000)
            let resumeMark = recorder.frameCount
            sound.play()
            usleep(300_000)
            let resumeOnset = try #require(recorder.firstSound(after: resumeMark, threshold: 0.001))
            let resumed = Array(recorder.channel(0, from: resumeOnset).prefix(4_800))
            let keptFrame = Int(kept * Double(rate))
            let there = Array(samples[keptFrame..<(keptFrame + 4_800)])
            #expect(Analysis.bestCorrelation(there, resumed, lags: -960...960).value > 0.99)

            // Seeking while playing jumps at once, without a finish notification.
            let observer = FinishObserver(sound)
            let seekMark = recorder.frameCount
            sound.currentTime = 0.2
            let position = sound.currentTime
            #expect(position > 0.199 && position < 0.25, "\(position)")
            usleep(300_000)
            #expect(observer.all.isEmpty)
            #expect(sound.isPlaying)
            let after = recorder.channel(0, from: seekMark + 2_400)
            let target = Array(samples[(9_600 + 2_400)..<(9_600 + 2_400 + 4_800)])
            let jumped = Analysis.bestCorrelation(target, Array(after.prefix(4_800 + 2_400)), lags: -2_400...2_400)
            #expect(jumped.value > 0.99, "heard the sound from 0.2 s within 50 ms of the seek")
            sound.stop()
            #expect(observer.wait(for: 1))
        }

        // MARK: Ends

        @Test func everyEndIsReportedOnceByHandlerNotificationAndSequence() async throws {
            // Long enough that the stops below (50 and 30 ms after their plays) come before its end
            // on a loaded machine too (at 0.15 s a preempted test thread let it end by itself).
            try write("blip.wav", tone(900, amplitude: 0.2, seconds: 0.5))
            let sound = try Sound(named: "blip", manager: manager)
            let observer = FinishObserver(sound)
            let handled = Lock<[Bool]>([])
            sound.completionHandler = { didFinish in handled.withLock { $0.append(didFinish) } }
            let events = manager.finishedSounds
            let collected = Task {
                var seen: [Bool] = []
                for await event in events where event.sound === sound {
                    seen.append(event.didFinish)
                    if seen.count == 4 { break }
                }
                return seen
            }
            // A natural end.
            sound.play()
            #expect(observer.wait(for: 1))
            // A stop.
            sound.play()
            sound.play()
            usleep(50_000)
            sound.stop()
            sound.stop()
            #expect(observer.wait(for: 2))
            // Two overlapping instances, both stopped by name.
            sound.allowsOverlap = true
            sound.play()
            usleep(30_000)
            sound.play()
            manager.stopSound("blip", fadeOut: false)
            #expect(observer.wait(for: 4))
            usleep(300_000)
            #expect(observer.all == [true, false, false, false])
            #expect(handled.withLock { $0 } == observer.all)
            #expect(await collected.value == observer.all)
        }

        /// Waits up to 3 s for a stream on the server whose `pactl list sink-inputs` entry has
        /// `text`; the last listing when none came.
        private func waitForSinkInput(containing text: String) -> (satisfied: Bool, last: String) {
            waitForPactl(server: server.server, ["list", "sink-inputs"], timeout: 3) { $0.contains(text) }
        }

        @Test func isPlayingMusicFollowsTheEngineAndTheRoleFollowsAllowsBackgroundMusic() throws {
            try write("song.wav", tone(700, amplitude: 0.2, seconds: 1))
            try write("other.wav", tone(300, amplitude: 0.2, seconds: 1))
            #expect(!manager.isPlayingMusic)
            manager.playMusic("song", looping: false, fadeIn: false)
            #expect(manager.isPlayingMusic)
            let music = waitForSinkInput(containing: "media.role = \"music\"")
            #expect(music.satisfied, "no stream with the music role: \(music.last)")
            // A track that is not looping ends by itself, and the manager says so.
            let deadline = MonotonicClock.now + 3
            while manager.isPlayingMusic && MonotonicClock.now < deadline { usleep(10_000) }
            #expect(!manager.isPlayingMusic)

            manager.allowsBackgroundMusic = true
            manager.musicFadeDuration = 0.2
            manager.playMusic("other")
            let game = waitForSinkInput(containing: "media.role = \"game\"")
            #expect(game.satisfied, "no stream with the game role: \(game.last)")
            manager.stopMusic()
            #expect(manager.isPlayingMusic, "still playing while it fades out")
            let faded = MonotonicClock.now + 3
            while manager.isPlayingMusic && MonotonicClock.now < faded { usleep(10_000) }
            #expect(!manager.isPlayingMusic)
            manager.allowsBackgroundMusic = false
        }
    }
}
