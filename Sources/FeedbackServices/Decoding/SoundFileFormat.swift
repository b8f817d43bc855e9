internal import CSndFile

/// A sound file's container and encoding, as libsndfile names them (`SF_FORMAT_*`).
///
/// Decoding reports the format a file had; writing takes one of the presets (`.wav16`, `.flac16`, …)
/// or the format a decoded file reported, so that an adjusted sound can be saved as its source was.
public struct SoundFileFormat: Sendable, Hashable, CustomStringConvertible {
    /// libsndfile's `SF_INFO.format`: container bits ORed with encoding bits.
    let rawValue: Int32

    init(rawValue: Int32) { self.rawValue = rawValue }

    /// 16-bit PCM WAV: the format every Linux sound tool, libcanberra included, reads.
    public static let wav16 = Self(SF_FORMAT_WAV, SF_FORMAT_PCM_16)
    /// 24-bit PCM WAV.
    public static let wav24 = Self(SF_FORMAT_WAV, SF_FORMAT_PCM_24)
    /// 32-bit float WAV.
    public static let wavFloat = Self(SF_FORMAT_WAV, SF_FORMAT_FLOAT)
    /// 16-bit PCM RF64 (WAV without the 4 GiB limit).
    public static let rf64_16 = Self(SF_FORMAT_RF64, SF_FORMAT_PCM_16)
    /// 16-bit PCM AIFF.
    public static let aiff16 = Self(SF_FORMAT_AIFF, SF_FORMAT_PCM_16)
    /// 16-bit PCM in Apple's Core Audio Format.
    public static let caf16 = Self(SF_FORMAT_CAF, SF_FORMAT_PCM_16)
    /// Apple Lossless (16-bit) in CAF.
    public static let cafALAC16 = Self(SF_FORMAT_CAF, SF_FORMAT_ALAC_16)
    /// 16-bit FLAC.
    public static let flac16 = Self(SF_FORMAT_FLAC, SF_FORMAT_PCM_16)
    /// Ogg Vorbis (lossy).
    public static let oggVorbis = Self(SF_FORMAT_OGG, SF_FORMAT_VORBIS)
    /// Ogg Opus (lossy; libsndfile writes it at 8, 12, 16, 24 or 48 kHz only).
    public static let oggOpus = Self(SF_FORMAT_OGG, SF_FORMAT_OPUS)
    /// MPEG-1 Layer III (lossy).
    public static let mp3 = Self(SF_FORMAT_MPEG, SF_FORMAT_MPEG_LAYER_III)

    private init(_ container: Int, _ encoding: Int) {
        rawValue = Int32(container | encoding)
    }

    /// The usual format for a file name's extension (`wav`, `rf64`, `aif`/`aiff`, `caf`, `flac`,
    /// `ogg`/`oga`, `opus`, `mp3`), or nil for an extension we do not write.
    public init?(fileExtension: String) {
        switch fileExtension.lowercased() {
        case "wav": self = .wav16
        case "rf64": self = .rf64_16
        case "aif", "aiff": self = .aiff16
        case "caf": self = .caf16
        case "flac": self = .flac16
        case "ogg", "oga": self = .oggVorbis
        case "opus": self = .oggOpus
        case "mp3": self = .mp3
        default: return nil
        }
    }

    /// The container's name, e.g. "WAV (Microsoft)" (`SFC_GET_FORMAT_INFO`).
    public var containerName: String { Self.name(of: Int(rawValue) & Int(SF_FORMAT_TYPEMASK)) }

    /// The encoding's name, e.g. "Signed 16 bit PCM".
    public var encodingName: String { Self.name(of: Int(rawValue) & Int(SF_FORMAT_SUBMASK)) }

    /// Whether the encoding discards information (Vorbis, Opus, MPEG).
    public var isLossy: Bool {
        let encoding = Int(rawValue) & Int(SF_FORMAT_SUBMASK)
        return [SF_FORMAT_VORBIS, SF_FORMAT_OPUS, SF_FORMAT_MPEG_LAYER_I, SF_FORMAT_MPEG_LAYER_II,
                SF_FORMAT_MPEG_LAYER_III].contains(encoding)
    }

    /// Whether decoded samples can be NaN or infinite: only float encodings store such values.
    var mayHoldNonFinite: Bool {
        let encoding = Int(rawValue) & Int(SF_FORMAT_SUBMASK)
        return encoding == SF_FORMAT_FLOAT || encoding == SF_FORMAT_DOUBLE
    }

    /// "container, encoding".
    public var description: String { "\(containerName), \(encodingName)" }

    private static func name(of format: Int) -> String {
        var info = SF_FORMAT_INFO()
        info.format = Int32(format)
        let size = Int32(MemoryLayout<SF_FORMAT_INFO>.size)
        guard sf_command(nil, Int32(SFC_GET_FORMAT_INFO), &info, size) == 0, let name = info.name else {
            return "format 0x\(String(format, radix: 16))"
        }
        return String(cString: name)
    }
}
