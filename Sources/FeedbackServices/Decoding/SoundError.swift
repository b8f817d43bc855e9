/// The error of reading and decoding sounds — sound files and in-memory samples: what failed, with
/// which source, and why.
///
/// `source` names the file (its path) or, for sounds made from memory, the name they were given;
/// `detail` carries the underlying library's or the system's own words where there are any
/// (libsndfile's `sf_strerror`, `strerror(errno)`). What a registry refuses is a `RegistryError`
/// (which wraps a `SoundError` when registering decodes a file); writing a file is a `FileError`.
public struct SoundError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why a sound could not be read or decoded.
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
        /// libsndfile, which reads every sound file, cannot be loaded; `detail` says why and names
        /// the Debian package that provides it.
        case libraryUnavailable
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
        errorSentence(source, summary, detail: detail)
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
        case .libraryUnavailable: "cannot be read: libsndfile cannot be loaded"
        }
    }
}

extension SoundError {
    /// The error for a sound file `openRegularFile` refused.
    init(refused refusal: OpenRefusal, source: String) {
        switch refusal {
        case .notFound(let error): self.init(.notFound, source: source, detail: error.description)
        case .permissionDenied(let error): self.init(.permissionDenied, source: source, detail: error.description)
        case .isDirectory: self.init(.isDirectory, source: source)
        case .notARegularFile: self.init(.notARegularFile, source: source)
        case .failed(let error): self.init(.ioError(errno: error.rawValue), source: source, detail: error.description)
        }
    }
}

func formatSeconds(_ seconds: Double) -> String {
    let rounded = (seconds * 1000).rounded() / 1000
    return "\(rounded) s"
}
