import FoundationEssentials
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

@Suite struct SoundRegistryTests {
    let beep = Signal.sines([880], seconds: 0.05, rate: 48_000)

    /// Process-local IDs have a range of their own, so they can never name a persistent sound.
    @Test func processLocalIDsStartAtOneMillionAndIncrease() throws {
        let registry = SoundRegistry()
        let first = try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1)
        let second = try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1)
        #expect(first == 1_000_000)
        #expect(second == 1_000_001)
        #expect(SoundIDRange(first) == .processLocal)
        #expect(registry.soundIDs == [1_000_000, 1_000_001])
    }

    @Test func everyIDFallsInOneDocumentedRange() {
        #expect(SoundIDRange(999) == .unassigned)
        #expect(SoundIDRange(1000) == .system && SoundIDRange(1351) == .system)
        #expect(SoundIDRange(1352) == .unassigned)
        #expect(SoundIDRange(4095) == .vibrate)
        #expect(SoundIDRange(4096) == .unassigned)
        #expect(SoundIDRange(4097) == .persistent && SoundIDRange(999_999) == .persistent)
        #expect(SoundIDRange(1_000_000) == .processLocal && SoundIDRange(1_999_999_999) == .processLocal)
        #expect(SoundIDRange(2_000_000_000) == .service && SoundIDRange(.max) == .service)
    }

    @Test func disposedIDsAreNeverReused() throws {
        let registry = SoundRegistry()
        let first = try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1)
        try registry.dispose(first)
        let second = try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1)
        #expect(second != first)
        #expect(registry.sound(first) == nil)
    }

    @Test func disposingAnUnknownIDIsAnError() throws {
        let registry = SoundRegistry()
        let id = try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1)
        try registry.dispose(id)
        let error = #expect(throws: RegistryError.self) { try registry.dispose(id) }
        #expect(error?.reason == .unknownSoundID(id))
        #expect(error?.description.hasPrefix("sound \(id): no sound has ID \(id) in this process") == true)
        #expect(throws: RegistryError.self) { try registry.duration(of: 1007) }
    }

    @Test func lookupAndDuration() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("tone.flac")
        let samples = Signal.sines([440, 660], seconds: 0.5, rate: 44_100)
        try SoundFileWriter.write(Signal.buffer(samples, channels: 2, rate: 44_100), to: path, format: .flac16)

        let registry = SoundRegistry()
        let fromPath = try registry.register(fileAt: path)
        let fromURL = try registry.register(contentsOf: URL(filePath: path))
        let fromMemory = try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1, name: "beep")

        let sound = try #require(registry.sound(fromPath))
        #expect(sound.id == fromPath)
        #expect(sound.source == .file(path: path))
        #expect(sound.sourceFormat == .flac16)
        #expect(sound.buffer.sampleRate == 48_000)
        #expect(sound.buffer.channelCount == 2)
        #expect(try registry.duration(of: fromPath) == 0.5)
        #expect(registry.sound(fromURL)?.buffer == sound.buffer)
        #expect(registry.sound(fromMemory)?.source == .memory(name: "beep"))
        #expect(registry.sound(fromMemory)?.sourceFormat == nil)
        #expect(try registry.duration(of: fromMemory) == 0.05)
    }

    @Test func aFailedRegistrationRegistersNothingAndUsesNoID() throws {
        let registry = SoundRegistry()
        #expect(throws: RegistryError.self) { try registry.register(fileAt: "/nonexistent.wav") }
        #expect(throws: RegistryError.self) { try registry.register(samples: [], sampleRate: 48_000, channelCount: 1) }
        #expect(registry.soundIDs.isEmpty)
        #expect(try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1) == 1_000_000)
    }

    @Test func theThirtySecondLimitApplies() {
        let registry = SoundRegistry()
        let long = [Float](repeating: 0, count: 8_000 * 31)
        let error = #expect(throws: RegistryError.self) {
            try registry.register(samples: long, sampleRate: 8_000, channelCount: 1)
        }
        #expect(error?.reason == .sound(SoundError(.exceedsMaximumDuration(seconds: 31, limit: 30), source: "in-memory sound")))
    }

    @Test func idsRunOutInsteadOfWrapping() throws {
        let last = SoundIDRange.processLocalIDs.upperBound
        let registry = SoundRegistry(decoder: SoundDecoder(), firstID: last)
        #expect(try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1) == last)
        let error = #expect(throws: RegistryError.self) {
            try registry.register(samples: beep, sampleRate: 48_000, channelCount: 1)
        }
        #expect(error?.reason == .soundIDsExhausted)
    }

    /// 16 threads creating and disposing at once, from files and from memory, while others
    /// look sounds up. Every ID is unique, every sound is the one registered, nothing is left over.
    @Test func sixteenThreadsCreatingAndDisposing() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shared.wav")
        let fileSamples = Signal.sines([500, 700], seconds: 0.1, rate: 44_100)
        try SoundFileWriter.write(Signal.buffer(fileSamples, channels: 2, rate: 44_100), to: path, format: .wav16)

        let registry = SoundRegistry()
        let issued = Lock<[SystemSoundID]>([])
        let failures = Lock<[String]>([])
        let beep = self.beep
        onThreads(16) { thread in
            for round in 0..<25 {
                do {
                    let id: SystemSoundID
                    let expectedFrames: Int
                    if (thread + round) % 3 == 0 {
                        id = try registry.register(fileAt: path)
                        expectedFrames = 4_800
                    } else {
                        let tagged = beep.map { $0 * Float(thread + 1) / 16 }
                        id = try registry.register(samples: tagged, sampleRate: 48_000, channelCount: 1, name: "t\(thread)")
                        expectedFrames = beep.count
                    }
                    issued.withLock { $0.append(id) }
                    guard let sound = registry.sound(id), sound.buffer.frameCount == expectedFrames else {
                        failures.withLock { $0.append("sound \(id) missing or wrong right after registering") }
                        continue
                    }
                    _ = registry.soundIDs
                    if round % 5 != 4 { try registry.dispose(id) }
                } catch {
                    failures.withLock { $0.append("thread \(thread): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let ids = issued.withLock { $0 }
        #expect(ids.count == 400)
        #expect(Set(ids).count == 400, "IDs must be unique")
        #expect(ids.allSatisfy { SoundIDRange($0) == .processLocal })
        // Every fifth round kept its sound: 16 threads × 5.
        #expect(registry.soundIDs.count == 80)
        for id in registry.soundIDs { try registry.dispose(id) }
        #expect(registry.soundIDs.isEmpty)
    }
}
