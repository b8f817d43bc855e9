/// The one error type of decoding and registering sounds: what failed, with which source, and why.
///
/// `source` names the file (its path) or, for sounds made from memory, the name they were given;
/// `detail` carries the underlying library's or the system's own words where there are any
/// (libsndfile's `sf_strerror`, `strerror(errno)`).
public struct SoundError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why a sound could not be decoded or registered.
    public enum Reason: Sendable, Equatable {
        /// No file at that path (`ENOENT`, `ENOTDIR`), or no way to reach one: a loop of symbolic
        /// links (`ELOOP`).
        case notFound
        /// The file exists but may not be read (`EACCES`, `EPERM`).
        case permissionDenied
        /// The path names a directory.
        case isDirectory
        /// The path names something that is not a regular file: a FIFO, a device, a socket.
        /// These are refused before any read, so a FIFO without a writer or `/dev/zero` cannot hang
        /// or exhaust memory.
        case notARegularFile
        /// libsndfile does not recognise the data as any sound format it reads.
        case notASoundFile
        /// The container was recognised but its contents are damaged (a truncated header, a chunk
        /// that contradicts another, a read that fails mid-stream in the codec).
        case malformed
        /// The container was recognised but its encoding is one libsndfile cannot decode.
        case unsupportedEncoding
        /// The sound holds no audio frames (including a zero-byte file).
        case empty
        /// The sound is longer than the limit for system sounds (30 s); it is refused, never
        /// truncated. AudioServices reports this as `kAudioServicesSystemSoundExceededMaximumDurationError` (−1502).
        case exceedsMaximumDuration(seconds: Double, limit: Double)
        /// More channels than the down-mix handles.
        case tooManyChannels(Int, limit: Int)
        /// A sample rate outside the supported range.
        case invalidSampleRate(Int, supported: ClosedRange<Int>)
        /// In-memory samples that cannot be a sound: a count that is not a whole number of frames,
        /// or a NaN or infinite value.
        case invalidSamples(String)
        /// The system refused a read (`errno`).
        case ioError(errno: Int32)
        /// The ID names no registered sound.
        case unknownSoundID(UInt32)
        /// Every ID a registry can hand out has been used once; IDs are never reused in a process.
        case soundIDsExhausted
        /// Writing a sound file failed.
        case writeFailed
        /// The sound's loudness cannot be measured: it is silent, or has no 400 ms stretch above
        /// EBU R128's −70 LUFS gate, so it cannot be normalised.
        case loudnessUnmeasurable
        /// The persistent registry file (`SoundRegistryFile`) cannot be read as one: not JSON, a
        /// format this version does not know, or entries that contradict each other. It is left
        /// exactly as it is; `detail` says what is wrong.
        case registryDamaged
        /// Another process held the persistent registry's lock for longer than the wait allowed.
        case registryBusy(waited: Double)
    }

    /// Why it failed.
    public var reason: Reason
    /// The file's path, or the name of an in-memory sound.
    public var source: String
    /// The underlying library's or system's message, where there is one.
    public var detail: String?

    /// Creates an error.
    public init(_ reason: Reason, source: String, detail: String? = nil) {
        self.reason = reason
        self.source = source
        self.detail = detail
    }

    /// A sentence naming the source and the cause, for logs and the command line.
    public var description: String {
        var text = "\(source): \(summary)"
        if let detail, !detail.isEmpty { text += " (\(detail))" }
        return text
    }

    private var summary: String {
        switch reason {
        case .notFound: "no such file"
        case .permissionDenied: "permission denied"
        case .isDirectory: "is a directory, not a sound file"
        case .notARegularFile: "not a regular file (a FIFO, device or socket is not read)"
        case .notASoundFile: "not a sound file in any format libsndfile reads"
        case .malformed: "damaged sound file"
        case .unsupportedEncoding: "unsupported encoding"
        case .empty: "holds no audio"
        case .exceedsMaximumDuration(let seconds, let limit):
            "lasts \(formatSeconds(seconds)), longer than the \(formatSeconds(limit)) limit for system sounds"
        case .tooManyChannels(let count, let limit):
            "has \(count) channels; at most \(limit) can be down-mixed"
        case .invalidSampleRate(let rate, let supported):
            "sample rate \(rate) Hz is outside \(supported.lowerBound)…\(supported.upperBound) Hz"
        case .invalidSamples(let why): "invalid samples: \(why)"
        case .ioError(let code): "read failed (errno \(code))"
        case .unknownSoundID(let id): "no registered sound has ID \(id)"
        case .soundIDsExhausted: "every sound ID has been used"
        case .writeFailed: "could not be written"
        case .registryDamaged: "damaged sound registry; it was left untouched (repair or remove the file)"
        case .registryBusy(let waited): "another process has held the registry's lock for \(formatSeconds(waited))"
        case .loudnessUnmeasurable: "too short or too quiet to measure its loudness (EBU R128 needs 400 ms above -70 LUFS)"
        }
    }
}

func formatSeconds(_ seconds: Double) -> String {
    let rounded = (seconds * 1000).rounded() / 1000
    return "\(rounded) s"
}
