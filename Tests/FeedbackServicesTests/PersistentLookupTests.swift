import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

/// One ID space: a `SoundRegistry` sees the persistent registry's sounds by their numbers, follows
/// changes to the file, and keeps decoded sounds within a budget.
@Suite struct PersistentLookupTests {
    let directory = TemporaryDirectory()

    var file: SoundRegistryFile { SoundRegistryFile(path: directory.path + "/data/feedbackservices/registry.json") }

    func tone(_ name: String, frequency: Double, seconds: Double = 0.2) throws -> String {
        let path = directory.file(name)
        let samples = Signal.sines([frequency], amplitude: 0.5, seconds: seconds, rate: 48_000)
        try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: 48_000), to: path, format: .wav16)
        return path
    }

    @Test func persistentSoundsAreSeenByNumberAndFollowTheFile() throws {
        let file = file
        let registry = SoundRegistry(persistentRegistry: file)
        let low = try tone("low.wav", frequency: 300)
        let entry = try file.register(fileAt: low)
        #expect(registry.contains(entry.id))
        let sound = try registry.lookup(entry.id)
        #expect(sound.id == entry.id && sound.source == .file(path: low))
        #expect(abs(Analysis.frequency(of: sound.buffer.samples, rate: 48_000) - 300) < 5)

        // A level stored by another process (feedbackctl volume) applies at the next lookup.
        try file.setVolume(VolumeAdjustment(multiplier: 0.5, limiting: .clip), for: entry.id)
        #expect(abs(try registry.lookup(entry.id).buffer.peak - sound.buffer.peak * 0.5) < 0.001)

        // The sound file replaced under the same path is decoded again.
        _ = try tone("low.wav", frequency: 900, seconds: 0.3)
        #expect(abs(try registry.lookup(entry.id).duration - 0.3) < 0.001)

        // Unregistered elsewhere: gone here, with a message that says where it was looked for.
        try file.unregister(entry.id)
        #expect(!registry.contains(entry.id))
        let error = #expect(throws: RegistryError.self) { try registry.lookup(entry.id) }
        #expect(error?.reason == .unknownSoundID(entry.id))
        #expect(error?.description.contains("in the persistent registry") == true)
    }

    @Test func setVolumeOnAPersistentSoundIsStoredForEveryProcess() throws {
        let file = file
        let entry = try file.register(fileAt: try tone("tone.wav", frequency: 440))
        let registry = SoundRegistry(persistentRegistry: file)
        let original = try registry.lookup(entry.id).buffer.peak
        let adjusted = try registry.setVolume(0.25, for: entry.id)
        #expect(abs(adjusted.buffer.peak - original * 0.25) < 0.001)
        #expect(try file.sound(entry.id).volume.multiplier == 0.25)
        let elsewhere = SoundRegistry(persistentRegistry: file)
        #expect(abs(try elsewhere.lookup(entry.id).buffer.peak - original * 0.25) < 0.001)
    }

    @Test func aProcessCannotDisposeOfAPersistentSound() throws {
        let file = file
        let entry = try file.register(fileAt: try tone("tone.wav", frequency: 440))
        let registry = SoundRegistry(persistentRegistry: file)
        let error = #expect(throws: RegistryError.self) { try registry.dispose(entry.id) }
        #expect(error?.reason == .persistentSoundID(entry.id))
        #expect(try file.sound(entry.id).id == entry.id)
        #expect(registry.contains(entry.id))
    }

    @Test func processLocalAndPersistentIDsNeverMeet() throws {
        let file = file
        let entry = try file.register(fileAt: try tone("tone.wav", frequency: 440))
        let registry = SoundRegistry(persistentRegistry: file)
        let local = try registry.register(fileAt: try tone("local.wav", frequency: 600))
        #expect(local != entry.id)
        #expect(SoundIDRange(local) == .processLocal && SoundIDRange(entry.id) == .persistent)
        #expect(registry.soundIDs == [local])
        #expect(try registry.lookup(entry.id).source != registry.lookup(local).source)
        // Without a persistent registry, a persistent ID names nothing.
        #expect(!SoundRegistry().contains(entry.id))
    }

    @Test func aDamagedRegistryIsReportedByTheLookup() throws {
        let file = file
        _ = try file.register(fileAt: try tone("tone.wav", frequency: 440))
        try AtomicFile.write(Array("not json".utf8), to: file.path, mode: 0o600)
        let error = #expect(throws: RegistryError.self) { try SoundRegistry(persistentRegistry: file).lookup(4097) }
        #expect(error?.reason == .registryDamaged)
    }

    @Test func theDecodedSoundCacheKeepsItsBudgetAndFollowsFiles() throws {
        let cache = DecodedSoundCache<String, Int>(byteLimit: 100)
        let a = try tone("a.wav", frequency: 300)
        let b = try tone("b.wav", frequency: 400)
        let c = try tone("c.wav", frequency: 500)
        cache.insert(1, for: a, stamp: FileStamp(path: a), bytes: 40)
        cache.insert(2, for: b, stamp: FileStamp(path: b), bytes: 40)
        #expect(cache.value(for: a, stamp: FileStamp(path: a)) == 1)  // a is now the most recent
        cache.insert(3, for: c, stamp: FileStamp(path: c), bytes: 40)
        #expect(cache.byteCount == 80)
        #expect(cache.value(for: b, stamp: FileStamp(path: b)) == nil, "the least recently used goes first")
        #expect(cache.value(for: a, stamp: FileStamp(path: a)) == 1)
        cache.insert(4, for: "huge", stamp: FileStamp(path: a), bytes: 101)
        #expect(cache.value(for: "huge", stamp: FileStamp(path: a)) == nil, "a value over the budget is not kept")
        _ = try tone("a.wav", frequency: 300, seconds: 0.4)
        #expect(cache.value(for: a, stamp: FileStamp(path: a)) == nil, "a changed file is decoded again")
        #expect(cache.value(for: a, stamp: nil) == nil)
    }
}
