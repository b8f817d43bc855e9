import Glibc

/// Decoded sounds kept on disk between processes: a process that plays a theme's sound (or a
/// file) the store holds for the file as it is now reads the samples instead of loading libsndfile
/// — eight shared objects with its codecs, ~0.75 ms on this project's machine, far more under
/// emulation — and decoding. `feedbackctl fire` is a new process every time; this is what makes
/// "decoded once" hold across them.
///
/// One file per sound, `$XDG_CACHE_HOME/feedbackservices/decoded/<hash>-<rate>.pcm` (`~/.cache/…`
/// when `XDG_CACHE_HOME` is unset), in a 0700 directory, mode 0600: a header (magic, the engine
/// rate, channels, frames, the source's `FileStamp` and path, a checksum of the samples), the
/// source's path, then the samples as 32-bit floats, interleaved. An entry is used only when
/// everything matches — the source's device, inode, size and modification time, its path, the
/// rate, the size the header implies, the checksum — so a changed file, a torn or damaged entry,
/// or another sound's entry under the same name is a miss, never a wrong sound. An entry is
/// bounded (`maximumEntryBytes`) and so is the store (`maximumEntries`, `maximumBytes`); entries
/// are written to a temporary file and renamed into place, and opened without following symlinks.
/// Every failure to read or write one is a miss, silently: the sound is decoded as it would have
/// been without the store.
///
/// Thread safety: a value holding a path; any thread, any number of processes at once.
struct DecodedSoundStore: Sendable {
    /// The directory holding the entries.
    let directory: String

    /// The most entries the store holds: 512, several themes' worth. A write into a full store
    /// first removes the least recently used entries (see `write`).
    static let maximumEntries = 512
    /// The most bytes the store holds: 64 MiB, a whole theme as 32-bit float several times over
    /// (the shipped one takes 11 MB), and at most a few long sounds (a 30 s stereo sound takes
    /// 11.5 MB). A write that would go over it first removes the least recently used entries.
    static let maximumBytes = 64 << 20
    /// The longest path an entry records.
    static let maximumPathBytes = 4_096

    private static let magic: UInt64 = 0x3230_4d43_5053_4246  // "FBSPCM02", little-endian (01: a checksum per sample)
    private static let headerWords = 12
    private static let headerBytes = headerWords * 8

    /// The store in `directory`.
    init(directory: String) {
        self.directory = directory
    }

    /// The user's store: under `XDG_CACHE_HOME` when it is absolute, else `HOME/.cache`; nil when
    /// neither is set (read with `getenv`, as the process has them).
    static func standard() -> DecodedSoundStore? {
        if let base = getenv("XDG_CACHE_HOME").map({ String(cString: $0) }), base.hasPrefix("/") {
            return DecodedSoundStore(directory: "\(base)/feedbackservices/decoded")
        }
        guard let home = getenv("HOME").map({ String(cString: $0) }), home.hasPrefix("/") else { return nil }
        return DecodedSoundStore(directory: "\(home)/.cache/feedbackservices/decoded")
    }

    /// The bytes an entry for `frames` frames of `channels` channels may take at most.
    static func maximumEntryBytes(frames: Int, channels: Int) -> Int {
        headerBytes + maximumPathBytes + frames * channels * MemoryLayout<Float>.size
    }

    /// Where the entry for `source` at `sampleRate` lives.
    func entryPath(for source: String, sampleRate: Int) -> String {
        var hash = FNV1a()
        for byte in source.utf8 { hash.mix(UInt64(byte)) }
        return "\(directory)/\(String(hash.value, radix: 16))-\(sampleRate).pcm"
    }

    /// The samples stored for `source` as `stamp` describes it, at `sampleRate`, mono or stereo and
    /// at most `maximumFrames` long; nil when there is no such entry.
    func read(_ source: String, stamp: FileStamp, sampleRate: Int, maximumFrames: Int) -> PCMBuffer? {
        guard let fd = try? System.open(entryPath(for: source, sampleRate: sampleRate), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        else { return nil }
        defer { close(fd) }
        guard let size = try? System.regularFileSize(fd),
            size <= Self.maximumEntryBytes(frames: maximumFrames, channels: 2)
        else { return nil }
        // The header, the path and the samples follow each other: three reads in order.
        func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Bool { (try? System.readAll(fd, into: buffer)) == true }
        var header = [UInt64](repeating: 0, count: Self.headerWords)
        guard header.withUnsafeMutableBytes(fill) else { return nil }
        let path = Array(source.utf8)
        let (rate, channels, frames, pathBytes) = (header[1], header[2], header[3], header[9])
        guard header[0] == Self.magic, rate == UInt64(sampleRate), channels == 1 || channels == 2,
            frames <= UInt64(maximumFrames), pathBytes == UInt64(path.count), Self.stamp(header) == stamp,
            size == Self.headerBytes + path.count + Int(frames * channels) * MemoryLayout<Float>.size
        else { return nil }
        var recorded = [UInt8](repeating: 0, count: path.count)
        guard recorded.withUnsafeMutableBytes(fill), recorded == path else { return nil }
        let count = Int(frames * channels)
        var complete = true
        let samples = [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            complete = fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = complete ? count : 0
        }
        // The checksum catches damage; finite values are what every PCMBuffer promises.
        guard complete else { return nil }
        let (checksum, allFinite) = Self.checksum(samples)
        guard checksum == header[11], allFinite else { return nil }
        return PCMBuffer(validSamples: samples, channelCount: Int(channels), sampleRate: sampleRate)
    }

    /// Stores `buffer` as the decoding of `source` as `stamp` describes it. Does nothing when the
    /// directory cannot be made or written, or for a path over `maximumPathBytes`. An entry already
    /// at the new one's place (stale, damaged, of an older format) is replaced. When the store
    /// would hold more than `maximumEntries` entries or `maximumBytes` bytes, the entries used
    /// least recently make room first — by access time, or modification time when later (a write;
    /// with `relatime` a read moves the access time once a day at most, with `noatime` never, and
    /// the order is then the order they were written): sounds of files since removed, or of a
    /// theme no longer used, go; a full store never stops keeping the sounds played now. Only
    /// regular files whose names do not start with "." are removed: never a temporary being written.
    func write(_ buffer: PCMBuffer, for source: String, stamp: FileStamp) {
        let path = Array(source.utf8)
        let bytes = Self.headerBytes + path.count + buffer.samples.count * MemoryLayout<Float>.size
        let final = entryPath(for: source, sampleRate: buffer.sampleRate)
        guard path.count <= Self.maximumPathBytes, buffer.channelCount == 1 || buffer.channelCount == 2, makeDirectory(),
            let listing = usage()
        else { return }
        // The entry being replaced counts as free room; the others, least recently used first.
        let finalName = String(final.dropFirst(directory.count + 1))
        let others = listing.entries.filter { $0.name != finalName }.sorted { $0.lastUse < $1.lastUse }
        var count = others.count + listing.otherNames
        var used = listing.bytes - (listing.entries.first { $0.name == finalName }?.bytes ?? 0)
        for entry in others where count >= Self.maximumEntries || used + bytes > Self.maximumBytes {
            guard unlink("\(directory)/\(entry.name)") == 0 || errno == ENOENT else { continue }
            count -= 1
            used -= entry.bytes
        }
        guard count < Self.maximumEntries, used + bytes <= Self.maximumBytes else { return }
        var header = [UInt64](repeating: 0, count: Self.headerWords)
        header[0] = Self.magic
        header[1] = UInt64(buffer.sampleRate)
        header[2] = UInt64(buffer.channelCount)
        header[3] = UInt64(buffer.frameCount)
        (header[4], header[5], header[6]) = (stamp.device, stamp.inode, UInt64(bitPattern: stamp.size))
        (header[7], header[8]) = (UInt64(bitPattern: Int64(stamp.seconds)), UInt64(bitPattern: Int64(stamp.nanoseconds)))
        header[9] = UInt64(path.count)
        header[11] = Self.checksum(buffer.samples).value
        let temporary = "\(directory)/.\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        // Not AtomicFile.write: an entry needs no fsync (a torn one is a miss), must not follow a
        // symlink at its path, and is written from the samples without a copy into bytes.
        guard let fd = try? System.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        else { return }
        let written =
            (try? header.withUnsafeBytes { try System.writeAll(fd, $0) }) != nil
            && (try? path.withUnsafeBytes { try System.writeAll(fd, $0) }) != nil
            && (try? buffer.samples.withUnsafeBytes { try System.writeAll(fd, $0) }) != nil
        close(fd)
        if !written || rename(temporary, final) != 0 { unlink(temporary) }
    }

    private static func stamp(_ header: [UInt64]) -> FileStamp {
        FileStamp(
            device: header[4], inode: header[5], size: Int64(bitPattern: header[6]),
            seconds: Int(Int64(bitPattern: header[7])), nanoseconds: Int(Int64(bitPattern: header[8])))
    }

    /// FNV-1a over the samples' bit patterns, two samples to a 64-bit word (an odd last one alone),
    /// and whether every sample is finite, in one pass: a damaged entry is a miss, not a noise.
    /// A sample is not finite when its exponent bits are all set: per 32-bit lane, `x` = the
    /// exponent bits left clear is zero then, which `(x - 1) & ~x` shows in the lane's top bit
    /// (a borrow into the high lane only comes from a low lane that is zero, already flagged).
    /// With `allSatisfy(\.isFinite)` in a second pass and a word per sample, this was 0.38 M of
    /// the 2.6 M instructions `fire 1007`'s main thread runs; the whole read now takes 0.17 M (callgrind).
    static func checksum(_ samples: [Float]) -> (value: UInt64, allFinite: Bool) {
        samples.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return (FNV1a().value, true) }
            let exponents: UInt64 = 0x7F80_0000_7F80_0000
            var hash = FNV1a()
            var flags: UInt64 = 0
            var offset = 0
            let whole = bytes.count & ~7
            while offset < whole {
                let word = (base + offset).loadUnaligned(as: UInt64.self)
                hash.mix(word)
                let clear = ~word & exponents
                flags |= (clear &- 0x0000_0001_0000_0001) & ~clear
                offset &+= 8
            }
            if whole < bytes.count {
                let last = UInt64((base + whole).loadUnaligned(as: UInt32.self))
                hash.mix(last)
                let clear = ~last & exponents & 0xFFFF_FFFF
                flags |= (clear &- 1) & ~clear
            }
            return (hash.value, flags & 0x8000_0000_8000_0000 == 0)
        }
    }

    /// Creates the directory and its missing parents (0700); true when it is a directory now.
    private func makeDirectory() -> Bool {
        try? AtomicFile.makeDirectories(directory, mode: 0o700)
        var info = stat()
        return stat(directory, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// What the directory holds: its entries (regular files not starting with "."), with their
    /// size and last use; how many other names it has that count as entries (anything else not
    /// starting with ".": a symlink or folder in an entry's place); and the bytes of everything in
    /// it, temporaries included. Nil when it cannot be read.
    private func usage() -> (entries: [(name: String, bytes: Int, lastUse: Double)], otherNames: Int, bytes: Int)? {
        guard let names = try? System.directoryEntries(directory) else { return nil }
        var entries: [(name: String, bytes: Int, lastUse: Double)] = []
        var otherNames = 0
        var bytes = 0
        for name in names {
            var info = stat()
            guard lstat("\(directory)/\(name)", &info) == 0 else { continue }
            bytes += Int(info.st_size)
            guard !name.hasPrefix(".") else { continue }
            guard info.st_mode & S_IFMT == S_IFREG else {
                otherNames += 1
                continue
            }
            let accessed = Double(info.st_atim.tv_sec) + Double(info.st_atim.tv_nsec) * 1e-9
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) * 1e-9
            entries.append((name, Int(info.st_size), max(accessed, modified)))
        }
        return (entries, otherNames, bytes)
    }
}

extension FileStamp {
    /// A stamp as an entry recorded it.
    init(device: UInt64, inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int) {
        (self.device, self.inode, self.size, self.seconds, self.nanoseconds) = (device, inode, size, seconds, nanoseconds)
    }
}
