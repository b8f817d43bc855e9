/// The number that names a sound, as in Apple's AudioServices.
///
/// One number means one sound to the library, `feedbackctl` and the session service. The ranges
/// (`SoundIDRange`):
///
/// | IDs | what they name |
/// |---|---|
/// | 1000…1351 | system sounds, looked up in the sound theme (1007 is the tri-tone) |
/// | 4094, 4096 | Apple's `kSystemSoundID_FlashScreen` and `kSystemSoundID_UserPreferredAlert`: no sound here |
/// | 4095 | `kSystemSoundID_Vibrate` |
/// | 4097…999,999 | the persistent registry (`SoundRegistryFile`, `feedbackctl register`): the same sound in every process |
/// | 1,000,000…1,999,999,999 | process-local sounds (`AudioServicesCreateSystemSoundID`, `SoundRegistry.register`): only the process that registered them can play them |
/// | 2,000,000,000 and up | reserved for the session service's per-client sounds |
public typealias SystemSoundID = UInt32

/// Which range a `SystemSoundID` falls in, and so who can play it. A value; safe to share across threads.
public enum SoundIDRange: Sendable, Equatable, CaseIterable, CustomStringConvertible {
    /// 1000…1351: system sounds, resolved through `SystemSoundCatalog` and the sound theme.
    case system
    /// 4095: `kSystemSoundID_Vibrate`.
    case vibrate
    /// 4097…999,999: the persistent registry, shared by every process of the user.
    case persistent
    /// 1,000,000…1,999,999,999: sounds registered inside one process.
    case processLocal
    /// 2,000,000,000 and up: reserved for the session service's per-client sounds.
    case service
    /// Any other number: no sound can have it.
    case unassigned

    /// The system sound IDs.
    public static let systemIDs: ClosedRange<SystemSoundID> = 1000...1351
    /// The IDs `SoundRegistryFile` hands out, from its first.
    public static let persistentIDs: ClosedRange<SystemSoundID> = 4097...999_999
    /// The IDs `SoundRegistry` hands out inside a process.
    public static let processLocalIDs: ClosedRange<SystemSoundID> = 1_000_000...1_999_999_999
    /// The IDs reserved for the session service.
    public static let serviceIDs: ClosedRange<SystemSoundID> = 2_000_000_000...SystemSoundID.max

    /// The range `id` falls in.
    public init(_ id: SystemSoundID) {
        self =
            if Self.systemIDs.contains(id) { .system }
            else if id == kSystemSoundID_Vibrate { .vibrate }
            else if Self.persistentIDs.contains(id) { .persistent }
            else if Self.processLocalIDs.contains(id) { .processLocal }
            else if Self.serviceIDs.contains(id) { .service }
            else { .unassigned }
    }

    /// The range's IDs and what they name, for messages: "4097…999999 (the persistent registry)".
    public var description: String {
        switch self {
        case .system: "1000…1351 (system sounds)"
        case .vibrate: "4095 (vibrate)"
        case .persistent: "4097…999999 (the persistent registry)"
        case .processLocal: "1000000…1999999999 (sounds registered inside one process)"
        case .service: "2000000000 and up (the session service's per-client sounds)"
        case .unassigned: "no range (not a sound ID)"
        }
    }
}

/// The ID that vibrates instead of playing a sound (AudioServices' `kSystemSoundID_Vibrate`).
public let kSystemSoundID_Vibrate: SystemSoundID = 4095

/// Apple's ID for the alert sound the user chose in macOS's Sound settings (4096). Defined with
/// Apple's value so that code naming it compiles; Linux has no such setting and the ID names no
/// sound here: playing it plays nothing, and its completion runs as for any ID with no sound.
public let kSystemSoundID_UserPreferredAlert: SystemSoundID = 0x1000

/// Apple's ID that flashes the screen on macOS (4094). Defined with Apple's value so that code
/// naming it compiles; nothing here flashes a screen, and the ID names no sound: playing it plays
/// nothing, and its completion runs as for any ID with no sound.
public let kSystemSoundID_FlashScreen: SystemSoundID = 0x0FFE

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

    /// The bytes of samples it holds (the original counted once when the level is unchanged).
    package var byteCount: Int {
        let bytes = buffer.samples.count * MemoryLayout<Float>.size
        return volume == .unchanged ? bytes : bytes + original.samples.count * MemoryLayout<Float>.size
    }

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
