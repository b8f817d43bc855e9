/// The number that names a registered sound, as in Apple's AudioServices.
///
/// 1000…1351 are the system sounds (1007 is the tri-tone), 4095 is `kSystemSoundID_Vibrate`, and
/// sounds registered by a program get IDs from 4097 up, never reused within the process.
public typealias SystemSoundID = UInt32

/// The ID that vibrates instead of playing a sound (AudioServices' `kSystemSoundID_Vibrate`).
public let kSystemSoundID_Vibrate: SystemSoundID = 4095

/// Where a registered sound came from.
public enum SoundSource: Sendable, Equatable, CustomStringConvertible {
    /// Decoded from the file at this path.
    case file(path: String)
    /// Made from samples in memory, under this name.
    case memory(name: String)

    /// The path, or the name.
    public var description: String {
        switch self {
        case .file(let path): path
        case .memory(let name): name
        }
    }
}

/// A sound in a `SoundRegistry`: its ID, its decoded samples and where they came from.
public struct RegisteredSound: Sendable {
    /// The ID it is registered under.
    public let id: SystemSoundID
    /// The samples that play: the decoded samples at the engine rate, with `volume` applied.
    public let buffer: PCMBuffer
    /// The samples as decoded, before any volume change. Every change starts again from these, so
    /// repeated changes never accumulate rounding or clipping.
    public let original: PCMBuffer
    /// The volume change `buffer` was made with; `VolumeAdjustment.unchanged` after registering.
    public let volume: VolumeAdjustment
    /// The file or in-memory name it was made from.
    public let source: SoundSource
    /// The source file's format; nil for in-memory sounds.
    public let sourceFormat: SoundFileFormat?

    /// The length in seconds.
    public var duration: Double { buffer.duration }

    init(id: SystemSoundID, buffer: PCMBuffer, source: SoundSource, sourceFormat: SoundFileFormat?) {
        self.init(id: id, buffer: buffer, original: buffer, volume: .unchanged, source: source, sourceFormat: sourceFormat)
    }

    init(
        id: SystemSoundID, buffer: PCMBuffer, original: PCMBuffer, volume: VolumeAdjustment, source: SoundSource,
        sourceFormat: SoundFileFormat?
    ) {
        self.id = id
        self.buffer = buffer
        self.original = original
        self.volume = volume
        self.source = source
        self.sourceFormat = sourceFormat
    }
}
