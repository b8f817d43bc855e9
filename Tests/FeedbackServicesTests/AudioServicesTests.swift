import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import Testing
import FeedbackTestSupport

@testable import FeedbackServices

/// Counts the calls of the C completion routine; reached through its client data.
final class ProcCalls: Sendable {
    let calls = Lock<[(SystemSoundID, Bool)]>([])
    let semaphore = DispatchSemaphore(value: 0)

    func wait(timeout: Double = 5) -> Bool { semaphore.wait(timeout: .now() + timeout) == .success }
    var count: Int { calls.withLock { $0.count } }
}

let procQueueKey = DispatchSpecificKey<String>()

/// A C completion routine, as Apple code writes one: no captures, state through the client data.
let countingProc: AudioServicesSystemSoundCompletionProc = { id, clientData in
    let calls = Unmanaged<ProcCalls>.fromOpaque(clientData!).takeUnretainedValue()
    let onQueue = DispatchQueue.getSpecific(key: procQueueKey) == "proc"
    calls.calls.withLock { $0.append((id, onQueue)) }
    calls.semaphore.signal()
}

/// Waits for a completion block.
final class BlockCalls: Sendable {
    let count = Atomic(0)
    let semaphore = DispatchSemaphore(value: 0)
    var block: @Sendable () -> Void {
        { [self] in
            count.add(1, ordering: .relaxed)
            semaphore.signal()
        }
    }
    func wait(timeout: Double = 5) -> Bool { semaphore.wait(timeout: .now() + timeout) == .success }
}

extension AudioServerSuites {
    /// The AudioServices facade, on `FeedbackManager.shared` playing to a private PulseAudio server.
    @Suite(.serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
    struct AudioServicesTests {
        static let engine = Lock<PulseAudioOutput?>(nil)
        static let noDevices = TemporaryDirectory()
        let server: PulseAudioTestServer
        let directory = TemporaryDirectory()
        let rate = 48_000

        init() throws {
            server = try PulseAudioTestServer.shared(named: "audioServices")
            let server = server
            let output = try Self.engine.withLock { engine in
                if let engine { return engine }
                let created = PulseAudioOutput(configuration: .init(server: server.server))
                try created.prepare()
                engine = created
                return created
            }
            FeedbackManager.shared.audioOutput = output
            FeedbackManager.shared.vibrator = .discovery(VibratorDiscovery(directory: Self.noDevices.path))
            FeedbackManager.shared.profileOverride = .full
        }

        func chirpFile(seconds: Double = 0.3, name: String = "chirp.wav") throws -> String {
            let frames = Int(seconds * Double(rate))
            let samples: [Float] = (0..<frames).map { frame in
                let t = Double(frame) / Double(rate)
                return 0.4 * Float(min(1, t * 50, (seconds - t) * 50) * sin(2 * .pi * (300 * t + 1_200 * t * t)))
            }
            let path = directory.file(name)
            try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: rate), to: path, format: .wavFloat)
            return path
        }

        func create(_ path: String) throws -> SystemSoundID {
            var id: SystemSoundID = 0
            #expect(AudioServicesCreateSystemSoundID(path, &id) == kAudioServicesNoError)
            return id
        }

        /// Runs `body`, waits for `calls`, and returns what reached the server (nil: nothing).
        func recorded(waitingFor calls: BlockCalls, _ body: () -> Void) -> [Float]? {
            let mark = server.recorder.frameCount
            body()
            #expect(calls.wait())
            server.recorder.wait(seconds: 0.05)
            return server.recorder.firstSound(after: mark, timeout: 0.3).map { server.recorder.channel(0, from: $0) }
        }

        @Test func constantsHaveApplesValues() {
            #expect(kAudioServicesNoError == 0)
            #expect(kAudioServicesUnsupportedPropertyError == 0x7074_793F)  // 'pty?'
            #expect(kAudioServicesBadPropertySizeError == 0x2173_697A)  // '!siz'
            #expect(kAudioServicesBadSpecifierSizeError == 0x2173_7063)  // '!spc'
            #expect(kAudioServicesSystemSoundUnspecifiedError == -1500)
            #expect(kAudioServicesSystemSoundClientTimedOutError == -1501)
            #expect(kAudioServicesSystemSoundExceededMaximumDurationError == -1502)
            #expect(kAudioServicesPropertyIsUISound == 0x6973_7569)  // 'isui'
            #expect(kAudioServicesPropertyCompletePlaybackIfAppDies == 0x6966_6469)  // 'ifdi'
            #expect(kSystemSoundID_Vibrate == 4095)
            #expect(kSystemSoundID_UserPreferredAlert == 4096 && kSystemSoundID_FlashScreen == 4094)
            #expect(MemoryLayout<OSStatus>.size == 4 && OSStatus.min < 0)
            #expect(MemoryLayout<DarwinBoolean>.size == 1)
        }

        @Test func createFromAURLAndAPath() throws {
            let path = try chirpFile()
            var fromURL: SystemSoundID = 0
            #expect(AudioServicesCreateSystemSoundID(URL(fileURLWithPath: path), &fromURL) == kAudioServicesNoError)
            let fromPath = try create(path)
            #expect(SoundIDRange(fromURL) == .processLocal && fromPath > fromURL)
            #expect(SoundRegistry.shared.sound(fromURL) != nil)
            #expect(AudioServicesDisposeSystemSoundID(fromURL) == kAudioServicesNoError)
            #expect(AudioServicesDisposeSystemSoundID(fromPath) == kAudioServicesNoError)
        }

        @Test func createFailuresLeaveTheIDUnchanged() throws {
            var id: SystemSoundID = 77
            #expect(AudioServicesCreateSystemSoundID(directory.file("missing.wav"), &id) == kAudioServicesSystemSoundUnspecifiedError)
            let text = directory.file("text.wav")
            _ = FileManager.default.createFile(atPath: text, contents: Data("not a sound".utf8))
            #expect(AudioServicesCreateSystemSoundID(URL(fileURLWithPath: text), &id) == kAudioServicesSystemSoundUnspecifiedError)
            let long = directory.file("long.wav")
            try SoundFileWriter.write(
                Signal.buffer([Float](repeating: 0.1, count: 8_000 * 31), channels: 1, rate: 8_000), to: long, format: .wav16)
            #expect(AudioServicesCreateSystemSoundID(long, &id) == kAudioServicesSystemSoundExceededMaximumDurationError)
            #expect(id == 77)
        }

        @Test func disposeTwiceOrASystemSoundIsAnError() throws {
            let id = try create(try chirpFile())
            #expect(AudioServicesDisposeSystemSoundID(id) == kAudioServicesNoError)
            #expect(AudioServicesDisposeSystemSoundID(id) == kAudioServicesSystemSoundUnspecifiedError)
            #expect(AudioServicesDisposeSystemSoundID(1007) == kAudioServicesSystemSoundUnspecifiedError)
        }

        @Test func playSystemSoundReachesTheServer() throws {
            let path = try chirpFile()
            let id = try create(path)
            defer { _ = AudioServicesDisposeSystemSoundID(id) }
            let calls = BlockCalls()
            let recording = recorded(waitingFor: calls) { AudioServicesPlaySystemSoundWithCompletion(id, calls.block) }
            let played = try #require(recording, "nothing reached the server")
            let match = Analysis.bestCorrelation(SoundRegistry.shared.sound(id)!.buffer.samples, played, lags: -100...100)
            #expect(match.value >= 0.99)
            #expect(calls.count.load(ordering: .relaxed) == 1)

            // The plain call plays too; a completion routine tells when it ended.
            let proc = ProcCalls()
            let data = Unmanaged.passRetained(proc).toOpaque()
            defer { Unmanaged<ProcCalls>.fromOpaque(data).release() }
            #expect(AudioServicesAddSystemSoundCompletion(id, nil, nil, countingProc, data) == kAudioServicesNoError)
            let mark = server.recorder.frameCount
            AudioServicesPlaySystemSound(id)
            #expect(proc.wait())
            #expect(server.recorder.firstSound(after: mark, timeout: 0.3) != nil)
            AudioServicesRemoveSystemSoundCompletion(id)
        }

        /// One ID space: sounds `feedbackctl register` makes in the persistent registry play in a
        /// process that was already running, by the number the command printed, and a registration
        /// made after this process last looked is seen (the file is read again when it changes).
        @Test func soundsRegisteredByTheCLIPlayHereByTheirNumber() throws {
            let data = TemporaryDirectory()
            let saved = SoundRegistry.shared.persistentRegistry
            SoundRegistry.shared.persistentRegistry = SoundRegistryFile(path: "\(data.path)/feedbackservices/registry.json")
            defer { SoundRegistry.shared.persistentRegistry = saved }
            func register(_ path: String) throws -> SystemSoundID {
                let run = runProcess(feedbackctlBinary, ["register", path], environment: ["XDG_DATA_HOME=\(data.path)"])
                #expect(run.status == 0, "\(run.errors)")
                return try #require(SystemSoundID(run.output.trimmingCharacters(in: .whitespacesAndNewlines)))
            }
            func play(_ id: SystemSoundID) -> [Float]? {
                let calls = BlockCalls()
                return recorded(waitingFor: calls) { AudioServicesPlaySystemSoundWithCompletion(id, calls.block) }
            }

            let first = try chirpFile(seconds: 0.25, name: "first.wav")
            let firstID = try register(first)
            #expect(SoundIDRange(firstID) == .persistent)
            let firstPlayed = try #require(play(firstID), "the registered sound did not reach the server")
            let firstSamples = try SoundDecoder().decode(fileAt: first).buffer.samples
            #expect(Analysis.bestCorrelation(firstSamples, firstPlayed, lags: -100...100).value >= 0.99)

            // The next ID is not registered yet: nothing plays, and the completion still runs.
            #expect(play(firstID + 1) == nil)
            let second = try chirpFile(seconds: 0.4, name: "second.wav")
            let secondID = try register(second)
            #expect(secondID == firstID + 1)
            let secondPlayed = try #require(play(secondID), "a sound registered after the last lookup did not play")
            let secondSamples = try SoundDecoder().decode(fileAt: second).buffer.samples
            #expect(Analysis.bestCorrelation(secondSamples, secondPlayed, lags: -100...100).value >= 0.99)

            // A process cannot dispose of a persistent sound; the registry keeps it.
            #expect(AudioServicesDisposeSystemSoundID(secondID) == kAudioServicesSystemSoundUnspecifiedError)
            #expect(SoundRegistry.shared.contains(secondID))
            let unregister = runProcess(feedbackctlBinary, ["unregister", "\(secondID)"], environment: ["XDG_DATA_HOME=\(data.path)"])
            #expect(unregister.status == 0, "\(unregister.errors)")
            #expect(!SoundRegistry.shared.contains(secondID))
        }

        @Test func completionBlocksRunForEveryAttempt() throws {
            // An unknown ID, an unassigned system sound, Apple's macOS-only alert IDs, and the silent
            // profile: nothing plays, the block runs.
            for id: SystemSoundID in [9_999_999, 1017, kSystemSoundID_UserPreferredAlert, kSystemSoundID_FlashScreen] {
                let calls = BlockCalls()
                #expect(recorded(waitingFor: calls) { AudioServicesPlaySystemSoundWithCompletion(id, calls.block) } == nil)
                let alert = BlockCalls()
                #expect(recorded(waitingFor: alert) { AudioServicesPlayAlertSoundWithCompletion(id, alert.block) } == nil)
            }
            let id = try create(try chirpFile())
            defer { _ = AudioServicesDisposeSystemSoundID(id) }
            FeedbackManager.shared.profileOverride = .silent
            defer { FeedbackManager.shared.profileOverride = .full }
            let calls = BlockCalls()
            #expect(recorded(waitingFor: calls) { AudioServicesPlaySystemSoundWithCompletion(id, calls.block) } == nil)
            // A nil block is allowed.
            AudioServicesPlaySystemSoundWithCompletion(id, nil)
        }

        @Test func alertSoundFollowsTheProfile() throws {
            let id = try create(try chirpFile())
            defer { _ = AudioServicesDisposeSystemSoundID(id) }
            // Full, no vibrator: the sound plays.
            let full = BlockCalls()
            #expect(recorded(waitingFor: full) { AudioServicesPlayAlertSoundWithCompletion(id, full.block) } != nil)
            // Quiet, no vibrator: nothing.
            FeedbackManager.shared.profileOverride = .quiet
            defer { FeedbackManager.shared.profileOverride = .full }
            let quiet = BlockCalls()
            #expect(recorded(waitingFor: quiet) { AudioServicesPlayAlertSoundWithCompletion(id, quiet.block) } == nil)
            let proc = ProcCalls()
            let data = Unmanaged.passRetained(proc).toOpaque()
            defer { Unmanaged<ProcCalls>.fromOpaque(data).release() }
            #expect(AudioServicesAddSystemSoundCompletion(id, nil, nil, countingProc, data) == kAudioServicesNoError)
            AudioServicesPlayAlertSound(id)
            #expect(proc.wait())
            AudioServicesRemoveSystemSoundCompletion(id)
        }

        @Test func completionRoutinesRunOnTheirQueueUntilRemoved() throws {
            let id = try create(try chirpFile(seconds: 0.05))
            defer { _ = AudioServicesDisposeSystemSoundID(id) }
            let proc = ProcCalls()
            let data = Unmanaged.passRetained(proc).toOpaque()
            defer { Unmanaged<ProcCalls>.fromOpaque(data).release() }
            let queue = DispatchQueue(label: "proc")
            queue.setSpecific(key: procQueueKey, value: "proc")
            #expect(AudioServicesAddSystemSoundCompletion(id, queue, "kCFRunLoopDefaultMode", countingProc, data) == kAudioServicesNoError)
            AudioServicesPlaySystemSound(id)
            #expect(proc.wait())
            let first = try #require(proc.calls.withLock { $0.first })
            #expect(first.0 == id && first.1, "called with the ID, on the given queue")

            AudioServicesRemoveSystemSoundCompletion(id)
            let calls = BlockCalls()
            AudioServicesPlaySystemSoundWithCompletion(id, calls.block)
            #expect(calls.wait())
            usleep(100_000)
            #expect(proc.count == 1, "a removed routine is not called")
            #expect(AudioServicesAddSystemSoundCompletion(9_999_999, nil, nil, countingProc, data) == kAudioServicesSystemSoundUnspecifiedError)
            // A disposed ID takes no routine.
            #expect(AudioServicesDisposeSystemSoundID(id) == kAudioServicesNoError)
            #expect(AudioServicesAddSystemSoundCompletion(id, nil, nil, countingProc, data) == kAudioServicesSystemSoundUnspecifiedError)
        }

        @Test func propertiesReadBackAndCheckSizes() throws {
            let id = try create(try chirpFile(seconds: 0.05))
            defer { _ = AudioServicesDisposeSystemSoundID(id) }
            var specifier = id
            var value: UInt32 = 99
            var size = UInt32(4)
            let idSize = UInt32(MemoryLayout<SystemSoundID>.size)
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, idSize, &specifier, &size, &value) == kAudioServicesNoError)
            #expect(value == 1 && size == 4)
            #expect(AudioServicesGetProperty(kAudioServicesPropertyCompletePlaybackIfAppDies, idSize, &specifier, &size, &value) == kAudioServicesNoError)
            #expect(value == 0)

            var newValue: UInt32 = 0
            #expect(AudioServicesSetProperty(kAudioServicesPropertyIsUISound, idSize, &specifier, 4, &newValue) == kAudioServicesNoError)
            newValue = 7
            #expect(AudioServicesSetProperty(kAudioServicesPropertyCompletePlaybackIfAppDies, idSize, &specifier, 4, &newValue) == kAudioServicesNoError)
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, idSize, &specifier, &size, &value) == kAudioServicesNoError)
            #expect(value == 0)
            #expect(AudioServicesGetProperty(kAudioServicesPropertyCompletePlaybackIfAppDies, idSize, &specifier, &size, &value) == kAudioServicesNoError)
            #expect(value == 1)

            var dataSize: UInt32 = 0
            var writable: DarwinBoolean = false
            #expect(AudioServicesGetPropertyInfo(kAudioServicesPropertyIsUISound, idSize, &specifier, &dataSize, &writable) == kAudioServicesNoError)
            #expect(dataSize == 4 && writable.boolValue)

            // Errors.
            #expect(AudioServicesGetProperty(0x7878_7878, idSize, &specifier, &size, &value) == kAudioServicesUnsupportedPropertyError)
            #expect(AudioServicesSetProperty(0x7878_7878, idSize, &specifier, 4, &newValue) == kAudioServicesUnsupportedPropertyError)
            #expect(AudioServicesGetPropertyInfo(0x7878_7878, idSize, &specifier, &dataSize, &writable) == kAudioServicesUnsupportedPropertyError)
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, 2, &specifier, &size, &value) == kAudioServicesBadSpecifierSizeError)
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, idSize, nil, &size, &value) == kAudioServicesBadSpecifierSizeError)
            #expect(AudioServicesSetProperty(kAudioServicesPropertyIsUISound, 8, &specifier, 4, &newValue) == kAudioServicesBadSpecifierSizeError)
            size = 8
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, idSize, &specifier, &size, &value) == kAudioServicesBadPropertySizeError)
            size = 4
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, idSize, &specifier, &size, nil) == kAudioServicesBadPropertySizeError)
            #expect(AudioServicesSetProperty(kAudioServicesPropertyIsUISound, idSize, &specifier, 2, &newValue) == kAudioServicesBadPropertySizeError)
            var unknown: SystemSoundID = 9_999_999
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, idSize, &unknown, &size, &value) == kAudioServicesSystemSoundUnspecifiedError)
            // System sound IDs have properties too.
            var system: SystemSoundID = 1007
            #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, idSize, &system, &size, &value) == kAudioServicesNoError)
            #expect(value == 1)
        }

        @Test func stopEndsAPlayingSystemSound() throws {
            let id = try create(try chirpFile(seconds: 3, name: "long.wav"))
            defer { _ = AudioServicesDisposeSystemSoundID(id) }
            let calls = BlockCalls()
            let started = MonotonicClock.now
            AudioServicesPlaySystemSoundWithCompletion(id, calls.block)
            usleep(300_000)
            #expect(AudioServicesStopSystemSound(id) == kAudioServicesNoError)
            #expect(calls.wait(timeout: 2))
            #expect(MonotonicClock.now - started < 1.5)
            server.recorder.wait(seconds: 0.2)
            let mark = server.recorder.frameCount
            #expect(server.recorder.firstSound(after: mark, timeout: 0.3) == nil, "silent after the stop")
            #expect(AudioServicesStopSystemSound(id) == kAudioServicesNoError)
        }
    }
}
