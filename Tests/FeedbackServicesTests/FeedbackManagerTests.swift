import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// Collects every result a feedback play reports, to prove there is exactly one.
final class ResultRecorder: Sendable {
    private let results = Lock<[FeedbackResult]>([])
    private let semaphore = DispatchSemaphore(value: 0)

    var completion: @Sendable (FeedbackResult) -> Void {
        { [self] result in
            results.withLock { $0.append(result) }
            semaphore.signal()
        }
    }

    func wait(timeout: Double = 5) -> FeedbackResult? {
        guard semaphore.wait(timeout: .now() + timeout) == .success else { return nil }
        return results.withLock { $0.first }
    }

    var all: [FeedbackResult] { results.withLock { $0 } }
}

extension AudioServerSuites {
    /// FeedbackManager against a real PulseAudio server: what reached the server's monitor is compared
    /// with what the result says. "No vibrator" is a discovery over an empty directory; the vibrator
    /// cases run in the VM (Tests/HapticsVMCases, `feedback-manager-*`).
    @Suite(.serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
    struct FeedbackManagerTests {
        let server: PulseAudioTestServer
        let output: PulseAudioOutput
        let registry = SoundRegistry()
        let noDevices = TemporaryDirectory()
        let rate = 48_000

        init() throws {
            server = try PulseAudioTestServer.shared(named: "feedbackManager")
            output = PulseAudioOutput(configuration: .init(server: server.server))
            try output.prepare()
        }

        func manager(profile: FeedbackProfile? = .full, vibrator: VibratorSource? = nil) -> FeedbackManager {
            let manager = FeedbackManager(
                registry: registry, audioOutput: output,
                vibrator: vibrator ?? .discovery(VibratorDiscovery(directory: noDevices.path)),
                settings: FeedbackSettings(path: nil),
                themeResolver: makeResolver(theme: "feedbackservices", bases: [repositoryThemesDirectory]))
            manager.profileOverride = profile
            return manager
        }

        /// A chirp, so correlation can only peak at the right alignment.
        func chirp(seconds: Double = 0.3) throws -> SystemSoundID {
            let frames = Int(seconds * Double(rate))
            let samples: [Float] = (0..<frames).map { frame in
                let t = Double(frame) / Double(rate)
                return 0.4 * Float(min(1, t * 50, (seconds - t) * 50) * sin(2 * .pi * (300 * t + 1_200 * t * t)))
            }
            return try registry.register(samples: samples, sampleRate: rate, channelCount: 1, name: "chirp")
        }

        /// Plays and waits; returns the result and the recording from the first sound, or nil when
        /// nothing reached the server.
        func playAndRecord(_ manager: FeedbackManager) throws -> (result: FeedbackResult, recorded: [Float]?) {
            let mark = server.recorder.frameCount
            let results = ResultRecorder()
            manager.play(completion: results.completion)
            let result = try #require(results.wait())
            server.recorder.wait(seconds: 0.05)
            let onset = server.recorder.firstSound(after: mark, timeout: 0.3)
            #expect(results.all.count == 1)
            return (result, onset.map { server.recorder.channel(0, from: $0) })
        }

        @Test(arguments: FeedbackProfile.allCases, FeedbackType.allCases)
        func profileMatrixWithoutAVibrator(profile: FeedbackProfile, type: FeedbackType) throws {
            let manager = manager(profile: profile)
            let id = try chirp()
            manager.soundID = id
            manager.feedbackType = type
            let soundExpected = profile == .full && type != .vibrateOnly
            let original = registry.sound(id)!.buffer.samples
            let (result, recorded) = try measuredAgainAfterUnderflows(attempts: 3, underflows: { output.statistics.underflows }) {
                try playAndRecord(manager)
            }
            #expect(result.soundID == id && result.feedbackType == type && result.profile == profile)
            if soundExpected {
                #expect(result.sound == .played)
                let recorded = try #require(recorded, "nothing reached the server")
                let match = Analysis.bestCorrelation(original, recorded, lags: -100...100)
                #expect(match.value >= 0.99, "underflows \(output.statistics.underflows)")
            } else {
                #expect(recorded == nil, "sound reached the server in \(profile) \(type)")
                #expect(result.sound == (type == .vibrateOnly ? .notRequested : .silencedByProfile(profile)))
            }
            switch (type, profile) {
            case (.audioOnly, _): #expect(result.vibration == .notRequested)
            case (_, .silent): #expect(result.vibration == .silencedByProfile(.silent))
            default:
                guard case .noVibrator(let error) = result.vibration else {
                    Issue.record("expected noVibrator, got \(result.vibration)")
                    return
                }
                #expect(error.reason == .noDevice)
            }
            #expect(!result.vibrated)
            #expect(result.playedSound == soundExpected)
        }

        @Test func systemSoundComesFromTheThemeAndIsDecodedOnce() throws {
            let manager = manager()
            manager.feedbackType = .audioOnly
            let (result, recorded) = try playAndRecord(manager)
            #expect(result.soundID == 1007 && result.sound == .played)
            let file = try SoundDecoder().decode(fileAt: shippedThemeDirectory + "/stereo/message-new-instant.wav").buffer
            let recording = try #require(recorded)
            let left = Signal.channel(0, of: file.samples, channels: file.channelCount)
            let match = Analysis.bestCorrelation(Array(left.prefix(9_600)), Array(recording.prefix(12_000)), lags: -200...200)
            #expect(match.value >= 0.98, "correlation \(match.value)")
            // A second play comes from the cache: still the same sound.
            #expect(try playAndRecord(manager).result.sound == .played)
        }

        @Test func vibrateIDVibratesEvenAsAudioOnly() throws {
            let manager = manager()
            manager.soundID = kSystemSoundID_Vibrate
            manager.feedbackType = .audioOnly
            let (result, recorded) = try playAndRecord(manager)
            #expect(recorded == nil)
            #expect(result.sound == .notRequested)
            guard case .noVibrator = result.vibration else {
                Issue.record("expected noVibrator, got \(result.vibration)")
                return
            }
        }

        @Test func turnedOffVibrationIsReported() throws {
            let manager = manager(vibrator: VibratorSource.none)
            manager.soundID = try chirp(seconds: 0.1)
            let (result, _) = try playAndRecord(manager)
            #expect(result.sound == .played)
            guard case .noVibrator(let error) = result.vibration else {
                Issue.record("expected noVibrator, got \(result.vibration)")
                return
            }
            #expect(error.reason == .noDevice)
            #expect(!result.succeeded)
        }

        @Test func unknownIDsFail() throws {
            let manager = manager()
            manager.feedbackType = .audioOnly
            manager.soundID = 9_999
            let (result, recorded) = try playAndRecord(manager)
            #expect(recorded == nil)
            #expect(result.sound == .failed(.registry(RegistryError(.unknownSoundID(9_999), source: "sound 9999"))))
            manager.soundID = 1017
            guard case .failed(.catalog(let error)) = try playAndRecord(manager).result.sound else {
                Issue.record("expected a catalog failure")
                return
            }
            #expect(error.reason == .unassigned)
        }

        @Test func noAudioOutputIsReported() throws {
            let unreachable = PulseAudioOutput(configuration: .init(server: "unix:/nonexistent/socket"))
            let manager = FeedbackManager(
                registry: registry, audioOutput: unreachable, vibrator: .none, settings: FeedbackSettings(path: nil))
            manager.soundID = try chirp(seconds: 0.1)
            manager.feedbackType = .audioOnly
            let results = ResultRecorder()
            manager.play(completion: results.completion)
            let result = try #require(results.wait())
            guard case .noAudioOutput = result.sound else {
                Issue.record("expected noAudioOutput, got \(result.sound)")
                return
            }
        }

        @Test func exactlyOneCompletionPerPlayUnder64ConcurrentPlays() throws {
            let manager = manager()
            let id = try chirp(seconds: 0.05)
            manager.feedbackType = .audioAndVibrate
            let counts = Lock<[Int: Int]>([:])
            let done = DispatchSemaphore(value: 0)
            onThreads(64) { index in
                manager.play(id, type: index % 3 == 0 ? .audioOnly : .audioAndVibrate) { result in
                    counts.withLock { $0[index, default: 0] += 1 }
                    #expect(result.sound == .played)
                    done.signal()
                }
            }
            for _ in 0..<64 { #expect(done.wait(timeout: .now() + 10) == .success) }
            usleep(300_000)
            let final = counts.withLock { $0 }
            #expect(final.count == 64)
            #expect(final.values.allSatisfy { $0 == 1 })
        }

        /// The session service's scheduling: plays on threads of their own, the sound's end handed to
        /// the caller's loop, and no Dispatch thread involved (libdispatch names its workers
        /// "DispatchWorker", its manager after a root queue).
        @Test func threadSchedulingHandsEveryEndToTheLoopExactlyOnce() throws {
            let handedOver = Lock<[String]>([])
            let threadName: @Sendable () -> String = {
                ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?").filter { $0 != "\n" }
            }
            let loop = Delivery { work in
                handedOver.withLock { $0.append(threadName()) }
                work()
            }
            let manager = FeedbackManager(
                registry: registry, audioOutput: output, openAudioOutput: { () throws(PlaybackError) -> any AudioOutput in throw PlaybackError(.outputClosed) },
                vibrator: .none, settings: FeedbackSettings(path: nil), scheduling: .threads(loop: loop))
            manager.profileOverride = .full
            let id = try chirp(seconds: 0.05)
            let completions = Lock<[Int: [String]]>([:])
            let done = DispatchSemaphore(value: 0)
            onThreads(16) { index in
                manager.play(.id(id), type: .audioOnly, delivery: .immediate) { result in
                    completions.withLock { $0[index, default: []].append(threadName()) }
                    #expect(result.sound == .played)
                    done.signal()
                }
            }
            for _ in 0..<16 { #expect(done.wait(timeout: .now() + 10) == .success) }
            usleep(300_000)
            let reported = completions.withLock { $0 }
            #expect(reported.count == 16 && reported.values.allSatisfy { $0.count == 1 })
            #expect(handedOver.withLock { $0.count } == 16, "each sound's end went through the loop")
            let names = Set(reported.values.joined()).union(handedOver.withLock { $0 })
            #expect(!names.contains { $0.hasPrefix("Dispatch") || $0.contains("qos") }, "\(names)")
        }

        @Test func stoppingEndsTheSoundAndReportsIt() throws {
            let manager = manager()
            let id = try chirp(seconds: 3)
            let results = ResultRecorder()
            let started = MonotonicClock.now
            manager.play(id, type: .audioOnly, completion: results.completion)
            usleep(200_000)
            #expect(manager.stop(id) == 1)
            let result = try #require(results.wait())
            #expect(result.sound == .stopped)
            #expect(MonotonicClock.now - started < 1.5)
            #expect(manager.stop(id) == 0)
        }

        @Test func stopBeforeTheSoundStartsStillStopsIt() throws {
            let manager = manager()
            let results = ResultRecorder()
            let playback = manager.play(try chirp(seconds: 3), type: .audioOnly, completion: results.completion)
            playback.stop()
            let result = try #require(results.wait(timeout: 2))
            #expect(result.sound == .stopped)
            #expect(!playback.isPlaying)
        }

        /// The output opens once, in the background, for every play waiting for it; a stop while
        /// it opens ends that play at once (a hung server must not hold up Ctrl-C), and it never starts.
        @Test func aStopWhileTheOutputOpensEndsThePlayAtOnce() throws {
            let gate = DispatchSemaphore(value: 0)
            let opens = Atomic(0)
            let output = output
            let manager = FeedbackManager(
                registry: registry,
                openAudioOutput: { () throws(PlaybackError) -> any AudioOutput in
                    opens.add(1, ordering: .relaxed)
                    gate.wait()
                    return output
                },
                vibrator: .none, settings: FeedbackSettings(path: nil),
                themeResolver: makeResolver(theme: "feedbackservices", bases: [repositoryThemesDirectory]))
            manager.profileOverride = .full
            let id = try chirp(seconds: 0.2)
            let stopped = ResultRecorder()
            let waiting = ResultRecorder()
            let playback = manager.play(.id(id), type: .audioOnly, completion: stopped.completion)
            manager.play(.id(id), type: .audioOnly, completion: waiting.completion)
            server.recorder.wait(seconds: 0.1)
            let start = Date()
            playback.stop()
            let result = try #require(stopped.wait(timeout: 1))
            #expect(result.sound == .stopped)
            #expect(Date().timeIntervalSince(start) < 0.5)
            let mark = server.recorder.frameCount
            gate.signal()
            #expect(try #require(waiting.wait()).sound == .played)
            #expect(opens.load(ordering: .relaxed) == 1)
            #expect(stopped.all.count == 1)
            // Only the play that was not stopped reached the server: one chirp, not two overlapping.
            let onset = try #require(server.recorder.firstSound(after: mark, timeout: 0.3))
            let played = server.recorder.channel(0, from: onset)
            let chirp = registry.sound(id)!.buffer.samples
            #expect(Analysis.bestCorrelation(chirp, played, lags: -100...100).value >= 0.99)
        }

        /// Theme events and files go the same way as IDs; `resolve` reports what would play.
        @Test func eventsAndFilesPlayThroughTheSameRoute() throws {
            let manager = manager()
            let results = ResultRecorder()
            // A sound's last samples reach the monitor a little after its play reports its end:
            // let them pass before marking where the next sound is looked for.
            server.recorder.wait(seconds: 0.1)
            let mark = server.recorder.frameCount
            manager.play(.event("message-new-instant"), type: .audioOnly, completion: results.completion)
            let event = try #require(results.wait())
            #expect(event.sound == .played && event.alert == .event("message-new-instant") && event.soundID == nil)
            #expect(server.recorder.firstSound(after: mark, timeout: 0.3) != nil)

            let directory = TemporaryDirectory()
            let path = directory.file("chirp.wav")
            let chirp = registry.sound(try chirp(seconds: 0.25))!.buffer
            try SoundFileWriter.write(chirp, to: path, format: .wavFloat)
            let file = ResultRecorder()
            server.recorder.wait(seconds: 0.1)
            let fileMark = server.recorder.frameCount
            manager.play(.file(path), type: .audioOnly, options: PlaybackOptions(volume: 0.5), completion: file.completion)
            #expect(try #require(file.wait()).sound == .played)
            let onset = try #require(server.recorder.firstSound(after: fileMark, timeout: 0.3))
            let played = server.recorder.channel(0, from: onset)
            #expect(Analysis.bestCorrelation(chirp.samples, played, lags: -100...100).value >= 0.99)

            let tritone = try manager.resolve(.id(1007))
            #expect(tritone.event == (try SystemSoundCatalog.sound(for: 1007)).event)
            #expect(tritone.file?.hasPrefix(repositoryThemesDirectory) == true)
            #expect((tritone.duration ?? 0) > 0.1)
            #expect(try manager.resolve(.id(kSystemSoundID_Vibrate)).buffer == nil)
            guard case .invalidName? = #expect(throws: FeedbackError.self, performing: { try manager.resolve(.event("../x")) }) else {
                Issue.record("an event name with '..' must be refused")
                return
            }
            guard case .sound(let error)? = #expect(throws: FeedbackError.self, performing: { try manager.resolve(.file("/nonexistent.wav")) }) else {
                Issue.record("a missing file must be a sound error")
                return
            }
            #expect(error.reason == .notFound)
        }

        @Test func asyncPlayReturnsTheResult() async throws {
            let manager = manager()
            manager.soundID = try chirp(seconds: 0.1)
            manager.feedbackType = .audioOnly
            let result = await manager.play()
            #expect(result.sound == .played)
        }

        @Test func cancellingTheTaskStopsThePlay() async throws {
            let manager = manager()
            let id = try chirp(seconds: 3)
            let task = Task { await manager.play(id, type: .audioOnly) }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            #expect(await task.value.sound == .stopped)
        }

        @Test func volumeChangeAppliesToTheNextPlay() throws {
            let manager = manager()
            manager.feedbackType = .audioOnly
            let tone = Signal.sines([700], amplitude: 0.4, seconds: 0.3, rate: rate)
            manager.soundID = try registry.register(samples: tone, sampleRate: rate, channelCount: 1)
            let loud = try #require(try playAndRecord(manager).recorded)
            try manager.setVolume(0.25, for: manager.soundID)
            let quiet = try #require(try playAndRecord(manager).recorded)
            // Fails, rather than traps, when a recorder lagging under load holds less than the window.
            try #require(loud.count >= 12_000 && quiet.count >= 12_000, "\(loud.count) and \(quiet.count) frames recorded")
            let ratio = Analysis.rms(Array(quiet[2_400..<12_000])) / Analysis.rms(Array(loud[2_400..<12_000]))
            #expect(abs(ratio - 0.25) < 0.01, "level ratio \(ratio)")
        }
    }
}
