import Foundation
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices
@testable import FeedbackPlayer

extension AudioServerSuites {
    /// `Sound` and `SoundManager` against a real PulseAudio server, for what only a live output
    /// shows: every end counted while the server plays, the music stream's role, and the position
    /// a stop keeps (a clock's). The mix they make (crossfades, fades, levels, loops, seeks) is
    /// checked exactly offline, in `SoundManagerRenderTests`.
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

        // MARK: Positions

        /// The position is a clock's (when the engine started the play), so only a live output shows
        /// it; where a seek starts and what a loop repeats are checked offline
        /// (`SoundManagerRenderTests`).
        @Test func stopKeepsThePositionAndPlayResumesThere() throws {
            // Long enough that the analysis between the steps (slow in a debug build) never outlasts it.
            let samples = chirp(seconds: 5)
            try write("sweep.wav", samples)
            let sound = try Sound(named: "sweep", manager: manager)
            sound.currentTime = 1.0
            // The stream started first, with silence: a PulseAudio monitor misses the first 1–2 ms
            // of any stream that starts (paplay's alike, measured with a ramp), which is not what
            // this test measures.
            try write("silence.wav", [Float](repeating: 0, count: 2_400))
            try Sound(named: "silence", manager: manager).play()
            usleep(100_000)
            let played = MonotonicClock.now
            sound.play()
            usleep(400_000)
            sound.stop()
            let stopped = MonotonicClock.now
            let kept = sound.currentTime
            // The position is the time played: at least the 400 ms slept, at most all until the
            // stop returned (a loaded machine oversleeps; ±50 ms around 1.4 failed on that).
            #expect(kept > 1.35 && kept < 1.01 + (stopped - played), "stop keeps the position (\(kept), \(stopped - played) s)")

            // Resuming plays on from the kept position.
            usleep(100_000)
            let observer = FinishObserver(sound)
            let resumeMark = recorder.frameCount
            sound.play()
            usleep(300_000)
            let resumeOnset = try #require(recorder.firstSound(after: resumeMark, threshold: 0.001))
            let resumed = Array(recorder.channel(0, from: resumeOnset).prefix(4_800))
            let keptFrame = Int(kept * Double(rate))
            let there = Array(samples[keptFrame..<(keptFrame + 4_800)])
            #expect(Analysis.bestCorrelation(there, resumed, lags: -960...960).value > 0.99)
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
