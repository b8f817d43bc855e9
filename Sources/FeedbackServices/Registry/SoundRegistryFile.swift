public import FoundationEssentials
import Glibc

/// A sound registered in the persistent registry: a file, the level to play it at, and its ID.
///
/// The entry refers to the file, as `AudioServicesCreateSystemSoundID` refers to a URL: the file is
/// decoded again whenever the sound is played from another process, so it must stay where it was.
/// A value; safe to share across threads.
public struct PersistentSound: Sendable, Hashable {
    /// The ID, in 4097…999,999 (`SoundIDRange.persistentIDs`); never handed out twice by the same registry file.
    public let id: SystemSoundID
    /// The sound file's absolute path.
    public let path: String
    /// The level it plays at (re-registered from the original samples at each decode).
    public var volume: VolumeAdjustment
    /// The length in seconds when it was registered.
    public let duration: Double
    /// When it was registered (ISO 8601, UTC), or nil if the file did not say.
    public let registered: String?

    /// Creates an entry.
    public init(id: SystemSoundID, path: String, volume: VolumeAdjustment, duration: Double, registered: String?) {
        self.id = id
        self.path = path
        self.volume = volume
        self.duration = duration
        self.registered = registered
    }
}

/// Registrations that outlive the process: the sound IDs `feedbackctl register` hands out, kept in
/// a JSON file so that later runs (and other programs) can play them by number.
///
/// The file is `$XDG_DATA_HOME/feedbackservices/registry.json` (`~/.local/share/…` when
/// `XDG_DATA_HOME` is unset), mode 0600 in a 0700 directory:
///
/// ```json
/// {"format": 1, "nextID": 4099,
///  "sounds": [{"id": 4097, "path": "/home/me/ding.wav", "volume": 0.5, "limiter": null,
///              "duration": 0.42, "registered": "2026-11-30T04:10:00Z"}]}
/// ```
///
/// - A missing file is an empty registry.
/// - Every change is one read-modify-write under an exclusive `flock` on `registry.json.lock`,
///   and the new contents replace the file atomically (temporary file, `fsync`, `rename`), so
///   several processes registering at once all succeed, none loses another's entry, and a reader
///   never sees half a file. Reading takes no lock.
/// - A file that cannot be read as a registry (not JSON, an unknown format, contradictory
///   entries) is an error (`.registryDamaged`, with what is wrong) and is never written over:
///   every change refuses until a person repairs or removes it.
/// - IDs are 4097…999,999 (`SoundIDRange.persistentIDs`) and are never reused, even after
///   `unregister`: `nextID` only grows. Every process sees them (`SoundRegistry` looks them up here),
///   so an ID means the same sound to the library, `feedbackctl` and the session service.
///
/// Thread safety: an instance holds only its path; every method may be called from any thread
/// and any number of processes at once.
public final class SoundRegistryFile: Sendable {
    /// The file's path.
    public let path: String
    /// How long a change waits for another process's lock before failing with `.registryBusy`.
    public let lockTimeout: Double

    /// The newest file format this version reads and writes.
    public static let format = 1
    /// The largest registry file read (a guard against reading a huge file by mistake).
    static let maximumFileSize = 16 << 20

    /// The registry at `path`.
    public init(path: String, lockTimeout: Double = 10) {
        self.path = path
        self.lockTimeout = lockTimeout
    }

    /// The current user's registry, at `defaultPath(environment:)`.
    /// - Throws: `RegistryError` with `.noDefaultLocation` when neither `XDG_DATA_HOME` nor `HOME` is set.
    public convenience init(environment: [String: String] = ProcessInfo.processInfo.environment) throws(RegistryError) {
        guard let path = Self.defaultPath(environment: environment) else {
            throw RegistryError(.noDefaultLocation, source: "sound registry", detail: "neither XDG_DATA_HOME nor HOME is set")
        }
        self.init(path: path)
    }

    /// `$XDG_DATA_HOME/feedbackservices/registry.json`, else `$HOME/.local/share/feedbackservices/registry.json`;
    /// nil when neither is set. A relative `XDG_DATA_HOME` is ignored, as the XDG spec says.
    public static func defaultPath(environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return "\(data)/feedbackservices/registry.json"
        }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return "\(home)/.local/share/feedbackservices/registry.json"
    }

    /// Every registered sound, by ascending ID. A missing file gives none.
    /// - Throws: `RegistryError`: `.registryDamaged`, or `.file` when the system refuses to read the file.
    public func sounds() throws(RegistryError) -> [PersistentSound] {
        try load().sounds
    }

    /// The sound registered as `id`.
    /// - Throws: `RegistryError` with `.unknownSoundID` when there is none, or as `sounds()`.
    public func sound(_ id: SystemSoundID) throws(RegistryError) -> PersistentSound {
        guard let sound = try load().sounds.first(where: { $0.id == id }) else {
            throw RegistryError(.unknownSoundID(id), source: path)
        }
        return sound
    }

    /// Decodes the file at `path` (to check that it is a usable sound of at most the decoder's
    /// limit) and registers it under a new ID.
    /// - Parameters:
    ///   - path: the sound file; a relative path is made absolute against the working directory.
    ///   - volume: the level it plays at.
    ///   - decoder: the decoder the check runs with; its limit is the one enforced.
    /// - Returns: the new entry.
    /// - Throws: `RegistryError`: `.sound`, the decoder's error (nothing is registered then),
    ///   `.registryDamaged`, `.registryBusy`, `.soundIDsExhausted`, or `.file` when the registry
    ///   cannot be written (`.permissionDenied` for one the user made read-only).
    @discardableResult
    public func register(
        fileAt path: String, volume: VolumeAdjustment = .unchanged, decoder: SoundDecoder = SoundDecoder()
    ) throws(RegistryError) -> PersistentSound {
        let (absolute, decoded) = try RegistryError.decoding { () throws(SoundError) in
            let absolute = try Self.absolutePath(path)
            return (absolute, try decoder.decode(fileAt: absolute))
        }
        let registered = Date.now.formatted(.iso8601)
        return try update { contents throws(RegistryError) in
            guard contents.nextID <= UInt64(SoundIDRange.persistentIDs.upperBound) else {
                throw RegistryError(.soundIDsExhausted, source: self.path)
            }
            let sound = PersistentSound(
                id: SystemSoundID(contents.nextID), path: absolute, volume: volume,
                duration: decoded.buffer.duration, registered: registered)
            contents.nextID += 1
            contents.sounds.append(sound)
            return sound
        }
    }

    /// Removes `id`. Its number is not handed out again.
    /// - Returns: the entry that was removed.
    /// - Throws: `RegistryError` with `.unknownSoundID` when there is none (the file is not
    ///   rewritten), or as `register`.
    @discardableResult
    public func unregister(_ id: SystemSoundID) throws(RegistryError) -> PersistentSound {
        try update { contents throws(RegistryError) in
            guard let index = contents.sounds.firstIndex(where: { $0.id == id }) else {
                throw RegistryError(.unknownSoundID(id), source: self.path)
            }
            contents.unknownEntryKeys[id] = nil
            return contents.sounds.remove(at: index)
        }
    }

    /// Stores a new level for `id`.
    /// - Returns: the entry as now stored.
    /// - Throws: `RegistryError` with `.unknownSoundID` when there is none, or as `register`.
    @discardableResult
    public func setVolume(_ volume: VolumeAdjustment, for id: SystemSoundID) throws(RegistryError) -> PersistentSound {
        try update { contents throws(RegistryError) in
            guard let index = contents.sounds.firstIndex(where: { $0.id == id }) else {
                throw RegistryError(.unknownSoundID(id), source: self.path)
            }
            contents.sounds[index].volume = volume
            return contents.sounds[index]
        }
    }

    /// Decodes the sound `id` and applies its level, ready to play.
    /// - Throws: `RegistryError`: `.unknownSoundID`, `.sound` for the file (it may have been
    ///   moved, changed or deleted since it was registered), or as `sounds()`.
    public func decode(_ id: SystemSoundID, decoder: SoundDecoder = SoundDecoder()) throws(RegistryError) -> PCMBuffer {
        let entry = try sound(id)
        return try RegistryError.decoding { () throws(SoundError) in try decode(entry, decoder: decoder) }
    }

    /// Decodes the file of `sound` (an entry read from this registry) and applies its level, ready
    /// to play, without reading the registry again.
    /// - Throws: `SoundError`: the decoder's error for the file (the registry is not read).
    public func decode(_ sound: PersistentSound, decoder: SoundDecoder = SoundDecoder()) throws(SoundError) -> PCMBuffer {
        try registeredSound(sound, decoder: decoder).buffer
    }

    /// The sound of `entry` decoded, at its level, as `SoundRegistry` keeps it.
    func registeredSound(_ entry: PersistentSound, decoder: SoundDecoder) throws(SoundError) -> RegisteredSound {
        let decoded = try decoder.decode(fileAt: entry.path)
        let buffer = entry.volume == .unchanged ? decoded.buffer : entry.volume.apply(to: decoded.buffer)
        return RegisteredSound(
            id: entry.id, buffer: buffer, original: decoded.buffer, volume: entry.volume, source: .file(path: entry.path),
            sourceFormat: decoded.sourceFormat)
    }

    // MARK: - The file

    /// The registry as read from or written to the file.
    struct Contents {
        var nextID = UInt64(SoundIDRange.persistentIDs.lowerBound)
        var sounds: [PersistentSound] = []
        /// Keys this version does not know, at the top level and per sound: a newer version's
        /// additions survive a change made by this one.
        var unknownKeys: [String: JSONValue] = [:]
        var unknownEntryKeys: [SystemSoundID: [String: JSONValue]] = [:]
    }

    /// The file's JSON shape. Its coding is written out (in `Document`'s extensions, which keeps the
    /// memberwise initialisers) so that keys this version does not know are kept.
    fileprivate struct Document {
        var format: Int
        var nextID: UInt64
        var sounds: [Entry]
        var unknown: [String: JSONValue] = [:]

        struct Entry {
            var id: UInt32
            var path: String
            var volume: Float
            var limiter: Float?
            var duration: Double
            var registered: String?
            var unknown: [String: JSONValue] = [:]
        }
    }

    /// Reads the file; a missing file is an empty registry.
    func load() throws(RegistryError) -> Contents {
        let read = try RegistryError.accessing { () throws(FileError) in try AtomicFile.read(path, limit: Self.maximumFileSize) }
        guard let bytes = read else { return Contents() }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw damaged(Self.describe(error))
        } catch {
            throw damaged("\(error)")
        }
        return try validate(document)
    }

    private func validate(_ document: Document) throws(RegistryError) -> Contents {
        guard document.format == Self.format else {
            throw damaged("format \(document.format) is not the format \(Self.format) this version reads")
        }
        let ids = SoundIDRange.persistentIDs
        guard document.nextID >= UInt64(ids.lowerBound) else {
            throw damaged("nextID \(document.nextID) is below \(ids.lowerBound)")
        }
        guard document.nextID <= UInt64(ids.upperBound) + 1 else {
            throw damaged("nextID \(document.nextID) is above \(UInt64(ids.upperBound) + 1)")
        }
        var contents = Contents(nextID: document.nextID, unknownKeys: document.unknown)
        var seen = Set<UInt32>()
        for entry in document.sounds {
            guard entry.id >= ids.lowerBound else { throw damaged("ID \(entry.id) is below \(ids.lowerBound)") }
            guard seen.insert(entry.id).inserted else { throw damaged("ID \(entry.id) appears twice") }
            guard UInt64(entry.id) < document.nextID else {
                throw damaged("ID \(entry.id) is not below nextID \(document.nextID)")
            }
            guard entry.path.hasPrefix("/") else { throw damaged("sound \(entry.id) has a relative path '\(entry.path)'") }
            guard !entry.path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw damaged("sound \(entry.id) has a control character in its path")
            }
            guard entry.volume.isFinite, entry.volume >= 0 else {
                throw damaged("sound \(entry.id) has volume \(entry.volume)")
            }
            guard entry.duration.isFinite, entry.duration >= 0 else {
                throw damaged("sound \(entry.id) has duration \(entry.duration)")
            }
            var limiting = VolumeAdjustment.Limiting.clip
            if let ceiling = entry.limiter {
                guard ceiling > 0 && ceiling <= 1 else {
                    throw damaged("sound \(entry.id) has limiter ceiling \(ceiling), not in 0<…≤1")
                }
                limiting = .peakLimiter(ceiling: ceiling)
            }
            contents.sounds.append(
                PersistentSound(
                    id: entry.id, path: entry.path, volume: VolumeAdjustment(multiplier: entry.volume, limiting: limiting),
                    duration: entry.duration, registered: entry.registered))
            if !entry.unknown.isEmpty { contents.unknownEntryKeys[entry.id] = entry.unknown }
        }
        contents.sounds.sort { $0.id < $1.id }
        return contents
    }

    private func document(_ contents: Contents) -> Document {
        let entries = contents.sounds.map { sound in
            var ceiling: Float?
            if case .peakLimiter(let value) = sound.volume.limiting { ceiling = value }
            return Document.Entry(
                id: sound.id, path: sound.path, volume: sound.volume.multiplier, limiter: ceiling,
                duration: sound.duration, registered: sound.registered, unknown: contents.unknownEntryKeys[sound.id] ?? [:])
        }
        return Document(format: Self.format, nextID: contents.nextID, sounds: entries, unknown: contents.unknownKeys)
    }

    /// The file's new bytes; contents that `load` would call damaged are refused, never written.
    private func encode(_ contents: Contents) throws(RegistryError) -> [UInt8] {
        let document = document(contents)
        do {
            _ = try validate(document)
        } catch {
            throw .file(FileError(.cannotWrite, path: path, detail: "refused to write an invalid registry: \(error.detail ?? "")"))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(document)
            return Array(data) + [UInt8(ascii: "\n")]
        } catch {
            throw .file(FileError(.cannotWrite, path: path, detail: "\(error)"))
        }
    }

    /// One change: lock, read, change, write atomically, unlock. When `change` throws, nothing is
    /// written.
    private func update<T>(_ change: (inout Contents) throws(RegistryError) -> T) throws(RegistryError) -> T {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty {
            try RegistryError.accessing { () throws(FileError) in try AtomicFile.makeDirectories(directory, mode: 0o700) }
        }
        let lock = try acquireLock()
        defer { close(lock) }
        removeStaleTemporaries()
        var info = stat()
        if stat(path, &info) == 0 && info.st_mode & S_IWUSR == 0 {
            throw .file(
                FileError(
                    .permissionDenied, path: path,
                    detail: "the registry is read-only (mode \(String(info.st_mode & 0o777, radix: 8))); make it writable to change it"))
        }
        var contents = try load()
        let result = try change(&contents)
        let bytes = try encode(contents)
        try RegistryError.accessing { () throws(FileError) in try AtomicFile.write(bytes, to: path, mode: 0o600) }
        return result
    }

    /// Removes `registry.json.tmp-*` files: only the holder of the lock writes one, and it removes
    /// or renames it before letting go, so while the lock is held any that exist were left by a
    /// writer that was killed mid-write.
    private func removeStaleTemporaries() {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let prefix = (slash.map { String(path[path.index(after: $0)...]) } ?? path) + ".tmp-"
        guard let stream = opendir(directory.isEmpty ? "/" : directory) else { return }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(prefix) { unlink("\(directory)/\(name)") }
        }
    }

    /// Opens `registry.json.lock` and takes an exclusive `flock` on it, waiting at most `lockTimeout`.
    /// The lock goes with the descriptor: closing it (or the process ending) releases it.
    private func acquireLock() throws(RegistryError) -> Int32 {
        let lockPath = path + ".lock"
        let fd: Int32
        do {
            fd = try System.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
        } catch {
            // The lock is the first file a change opens: a registry the user may not open at all.
            let denied = error.rawValue == EACCES || error.rawValue == EPERM
            throw .file(FileError(denied ? .permissionDenied : .cannotCreate, path: lockPath, errno: error.rawValue))
        }
        let start = MonotonicClock.now
        var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
        while true {
            do {
                try System.flock(fd, LOCK_EX | LOCK_NB)
                return fd
            } catch {
                guard error == .wouldBlock else {
                    close(fd)
                    throw .file(FileError(.ioError, path: lockPath, errno: error.rawValue))
                }
            }
            let waited = MonotonicClock.now - start
            guard waited < lockTimeout else {
                close(fd)
                throw RegistryError(.registryBusy(waited: waited), source: path)
            }
            nanosleep(&pause, nil)
            pause.tv_nsec = min(pause.tv_nsec * 2, 20_000_000)
        }
    }

    private func damaged(_ why: String) -> RegistryError {
        RegistryError(.registryDamaged, source: path, detail: why)
    }

    private static func describe(_ error: DecodingError) -> String {
        func at(_ path: [any CodingKey]) -> String {
            path.isEmpty ? "the top level" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "not JSON: \(context.debugDescription)" : "\(at(context.codingPath)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "\(at(context.codingPath + [key])) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(at(context.codingPath)) has the wrong type"
        @unknown default:
            return "\(error)"
        }
    }

    /// `path` made absolute: its directory resolved with `realpath` (so `..` and symlinked
    /// directories mean what the kernel says), its file name kept as given.
    /// - Throws: `SoundError` with `.notFound` when the directory cannot be resolved: there is no
    ///   sound file to register there.
    private static func absolutePath(_ path: String) throws(SoundError) -> String {
        if path.hasPrefix("/") { return path }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard let resolved = realpath(directory.isEmpty ? "/" : directory, nil) else {
            throw SoundError(.notFound, source: path, detail: Errno.current.description)
        }
        defer { free(resolved) }
        let base = String(cString: resolved)
        return (base == "/" ? "" : base) + "/" + name
    }
}

extension SoundRegistryFile.Document: Codable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: JSONKey.self)
        format = try container.decode(Int.self, forKey: "format")
        nextID = try container.decode(UInt64.self, forKey: "nextID")
        sounds = try container.decode([Entry].self, forKey: "sounds")
        unknown = try container.unknownValues(known: ["format", "nextID", "sounds"])
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONKey.self)
        try container.encode(format, forKey: "format")
        try container.encode(nextID, forKey: "nextID")
        try container.encode(sounds, forKey: "sounds")
        for (key, value) in unknown { try container.encode(value, forKey: JSONKey(key)) }
    }
}

extension SoundRegistryFile.Document.Entry: Codable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: JSONKey.self)
        id = try container.decode(UInt32.self, forKey: "id")
        path = try container.decode(String.self, forKey: "path")
        volume = try container.decode(Float.self, forKey: "volume")
        limiter = try container.decodeIfPresent(Float.self, forKey: "limiter")
        duration = try container.decode(Double.self, forKey: "duration")
        registered = try container.decodeIfPresent(String.self, forKey: "registered")
        unknown = try container.unknownValues(known: ["id", "path", "volume", "limiter", "duration", "registered"])
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONKey.self)
        try container.encode(id, forKey: "id")
        try container.encode(path, forKey: "path")
        try container.encode(volume, forKey: "volume")
        try container.encodeIfPresent(limiter, forKey: "limiter")
        try container.encode(duration, forKey: "duration")
        try container.encodeIfPresent(registered, forKey: "registered")
        for (key, value) in unknown { try container.encode(value, forKey: JSONKey(key)) }
    }
}
