import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// The persistent registry: the file's contents, its mode, IDs, refusal to touch a damaged file,
/// the lock, and many writers at once.
@Suite struct SoundRegistryFileTests {
    let directory = TemporaryDirectory()

    var registryPath: String { directory.path + "/data/feedbackservices/registry.json" }

    func tone(_ name: String = "tone.wav", seconds: Double = 0.25) throws -> String {
        let path = directory.file(name)
        let samples = Signal.sines([440], seconds: seconds, rate: 48_000)
        try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: 48_000), to: path, format: .wav16)
        return path
    }

    func bytes(_ path: String) -> [UInt8]? {
        try? AtomicFile.read(path, limit: 1 << 20)
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    @Test func theDefaultPathFollowsXDG() {
        #expect(
            SoundRegistryFile.defaultPath(environment: ["XDG_DATA_HOME": "/d", "HOME": "/h"])
                == "/d/feedbackservices/registry.json")
        #expect(
            SoundRegistryFile.defaultPath(environment: ["XDG_DATA_HOME": "rel", "HOME": "/h"])
                == "/h/.local/share/feedbackservices/registry.json")
        #expect(SoundRegistryFile.defaultPath(environment: [:]) == nil)
        #expect(throws: SoundError.self) { try SoundRegistryFile(environment: [:]) }
    }

    @Test func aMissingFileIsAnEmptyRegistryAndReadingCreatesNothing() throws {
        let registry = SoundRegistryFile(path: registryPath)
        #expect(try registry.sounds().isEmpty)
        #expect(access(directory.path + "/data", F_OK) != 0)
        let error = #expect(throws: SoundError.self) { try registry.sound(4097) }
        #expect(error?.reason == .unknownSoundID(4097))
    }

    @Test func registersPersistsAndNeverReusesIDs() throws {
        let path = try tone()
        let registry = SoundRegistryFile(path: registryPath)
        let first = try registry.register(fileAt: path)
        let second = try registry.register(fileAt: path, volume: VolumeAdjustment(multiplier: 0.5, limiting: .peakLimiter()))
        #expect(first.id == 4097 && second.id == 4098)
        #expect(first.path == path && first.duration == 0.25 && first.registered?.hasSuffix("Z") == true)
        #expect(mode(registryPath) == 0o600)
        #expect(mode(directory.path + "/data/feedbackservices") == 0o700)

        // Another instance (another process) reads the same.
        let again = SoundRegistryFile(path: registryPath)
        #expect(try again.sounds() == [first, second])
        #expect(try again.sound(4098).volume == VolumeAdjustment(multiplier: 0.5, limiting: .peakLimiter()))

        #expect(try again.unregister(4097) == first)
        let third = try registry.register(fileAt: path)
        #expect(third.id == 4099)
        #expect(try registry.sounds().map(\.id) == [4098, 4099])
        let error = #expect(throws: SoundError.self) { try registry.unregister(4097) }
        #expect(error?.reason == .unknownSoundID(4097))
        #expect(mode(registryPath) == 0o600)
    }

    @Test func aRelativePathIsStoredAbsolute() throws {
        _ = try tone()
        let saved = FileManager.default.currentDirectoryPath
        defer { _ = FileManager.default.changeCurrentDirectoryPath(saved) }
        #expect(FileManager.default.changeCurrentDirectoryPath(directory.path))
        mkdir(directory.path + "/sub", 0o700)
        let sound = try SoundRegistryFile(path: registryPath).register(fileAt: "./sub/../tone.wav")
        #expect(sound.path == directory.path + "/tone.wav")
        let missing = #expect(throws: SoundError.self) { try SoundRegistryFile(path: registryPath).register(fileAt: "nowhere/x.wav") }
        #expect(missing?.reason == .notFound)
    }

    @Test func decodeAppliesTheStoredVolume() throws {
        let path = try tone()
        let registry = SoundRegistryFile(path: registryPath)
        let sound = try registry.register(fileAt: path)
        let full = try registry.decode(sound.id)
        try registry.setVolume(VolumeAdjustment(multiplier: 0.5), for: sound.id)
        let half = try registry.decode(sound.id)
        #expect(abs(half.peak - full.peak / 2) < 1e-6)
        #expect(try registry.sound(sound.id).volume.multiplier == 0.5)

        // The file went away: the decoder's error names it.
        unlink(path)
        let error = #expect(throws: SoundError.self) { try registry.decode(sound.id) }
        #expect(error?.reason == .notFound && error?.source == path)
    }

    @Test func aFileThatIsNotASoundRegistersNothing() throws {
        let registry = SoundRegistryFile(path: registryPath)
        let text = directory.write(Array("hello".utf8), to: "notes.wav")
        let error = #expect(throws: SoundError.self) { try registry.register(fileAt: text) }
        #expect(error?.reason == .notASoundFile)
        let long = try tone("long.wav", seconds: 31)
        let tooLong = #expect(throws: SoundError.self) { try registry.register(fileAt: long) }
        if case .exceedsMaximumDuration = tooLong?.reason {} else { Issue.record("\(String(describing: tooLong))") }
        #expect(access(registryPath, F_OK) != 0, "nothing was written")
    }

    @Test(arguments: [
        ("this is not json", "not JSON"),
        (#"{"format": 2, "nextID": 4097, "sounds": []}"#, "format 2"),
        (#"{"format": 1, "sounds": []}"#, "nextID is missing"),
        (#"{"format": 1, "nextID": 0, "sounds": []}"#, "nextID 0 is below 4097"),
        (#"{"format": 1, "nextID": "x", "sounds": []}"#, "nextID has the wrong type"),
        (#"{"format": 1, "nextID": 4100, "sounds": [{"id": 4097, "path": "/a.wav", "volume": 1, "duration": 1}, {"id": 4097, "path": "/b.wav", "volume": 1, "duration": 1}]}"#, "ID 4097 appears twice"),
        (#"{"format": 1, "nextID": 4097, "sounds": [{"id": 4097, "path": "/a.wav", "volume": 1, "duration": 1}]}"#, "not below nextID"),
        (#"{"format": 1, "nextID": 4099, "sounds": [{"id": 1007, "path": "/a.wav", "volume": 1, "duration": 1}]}"#, "below 4097"),
        (#"{"format": 1, "nextID": 4099, "sounds": [{"id": 4097, "path": "a.wav", "volume": 1, "duration": 1}]}"#, "relative path"),
        (#"{"format": 1, "nextID": 4099, "sounds": [{"id": 4097, "path": "/a.wav", "volume": -1, "duration": 1}]}"#, "volume -1"),
        (#"{"format": 1, "nextID": 4099, "sounds": [{"id": 4097, "path": "/a.wav", "volume": 1, "limiter": 3, "duration": 1}]}"#, "limiter ceiling 3"),
        (#"{"format": 1, "nextID": 4099, "sounds": [{"id": 4097, "path": "/etc/passwd\u0000.wav", "volume": 1, "duration": 1}]}"#, "control character in its path"),
        (#"{"format": 1, "nextID": 4099, "sounds": [{"id": 4097, "path": "/a\n.wav", "volume": 1, "duration": 1}]}"#, "control character in its path"),
        (#"{"format": 1, "nextID": 4099, "sounds": [{"id": 4097, "path": "/a.wav", "volume": 1, "duration": -3}]}"#, "duration -3"),
        (#"{"format": 1, "nextID": 1000001, "sounds": []}"#, "nextID 1000001 is above 1000000"),
    ])
    func aDamagedFileIsAnErrorAndIsNeverWrittenOver(contents: String, why: String) throws {
        let path = try tone()
        try AtomicFile.makeDirectories(directory.path + "/data/feedbackservices", mode: 0o700)
        try AtomicFile.write(Array(contents.utf8), to: registryPath, mode: 0o600)
        let registry = SoundRegistryFile(path: registryPath)
        for attempt in [
            { _ = try registry.sounds() }, { _ = try registry.register(fileAt: path) }, { _ = try registry.unregister(4097) },
            { _ = try registry.setVolume(.unchanged, for: 4097) },
        ] as [() throws -> Void] {
            let error = #expect(throws: SoundError.self) { try attempt() }
            #expect(error?.reason == .registryDamaged)
            #expect(error?.description.contains(registryPath) == true)
            #expect(error?.detail?.contains(why) == true, "\(String(describing: error?.detail))")
        }
        #expect(bytes(registryPath) == Array(contents.utf8))
    }

    @Test func aHeldLockIsWaitedForThenReportedBusy() throws {
        let path = try tone()
        let registry = SoundRegistryFile(path: registryPath, lockTimeout: 0.2)
        try registry.register(fileAt: path)
        let lock = open(registryPath + ".lock", O_RDWR)
        #expect(flock(lock, LOCK_EX) == 0)
        let start = MonotonicClock.now
        let error = #expect(throws: SoundError.self) { try registry.register(fileAt: path) }
        guard case .registryBusy(let waited)? = error?.reason else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(waited >= 0.2 && MonotonicClock.now - start < 2)
        #expect(try registry.sounds().count == 1, "reading takes no lock")
        // Released while a writer waits: the writer goes on.
        let patient = SoundRegistryFile(path: registryPath, lockTimeout: 5)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { close(lock) }
        #expect(try patient.register(fileAt: path).id == 4098)
    }

    @Test func manyThreadsRegisteringAtOnceAllLand() async throws {
        let path = try tone()
        let ids = await withTaskGroup(of: SystemSoundID?.self) { group in
            for _ in 0..<16 {
                group.addTask { try? SoundRegistryFile(path: registryPath).register(fileAt: path).id }
            }
            return await group.reduce(into: [SystemSoundID?]()) { $0.append($1) }
        }
        #expect(ids.compactMap { $0 }.sorted() == Array(4097...4112))
        #expect(try SoundRegistryFile(path: registryPath).sounds().map(\.id) == Array(4097...4112))
    }

    /// A newer version's keys survive a change made by this one.
    @Test func keysThisVersionDoesNotKnowAreKept() throws {
        let path = try tone()
        try AtomicFile.makeDirectories(directory.path + "/data/feedbackservices", mode: 0o700)
        let original = #"{"format": 1, "nextID": 4098, "origin": {"tool": "x", "n": [1, 2.5, null, true]}, "sounds": [{"id": 4097, "path": "/a.wav", "volume": 1, "duration": 1, "colour": "red"}]}"#
        try AtomicFile.write(Array(original.utf8), to: registryPath, mode: 0o600)
        let registry = SoundRegistryFile(path: registryPath)
        _ = try registry.register(fileAt: path)
        let text = String(decoding: try #require(bytes(registryPath)), as: UTF8.self)
        #expect(text.contains(#""origin""#) && text.contains(#""tool" : "x""#) && text.contains("2.5") && text.contains("true"), "\(text)")
        #expect(text.contains(#""colour" : "red""#), "\(text)")
        #expect(try registry.sounds().map(\.id) == [4097, 4098])
        try registry.unregister(4097)
        #expect(!String(decoding: try #require(bytes(registryPath)), as: UTF8.self).contains("colour"))
    }

    /// A writer killed between creating its temporary file and renaming it leaves the file behind;
    /// the next change, holding the lock no live writer holds, removes it.
    @Test func temporariesOfKilledWritersAreRemoved() throws {
        let registry = SoundRegistryFile(path: registryPath)
        _ = try registry.register(fileAt: try tone())
        let stale = registryPath + ".tmp-999999-42"
        try AtomicFile.write(Array("{".utf8), to: stale, mode: 0o600)
        _ = try registry.register(fileAt: try tone())
        #expect(access(stale, F_OK) != 0)
        #expect(try registry.sounds().count == 2)
    }

    /// A registry the user made read-only is left as it is, mode included.
    @Test func aReadOnlyRegistryIsNotReplaced() throws {
        let registry = SoundRegistryFile(path: registryPath)
        _ = try registry.register(fileAt: try tone())
        chmod(registryPath, 0o400)
        let before = bytes(registryPath)
        let error = #expect(throws: SoundError.self) { try registry.register(fileAt: try tone()) }
        #expect(error?.reason == .permissionDenied)
        #expect(error?.description.contains("read-only") == true)
        #expect(bytes(registryPath) == before)
        #expect(mode(registryPath) == 0o400)
    }
}
