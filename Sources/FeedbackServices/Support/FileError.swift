/// The error of the files FeedbackServices keeps for itself and the sound files it writes: the
/// settings file (`FeedbackSettings.store`), the persistent registry's file and its lock
/// (`SoundRegistryFile`), a sound file written by `SoundFileWriter` or rendered by `FileOutput`
/// (`SoundRegistry.export`, `feedbackctl … --output`) and libcanberra's cache of in-memory sounds.
///
/// Reading and decoding a sound is another domain (`SoundError`); so is what a registry refuses
/// (`RegistryError`, which wraps a `FileError` when its file is the trouble).
public struct FileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the file could not be read or written.
    public enum Reason: Sendable, Equatable {
        /// A directory on the path is missing or is not a directory (`ENOTDIR`), when reading a file
        /// whose absence alone is no error.
        case notFound
        /// The file exists but may not be opened (`EACCES`, `EPERM`).
        case permissionDenied
        /// The path names a directory, a FIFO, a device or a socket where a regular file belongs;
        /// it is refused before any read, so it can neither hang nor exhaust memory.
        case notARegularFile
        /// The file is larger than the most that is read of a file of its kind.
        case tooLarge(size: Int64, limit: Int)
        /// The system refused a read or a lock (`errno`).
        case ioError
        /// The file, or a directory on its path, could not be created (`open` with `O_CREAT`,
        /// `mkdir`); `errno` says why, or `detail` when no directory for it is known.
        case cannotCreate
        /// Writing, flushing or renaming the file failed (`errno`), or libsndfile could not encode
        /// the sound (`detail`).
        case cannotWrite
        /// A rendering would last `seconds`, more than the `limit` a rendered file may last
        /// (`FileOutput.maximumDuration`); nothing was rendered or written.
        case tooLong(seconds: Double, limit: Double)
    }

    /// Why it failed.
    public var reason: Reason
    /// The file's path (or, for a file with no path, what it is: "feedback settings").
    public var path: String
    /// The system's error code, when a system call failed.
    public var errno: Int32?
    /// The system's message (`strerror(errno)`) or the library's, where there is one.
    public var detail: String?

    /// Creates an error.
    public init(_ reason: Reason, path: String, errno: Int32? = nil, detail: String? = nil) {
        self.reason = reason
        self.path = path
        self.errno = errno
        self.detail = detail ?? errno.map { Errno(rawValue: $0).description }
    }

    /// A sentence naming the file and the cause, for logs and the command line.
    public var description: String {
        errorSentence(path, summary, detail: detail)
    }

    private var summary: String {
        switch reason {
        case .notFound: "no such file"
        case .permissionDenied: "permission denied"
        case .notARegularFile: "not a regular file"
        case .tooLarge(let size, let limit): "\(size) bytes, more than the \(limit) read at most"
        case .ioError: "read failed (errno \(errno ?? 0))"
        case .cannotCreate, .cannotWrite: "could not be written"
        case .tooLong(let seconds, let limit):
            "\(Self.seconds(seconds)) of sound, more than the \(Self.seconds(limit)) a rendered file may last"
        }
    }

    /// Whole seconds, however many: a rendering asked for may be longer than an `Int64` counts.
    private static func seconds(_ value: Double) -> String {
        value < 1e15 ? "\(Int64(value.rounded())) s" : "\(value) s"
    }
}

extension FileError {
    /// The error for a file `openRegularFile` refused.
    init(refused refusal: OpenRefusal, path: String) {
        switch refusal {
        case .notFound(let error): self.init(.notFound, path: path, errno: error.rawValue)
        case .permissionDenied(let error): self.init(.permissionDenied, path: path, errno: error.rawValue)
        case .isDirectory: self.init(.notARegularFile, path: path, detail: "a directory")
        case .notARegularFile: self.init(.notARegularFile, path: path, detail: "a FIFO, device or socket is not read")
        case .failed(let error): self.init(.ioError, path: path, errno: error.rawValue)
        }
    }
}
