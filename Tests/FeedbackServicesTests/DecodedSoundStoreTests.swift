import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

/// The decoded sounds kept on disk between processes (`DecodedSoundStore`): a second process's
/// lookup reads what the first decoded; a changed file, a damaged, truncated, oversized or
/// symlinked entry, or another file's entry is a miss that decodes the file again, never a wrong
/// sound or a crash. (That `feedbackctl fire` then loads no libsndfile: OptionalLibraryTests.)
@Suite struct DecodedSoundStoreTests {
    let directory = TemporaryDirectory()
    var store: DecodedSoundStore { DecodedSoundStore(directory: directory.file("cache/feedbackservices/decoded")) }

    func tone(_ name: String, frequency: Double, seconds: Double = 0.2, channels: Int = 1) throws -> String {
        let path = directory.file(name)
        let samples = Signal.sines([frequency], amplitude: 0.5, seconds: seconds, rate: 48_000)
        let interleaved = channels == 1 ? samples : samples.flatMap { [$0, -$0] }
        try SoundFileWriter.write(Signal.buffer(interleaved, channels: channels, rate: 48_000), to: path, format: .wav16)
        return path
    }

    /// A resolver as a new process has it: an empty cache of its own, the store on disk.
    func lookUp(_ path: String) throws -> PCMBuffer {
        try Self.lookUp(path, in: store)
    }

    static func lookUp(_ path: String, in store: DecodedSoundStore) throws -> PCMBuffer {
        let resolver = AlertSoundResolver(registry: SoundRegistry(), store: store)
        let sound = try resolver.resolve(.file(path), themes: { () throws(SoundThemeError) -> SoundThemeResolver in
            throw SoundThemeError(.invalidThemeName, name: "", detail: "a file needs no theme")
        })
        return try #require(sound.buffer)
    }

    func decodedDirectly(_ path: String) throws -> PCMBuffer {
        try SoundDecoder().decode(fileAt: path).buffer
    }

    func entry(_ path: String) -> String { store.entryPath(for: path, sampleRate: 48_000) }

    /// "same", "other" or "none": a failed expectation prints a word, not thousands of samples.
    func compare(_ buffer: PCMBuffer?, _ expected: PCMBuffer) -> String {
        guard let buffer else { return "none" }
        return buffer == expected ? "same" : "other"
    }

    /// What the store holds for `path` as it is now.
    func stored(_ path: String, maximumFrames: Int = 48_000) -> PCMBuffer? {
        FileStamp(path: path).flatMap { store.read(path, stamp: $0, sampleRate: 48_000, maximumFrames: maximumFrames) }
    }

    @Test(arguments: [1, 2])
    func aSecondProcessReadsWhatTheFirstDecoded(channels: Int) throws {
        let path = try tone("a.wav", frequency: 440, channels: channels)
        let first = try lookUp(path)
        #expect(compare(first, try decodedDirectly(path)) == "same")
        var info = stat()
        #expect(stat(entry(path), &info) == 0, "the first decoding was not stored")
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(stat(store.directory, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(compare(stored(path), first) == "same")
        #expect(compare(try lookUp(path), first) == "same")
        // Only the engine's own rate is read: an engine at another rate decodes again.
        let stamp = try #require(FileStamp(path: path))
        #expect(compare(store.read(path, stamp: stamp, sampleRate: 44_100, maximumFrames: 48_000), first) == "none")
    }

    @Test func aChangedFileIsDecodedAgain() throws {
        let path = try tone("a.wav", frequency: 440)
        _ = try lookUp(path)
        // Same name, same length, other content: the stamp (inode, modification time) differs.
        let replacement = try tone("b.wav", frequency: 880)
        #expect(rename(replacement, path) == 0)
        let second = try lookUp(path)
        #expect(compare(second, try decodedDirectly(path)) == "same")
        #expect(compare(second, try decodedDirectly(try tone("c.wav", frequency: 440))) == "other")
    }

    @Test func anotherFilesEntryUnderTheSameNameIsAMiss() throws {
        let a = try tone("a.wav", frequency: 440)
        let b = try tone("b.wav", frequency: 880)
        _ = try lookUp(a)
        // b's entry name now holds a's entry (as a hash collision would).
        #expect(link(entry(a), entry(b)) == 0)
        #expect(stored(b) == nil, "b's entry holds a's sound")
        #expect(compare(try lookUp(b), try decodedDirectly(b)) == "same")
    }

    /// Each damage is a miss: the sound comes from its file, and the entry is written afresh.
    @Test(arguments: ["truncated", "one sample changed", "header changed", "not finite", "grown", "symlink", "directory"])
    func aDamagedEntryIsAMissAndIsReplaced(damage: String) throws {
        let path = try tone("a.wav", frequency: 440)
        let expected = try lookUp(path)
        let name = entry(path)
        let fd = open(name, O_RDWR)
        #expect(fd >= 0)
        var info = stat()
        fstat(fd, &info)
        let size = Int(info.st_size)
        func put(_ bytes: [UInt8], at offset: Int) { _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) } }
        switch damage {
        case "truncated": ftruncate(fd, off_t(size - 3))
        case "one sample changed": put([0x3f], at: size - 1)
        case "header changed": put([2], at: 16)  // two channels instead of one
        case "not finite": put([0x80, 0x7f], at: size - 2)  // the last sample becomes +inf (or a NaN)
        case "grown": put([0], at: size)
        case "symlink":
            close(fd)
            let elsewhere = directory.file("elsewhere.pcm")
            #expect(rename(name, elsewhere) == 0)
            #expect(symlink(elsewhere, name) == 0)
        default:
            close(fd)
            #expect(unlink(name) == 0)
            #expect(mkdir(name, 0o700) == 0)
        }
        if !["symlink", "directory"].contains(damage) { close(fd) }
        #expect(stored(path) == nil, "a damaged entry was used")
        #expect(compare(try lookUp(path), expected) == "same")
        if damage != "directory" {
            #expect(compare(stored(path), expected) == "same", "not written afresh")
        }
    }

    /// The checksum's pass also tells whether every sample is finite (two samples a word, with no
    /// branch): a NaN or an infinity anywhere — either half of a word, or an odd last sample — is
    /// caught, and no finite value is taken for one; the checksum sees every sample.
    @Test func theChecksumPassFindsEveryNonFiniteSample() {
        let finite: [Float] = [
            0, -0, 1, -1, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude,
            .leastNormalMagnitude, -.leastNonzeroMagnitude, 0.5, 3.4e38, Float(bitPattern: 0x7F7F_FFFF),
        ]
        for count in [0, 1, 2, 3, 12, 13] {
            let samples = Array((finite + finite).prefix(count))
            #expect(DecodedSoundStore.checksum(samples).allFinite, "\(count) finite samples")
            for position in samples.indices {
                for bad in [Float.nan, .infinity, -.infinity, Float(bitPattern: 0xFFC0_0001), Float(bitPattern: 0x7F80_0001)] {
                    var damaged = samples
                    damaged[position] = bad
                    #expect(!DecodedSoundStore.checksum(damaged).allFinite, "\(bad.bitPattern) at \(position) of \(count)")
                }
                var changed = samples
                changed[position] = changed[position] == 1 ? 2 : 1
                #expect(DecodedSoundStore.checksum(changed).value != DecodedSoundStore.checksum(samples).value)
            }
        }
    }

    /// An entry far over what a sound may take is refused by its size, before a byte is read.
    @Test func anOversizedEntryIsRefusedUnread() throws {
        let path = try tone("a.wav", frequency: 440)
        _ = try lookUp(path)
        #expect(truncate(entry(path), 1 << 40) == 0)  // sparse: a terabyte on no disk
        #expect(stored(path, maximumFrames: 48_000 * 30) == nil)
        #expect(compare(try lookUp(path), try decodedDirectly(path)) == "same")
    }

    /// A file in the store, its access and modification times set `secondsAgo` in the past.
    func filler(_ name: String, bytes: Int = 0, secondsAgo: Int) -> String {
        let path = "\(store.directory)/\(name)"
        #expect(close(open(path, O_CREAT | O_WRONLY, 0o600)) == 0)
        if bytes > 0 { #expect(truncate(path, off_t(bytes)) == 0) }  // sparse
        let when = timespec(tv_sec: time(nil) - secondsAgo, tv_nsec: 0)
        #expect(utimensat(AT_FDCWD, path, [when, when], 0) == 0)
        return path
    }

    /// A store full by count or by bytes makes room by removing the entries used least recently,
    /// never more than it needs, and not one used just now; an entry that is a miss in place is
    /// replaced; a store that cannot be made is no error.
    @Test func aFullStoreMakesRoomFromItsLeastRecentlyUsedEntries() throws {
        let path = try tone("a.wav", frequency: 440)
        #expect(mkdir(directory.file("cache"), 0o700) == 0)
        #expect(mkdir(directory.file("cache/feedbackservices"), 0o700) == 0)
        #expect(mkdir(store.directory, 0o700) == 0)
        // Full by count: 0.pcm is the least recently used.
        let count = DecodedSoundStore.maximumEntries
        let fillers = (0..<count).map { filler("\($0).pcm", secondsAgo: 10_000 - $0) }
        #expect(compare(try lookUp(path), try decodedDirectly(path)) == "same")
        #expect(compare(stored(path), try decodedDirectly(path)) == "same", "not stored in a store full by count")
        #expect(access(fillers[0], F_OK) != 0, "the least recently used entry stayed")
        #expect(fillers.dropFirst().allSatisfy { access($0, F_OK) == 0 }, "more than one entry went")
        fillers.forEach { unlink($0) }

        // Full by bytes (one sparse file of the whole budget, used long ago; another used just now
        // that must stay): the old one goes.
        let big = filler("big.pcm", bytes: DecodedSoundStore.maximumBytes - 4_096, secondsAgo: 10_000)
        let recent = filler("recent.pcm", bytes: 2_048, secondsAgo: 0)
        let other = try tone("other.wav", frequency: 660)
        #expect(compare(try lookUp(other), try decodedDirectly(other)) == "same")
        #expect(compare(stored(other), try decodedDirectly(other)) == "same", "not stored in a store full by bytes")
        #expect(access(big, F_OK) != 0, "the least recently used entry stayed")
        #expect(access(recent, F_OK) == 0, "a recently used entry went")
        #expect(compare(stored(path), try decodedDirectly(path)) == "same", "an entry within the budget went")

        // Full by count again, the entry itself damaged: it is replaced in place, and the others
        // stay (its own room is enough).
        let newer = (0..<(count - 3)).map { filler("\($0).pcm", secondsAgo: 5_000) }
        let damaged = open(entry(other), O_WRONLY)
        #expect(pwrite(damaged, [UInt8(0xFF)], 1, 0) == 1)  // the magic
        close(damaged)
        #expect(stored(other) == nil)
        #expect(compare(try lookUp(other), try decodedDirectly(other)) == "same")
        #expect(compare(stored(other), try decodedDirectly(other)) == "same", "a damaged entry of a full store was not replaced")
        #expect(newer.allSatisfy { access($0, F_OK) == 0 } && access(recent, F_OK) == 0, "an entry went that did not need to")
        newer.forEach { unlink($0) }

        // A store where a file stands in the way of its directory: decoded, nothing stored.
        let blocked = DecodedSoundStore(directory: directory.file("a.wav/decoded"))
        #expect(compare(try Self.lookUp(path, in: blocked), try decodedDirectly(path)) == "same")
    }

    /// Many processes storing and reading the same sound at once: each gets the right samples, and
    /// no temporary file is left behind.
    @Test func concurrentLookupsAllGetTheSound() async throws {
        let path = try tone("a.wav", frequency: 440)
        let expected = try decodedDirectly(path)
        let store = self.store
        try await withThrowingTaskGroup(of: PCMBuffer.self) { group in
            for _ in 0..<16 { group.addTask { try Self.lookUp(path, in: store) } }
            for try await buffer in group { #expect(compare(buffer, expected) == "same") }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: store.directory)
        #expect(names == [URL(fileURLWithPath: entry(path)).lastPathComponent], "\(names)")
    }
}
