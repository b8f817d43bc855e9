public import FoundationEssentials
import Synchronization

/// The table of registered sounds: decoded once, kept in memory, named by `SystemSoundID`.
///
/// Registering decodes the file (or converts the samples) to PCM at the decoder's rate and returns a
/// new ID above 4096; the ID is never handed out again in this process, even after disposal, so a
/// stale ID can never play another sound. IDs 1000…1351 (system sounds) and 4095 (vibrate) are
/// reserved and never allocated.
///
/// Thread safety: every method may be called from any thread at once. Decoding runs outside the
/// registry's lock; the lock guards only the table, so a slow decode never blocks a lookup.
public final class SoundRegistry: Sendable {
    /// The process-wide registry.
    public static let shared = SoundRegistry()

    /// The AudioServices system sound IDs (1000…1351).
    public static let systemSoundIDs: ClosedRange<SystemSoundID> = 1000...1351
    /// The first ID a registration gets.
    public static let firstCustomSoundID: SystemSoundID = 4097

    /// The decoder every registration goes through: its rate is the engine rate, its limit the
    /// 30-second system-sound limit unless configured otherwise.
    public let decoder: SoundDecoder

    private struct Table {
        var nextID: UInt64
        var sounds: [SystemSoundID: RegisteredSound] = [:]
    }

    private let table: Mutex<Table>

    /// Creates an empty registry decoding with `decoder` (48 kHz, 30 s limit by default).
    public convenience init(decoder: SoundDecoder = SoundDecoder()) {
        self.init(decoder: decoder, firstID: SoundRegistry.firstCustomSoundID)
    }

    init(decoder: SoundDecoder, firstID: SystemSoundID) {
        self.decoder = decoder
        self.table = Mutex(Table(nextID: UInt64(firstID)))
    }

    /// Decodes the sound file at `path` and registers it.
    /// - Returns: the new sound's ID.
    /// - Throws: `SoundError` naming the file and the cause; nothing is registered then.
    public func register(fileAt path: String) throws(SoundError) -> SystemSoundID {
        let decoded = try decoder.decode(fileAt: path)
        return try insert(decoded.buffer, source: .file(path: path), format: decoded.sourceFormat)
    }

    /// Decodes the sound file a `file:` URL names and registers it.
    /// - Returns: the new sound's ID.
    /// - Throws: `SoundError`; nothing is registered then.
    public func register(contentsOf url: URL) throws(SoundError) -> SystemSoundID {
        let decoded = try decoder.decode(contentsOf: url)
        let path = url.path(percentEncoded: false)
        return try insert(decoded.buffer, source: .file(path: path), format: decoded.sourceFormat)
    }

    /// Registers interleaved samples at `sampleRate` with `channelCount` channels, resampled to the
    /// engine rate.
    /// - Returns: the new sound's ID.
    /// - Throws: `SoundError` naming `name`; nothing is registered then.
    public func register(
        samples: [Float], sampleRate: Int, channelCount: Int, name: String = "in-memory sound"
    ) throws(SoundError) -> SystemSoundID {
        let buffer = try decoder.decode(samples: samples, sampleRate: sampleRate, channelCount: channelCount, name: name)
        return try insert(buffer, source: .memory(name: name), format: nil)
    }

    /// Removes a sound. Its ID is not reused.
    /// - Throws: `SoundError` with `.unknownSoundID` if no sound has that ID.
    public func dispose(_ id: SystemSoundID) throws(SoundError) {
        let removed = table.withLock { $0.sounds.removeValue(forKey: id) }
        guard removed != nil else { throw Self.unknown(id) }
    }

    /// The sound registered under `id`, or nil.
    public func sound(_ id: SystemSoundID) -> RegisteredSound? {
        table.withLock { $0.sounds[id] }
    }

    /// The length of the sound registered under `id`, in seconds.
    /// - Throws: `SoundError` with `.unknownSoundID` if no sound has that ID.
    public func duration(of id: SystemSoundID) throws(SoundError) -> Double {
        guard let sound = sound(id) else { throw Self.unknown(id) }
        return sound.duration
    }

    /// Every registered ID, in ascending order.
    public var soundIDs: [SystemSoundID] {
        table.withLock { $0.sounds.keys.sorted() }
    }

    /// Re-registers the sound `id` at another level: the new samples are derived from the sound's
    /// original decoded PCM (never from an earlier adjustment, so changes do not accumulate) and
    /// replace the old ones under the same ID in one step. Voices already playing hold the old
    /// samples and finish unchanged; plays started afterwards use the new ones.
    ///
    /// The work (one pass over the samples, two more with the limiter) runs outside the lock.
    /// Concurrent changes to one ID: the last to finish wins, and each result is a whole adjustment.
    /// - Returns: the sound as now registered.
    /// - Throws: `SoundError` with `.unknownSoundID` if no sound has that ID (or it was disposed meanwhile).
    @discardableResult
    public func setVolume(_ adjustment: VolumeAdjustment, for id: SystemSoundID) throws(SoundError) -> RegisteredSound {
        guard let current = sound(id) else { throw Self.unknown(id) }
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
    ) throws(SoundError) -> RegisteredSound {
        try setVolume(VolumeAdjustment(multiplier: multiplier, limiting: limiting), for: id)
    }

    /// The EBU R128 integrated loudness of the sound `id` as it now plays, in LUFS (libebur128;
    /// a mono sound counts as played on both speakers).
    /// - Throws: `.unknownSoundID`; `.loudnessUnmeasurable` for a silent sound or one with no
    ///   400 ms stretch above −70 LUFS.
    public func loudness(of id: SystemSoundID) throws(SoundError) -> Double {
        guard let sound = sound(id) else { throw Self.unknown(id) }
        guard let loudness = Loudness.integrated(sound.buffer) else {
            throw SoundError(.loudnessUnmeasurable, source: sound.source.description)
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
    /// - Throws: `.unknownSoundID`; `.loudnessUnmeasurable` (nothing changes then).
    @discardableResult
    public func normalizeLoudness(
        of id: SystemSoundID, to target: Double, limiting: VolumeAdjustment.Limiting = .peakLimiter()
    ) throws(SoundError) -> RegisteredSound {
        guard let sound = sound(id) else { throw Self.unknown(id) }
        guard let measured = Loudness.integrated(sound.original) else {
            throw SoundError(.loudnessUnmeasurable, source: sound.source.description)
        }
        return try setVolume(.decibels(target - measured, limiting: limiting), for: id)
    }

    /// Writes the sound `id` as it now plays (volume applied) to `path`, atomically.
    ///
    /// The format is `format`, else the container and sample format of the file the sound was
    /// decoded from, else 16-bit WAV (in-memory sounds). The samples are at the engine rate (the
    /// registry does not keep the source rate's samples); a file written at that rate in a lossless
    /// format decodes back to the same samples, within the format's precision.
    /// - Throws: `.unknownSoundID`; `.writeFailed` with libsndfile's or the system's message.
    public func export(_ id: SystemSoundID, to path: String, format: SoundFileFormat? = nil) throws(SoundError) {
        guard let sound = sound(id) else { throw Self.unknown(id) }
        try SoundFileWriter.write(sound.buffer, to: path, format: format ?? sound.sourceFormat ?? .wav16)
    }

    private func insert(_ buffer: PCMBuffer, source: SoundSource, format: SoundFileFormat?) throws(SoundError)
        -> SystemSoundID
    {
        let id: SystemSoundID? = table.withLock { table in
            guard table.nextID <= UInt64(SystemSoundID.max) else { return nil }
            let id = SystemSoundID(table.nextID)
            table.nextID += 1
            table.sounds[id] = RegisteredSound(id: id, buffer: buffer, source: source, sourceFormat: format)
            return id
        }
        guard let id else { throw SoundError(.soundIDsExhausted, source: source.description) }
        return id
    }

    private static func unknown(_ id: SystemSoundID) -> SoundError {
        SoundError(.unknownSoundID(id), source: "sound \(id)")
    }
}
