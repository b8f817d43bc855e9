public import FoundationEssentials
import Synchronization

/// The table of sounds a process can play by `SystemSoundID`: its own registrations, and the
/// persistent registry's.
///
/// Registering decodes the file (or converts the samples) to PCM at the decoder's rate and returns a
/// new *process-local* ID (1,000,000…1,999,999,999, `SoundIDRange.processLocalIDs`); the ID is never
/// handed out again in this process, even after disposal, so a stale ID can never play another
/// sound. These IDs have a range of their own so that they can never mean a sound of the persistent
/// registry, whose IDs (4097…999,999) every process shares.
///
/// IDs of the persistent registry (`persistentRegistry`, the file `feedbackctl register` writes)
/// are looked up in that file when they are asked for: the file is read again when it changed (one
/// `stat` per lookup), and each sound is decoded once and kept while its file is unchanged (within
/// `persistentCacheLimit` bytes). So a sound registered by another process after this one started
/// plays here under the same number. A registration is made in the file by `SoundRegistryFile`, never
/// by `register`: an ID that outlives the process is a decision of the user's, not a side effect.
///
/// Thread safety: every method may be called from any thread at once. Decoding runs outside the
/// registry's locks; the locks guard only the tables, so a slow decode never blocks a lookup.
public final class SoundRegistry: Sendable {
    /// The process-wide registry, with the user's persistent registry (`SoundRegistryFile()`, when
    /// `XDG_DATA_HOME` or `HOME` is set).
    public static let shared = SoundRegistry(persistentRegistry: try? SoundRegistryFile())

    /// The AudioServices system sound IDs (1000…1351).
    public static let systemSoundIDs: ClosedRange<SystemSoundID> = SoundIDRange.systemIDs
    /// The bytes of decoded persistent sounds kept at most (64 MiB: about 3 minutes of 48 kHz
    /// stereo); beyond it the least recently played are decoded again when next played.
    public static let persistentCacheLimit = 64 << 20

    /// The decoder every registration goes through: its rate is the engine rate, its limit the
    /// 30-second system-sound limit unless configured otherwise.
    public let decoder: SoundDecoder

    private struct Table {
        var nextID: UInt64
        let lastID: UInt64
        var sounds: [SystemSoundID: RegisteredSound] = [:]
    }

    private let table: Lock<Table>

    /// The persistent registry and what was last read from it.
    private struct Persistent {
        var file: SoundRegistryFile?
        var stamp: FileStamp?
        var entries: [SystemSoundID: PersistentSound] = [:]
    }

    private let persistent: Lock<Persistent>
    /// Decoded persistent sounds, keyed by entry (a new path or level is a new key).
    private let persistentSounds = DecodedSoundCache<PersistentSound, RegisteredSound>(byteLimit: persistentCacheLimit)

    /// Creates a registry decoding with `decoder` (48 kHz, 30 s limit by default), with no sounds of
    /// its own, that looks IDs 4097…999,999 up in `persistentRegistry` (none by default).
    public convenience init(decoder: SoundDecoder = SoundDecoder(), persistentRegistry: SoundRegistryFile? = nil) {
        self.init(decoder: decoder, firstID: SoundIDRange.processLocalIDs.lowerBound, persistentRegistry: persistentRegistry)
    }

    /// Creates a registry whose own sounds get IDs from `firstID` to `lastID`: feedbackservicesd
    /// gives its clients' sounds the service range (`SoundIDRange.serviceIDs`).
    package init(
        decoder: SoundDecoder, firstID: SystemSoundID, lastID: SystemSoundID = SoundIDRange.processLocalIDs.upperBound,
        persistentRegistry: SoundRegistryFile? = nil
    ) {
        self.decoder = decoder
        table = Lock(Table(nextID: UInt64(firstID), lastID: UInt64(lastID)))
        persistent = Lock(Persistent(file: persistentRegistry))
    }

    /// Where IDs 4097…999,999 are looked up; nil for none. Setting it forgets what was read from the
    /// previous one.
    public var persistentRegistry: SoundRegistryFile? {
        get { persistent.withLock { $0.file } }
        set {
            persistent.withLock { $0 = Persistent(file: newValue) }
            persistentSounds.removeAll()
        }
    }

    /// Decodes the sound file at `path` and registers it.
    /// - Returns: the new sound's ID.
    /// - Throws: `RegistryError`: `.sound` naming the file and the cause, `.soundIDsExhausted`;
    ///   nothing is registered then.
    public func register(fileAt path: String) throws(RegistryError) -> SystemSoundID {
        let decoded = try RegistryError.decoding { () throws(SoundError) in try decoder.decode(fileAt: path) }
        return try insert(decoded.buffer, source: .file(path: path), format: decoded.sourceFormat)
    }

    /// Decodes the sound file a `file:` URL names and registers it.
    /// - Returns: the new sound's ID.
    /// - Throws: `RegistryError`, as `register(fileAt:)`; nothing is registered then.
    public func register(contentsOf url: URL) throws(RegistryError) -> SystemSoundID {
        let decoded = try RegistryError.decoding { () throws(SoundError) in try decoder.decode(contentsOf: url) }
        let path = url.path(percentEncoded: false)
        return try insert(decoded.buffer, source: .file(path: path), format: decoded.sourceFormat)
    }

    /// Registers interleaved samples at `sampleRate` with `channelCount` channels, resampled to the
    /// engine rate.
    /// - Returns: the new sound's ID.
    /// - Throws: `RegistryError`: `.sound` naming `name`, `.soundIDsExhausted`; nothing is
    ///   registered then.
    public func register(
        samples: [Float], sampleRate: Int, channelCount: Int, name: String = "in-memory sound"
    ) throws(RegistryError) -> SystemSoundID {
        let buffer = try RegistryError.decoding { () throws(SoundError) in
            try decoder.decode(samples: samples, sampleRate: sampleRate, channelCount: channelCount, name: name)
        }
        return try insert(buffer, source: .memory(name: name), format: nil)
    }

    /// Removes a sound registered in this process. Its ID is not reused.
    /// - Throws: `RegistryError` with `.unknownSoundID` if no sound has that ID, `.persistentSoundID`
    ///   for an ID of the persistent registry (only `SoundRegistryFile.unregister` removes those).
    public func dispose(_ id: SystemSoundID) throws(RegistryError) {
        if SoundIDRange(id) == .persistent, contains(id) {
            throw RegistryError(.persistentSoundID(id), source: "sound \(id)")
        }
        let removed = table.withLock { $0.sounds.removeValue(forKey: id) }
        guard removed != nil else { throw Self.unknown(id) }
    }

    /// The sound `id` names, ready to play: one registered in this process, or one of the
    /// persistent registry (decoded when first asked for, or when its file changed).
    /// - Throws: `RegistryError`: `.unknownSoundID` (its message says whose IDs these are), the
    ///   persistent registry's errors (`.registryDamaged`, `.file`, …), or `.sound` for a
    ///   persistent sound's file (moved, changed, deleted since it was registered).
    public func lookup(_ id: SystemSoundID) throws(RegistryError) -> RegisteredSound {
        guard SoundIDRange(id) == .persistent else {
            guard let sound = table.withLock({ $0.sounds[id] }) else { throw Self.unknown(id) }
            return sound
        }
        let (file, entry) = try persistentEntry(id)
        let stamp = FileStamp(path: entry.path)
        if let sound = persistentSounds.value(for: entry, stamp: stamp) { return sound }
        let sound = try RegistryError.decoding { () throws(SoundError) in try file.registeredSound(entry, decoder: decoder) }
        persistentSounds.insert(sound, for: entry, stamp: stamp, bytes: sound.byteCount)
        return sound
    }

    /// The sound `id` names, or nil; see `lookup(_:)`, which says why there is none.
    public func sound(_ id: SystemSoundID) -> RegisteredSound? {
        try? lookup(id)
    }

    /// Whether `id` names a sound of this process or an entry of the persistent registry, without
    /// decoding anything.
    public func contains(_ id: SystemSoundID) -> Bool {
        guard SoundIDRange(id) == .persistent else { return table.withLock { $0.sounds[id] != nil } }
        return (try? persistentEntry(id)) != nil
    }

    /// The length of the sound `id` names, in seconds.
    /// - Throws: as `lookup(_:)`.
    public func duration(of id: SystemSoundID) throws(RegistryError) -> Double {
        try lookup(id).duration
    }

    /// Every ID registered in this process, in ascending order (the persistent registry's are listed
    /// by `SoundRegistryFile.sounds()`).
    public var soundIDs: [SystemSoundID] {
        table.withLock { $0.sounds.keys.sorted() }
    }

    /// The persistent registry's entry for `id`, reading the file again if it changed since it was
    /// last read.
    private func persistentEntry(_ id: SystemSoundID) throws(RegistryError) -> (SoundRegistryFile, PersistentSound) {
        guard let file = persistentRegistry else { throw Self.unknown(id) }
        let stamp = FileStamp(path: file.path)
        var entries = persistent.withLock { $0.file === file && $0.stamp == stamp && stamp != nil ? $0.entries : nil }
        if entries == nil {
            let sounds = try file.sounds()
            let read = Dictionary(sounds.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            persistent.withLock { state in
                guard state.file === file else { return }
                state.stamp = stamp
                state.entries = read
            }
            entries = read
        }
        guard let entry = entries?[id] else {
            throw RegistryError(.unknownSoundID(id), source: file.path)
        }
        return (file, entry)
    }

    /// Re-registers the sound `id` at another level: the new samples are derived from the sound's
    /// original decoded PCM (never from an earlier adjustment, so changes do not accumulate) and
    /// replace the old ones under the same ID in one step. Voices already playing hold the old
    /// samples and finish unchanged; plays started afterwards use the new ones.
    ///
    /// The work (one pass over the samples, two more with the limiter) runs outside the lock.
    /// Concurrent changes to one ID: the last to finish wins, and each result is a whole adjustment.
    /// - Returns: the sound as now registered.
    /// - Throws: `RegistryError` with `.unknownSoundID` if no sound has that ID (or it was disposed
    ///   meanwhile); for a persistent sound, as `SoundRegistryFile.setVolume` and `lookup(_:)`.
    ///
    /// For a sound of the persistent registry the new level is stored in its file
    /// (`SoundRegistryFile.setVolume`), so it applies in every process, as `feedbackctl volume` does.
    @discardableResult
    public func setVolume(_ adjustment: VolumeAdjustment, for id: SystemSoundID) throws(RegistryError) -> RegisteredSound {
        if SoundIDRange(id) == .persistent {
            let (file, _) = try persistentEntry(id)
            try file.setVolume(adjustment, for: id)
            return try lookup(id)
        }
        let current = try lookup(id)
        let adjusted = RegisteredSound(
            id: id, buffer: adjustment == .unchanged ? current.original : adjustment.apply(to: current.original),
            original: current.original, volume: adjustment, source: current.source, sourceFormat: current.sourceFormat)
        let replaced = table.withLock { table -> Bool in
            guard table.sounds[id] != nil else { return false }
            table.sounds[id] = adjusted
            return true
        }
        guard replaced else { throw Self.unknown(id) }
        return adjusted
    }

    /// Re-registers the sound `id` at `multiplier` × its original level; see `setVolume(_:for:)`.
    @discardableResult
    public func setVolume(
        _ multiplier: Float, for id: SystemSoundID, limiting: VolumeAdjustment.Limiting = .clip
    ) throws(RegistryError) -> RegisteredSound {
        try setVolume(VolumeAdjustment(multiplier: multiplier, limiting: limiting), for: id)
    }

    /// The EBU R128 integrated loudness of the sound `id` as it now plays, in LUFS (libebur128;
    /// a mono sound counts as played on both speakers).
    /// - Throws: `RegistryError`: as `lookup(_:)`; `.loudnessUnmeasurable` for a silent sound or
    ///   one with no 400 ms stretch above −70 LUFS.
    public func loudness(of id: SystemSoundID) throws(RegistryError) -> Double {
        let sound = try lookup(id)
        guard let loudness = Loudness.integrated(sound.buffer) else {
            throw RegistryError(.loudnessUnmeasurable, source: sound.source.description, detail: Loudness.unavailableReason)
        }
        return loudness
    }

    /// Re-registers the sound `id` so that its integrated loudness is `target` LUFS (−23 is EBU
    /// R128's broadcast level; −16…−14 suits alerts), so that different alerts sound equally loud.
    ///
    /// The gain is measured on the original samples; with the peak limiter (the default) a sound
    /// that would need more than full scale is limited, which lowers its loudness a little below
    /// the target; `loudness(of:)` tells the result.
    /// - Returns: the sound as now registered; its `volume` holds the gain that was applied.
    /// - Throws: `RegistryError`: as `setVolume(_:for:)`; `.loudnessUnmeasurable` (nothing changes then).
    @discardableResult
    public func normalizeLoudness(
        of id: SystemSoundID, to target: Double, limiting: VolumeAdjustment.Limiting = .peakLimiter()
    ) throws(RegistryError) -> RegisteredSound {
        let sound = try lookup(id)
        guard let measured = Loudness.integrated(sound.original) else {
            throw RegistryError(.loudnessUnmeasurable, source: sound.source.description, detail: Loudness.unavailableReason)
        }
        return try setVolume(.decibels(target - measured, limiting: limiting), for: id)
    }

    /// Writes the sound `id` as it now plays (volume applied) to `path`, by `AtomicFile`'s rule.
    ///
    /// A sound decoded from a file, exported in that file's format (no `format` given), is written
    /// as the source is — its rate, channels, container and encoding, its own samples at the new
    /// level (`SoundExport`; bit-identical at `VolumeAdjustment.unchanged` for lossless encodings).
    /// Otherwise the registered samples (at the engine rate) are written in `format`, else 16-bit
    /// WAV; a lossless format decodes back to the same samples, within its precision.
    /// - Throws: `RegistryError`: as `lookup(_:)`; `.sound` when the source file cannot be read
    ///   again; `.file` with libsndfile's or the system's message.
    public func export(_ id: SystemSoundID, to path: String, format: SoundFileFormat? = nil) throws(RegistryError) {
        let sound = try lookup(id)
        if case .file(let source) = sound.source, format == nil || format == sound.sourceFormat {
            return try SoundExport.write(fileAt: source, volume: sound.volume, to: path, maximumDuration: decoder.maximumDuration)
        }
        try RegistryError.accessing { () throws(FileError) in
            try SoundFileWriter.write(sound.buffer, to: path, format: format ?? sound.sourceFormat ?? .wav16)
        }
    }

    private func insert(_ buffer: PCMBuffer, source: SoundSource, format: SoundFileFormat?) throws(RegistryError)
        -> SystemSoundID
    {
        let id: SystemSoundID? = table.withLock { table in
            guard table.nextID <= table.lastID else { return nil }
            let id = SystemSoundID(table.nextID)
            table.nextID += 1
            table.sounds[id] = RegisteredSound(id: id, buffer: buffer, source: source, sourceFormat: format)
            return id
        }
        guard let id else { throw RegistryError(.soundIDsExhausted, source: source.description) }
        return id
    }

    private static func unknown(_ id: SystemSoundID) -> RegistryError {
        RegistryError(.unknownSoundID(id), source: "sound \(id)")
    }
}
