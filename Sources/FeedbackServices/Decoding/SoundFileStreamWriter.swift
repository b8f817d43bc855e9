internal import CSndFile
import Glibc

/// Writes a sound file block by block, in memory that does not grow with its length: what a render
/// of any length streams into (`FileOutput`). `SoundFileWriter` writes a whole buffer at once.
///
/// Atomic as `SoundFileWriter` is: the frames go to a temporary file beside the destination, which
/// `commit()` flushes and renames over it, so a reader never sees half a file. A writer released
/// without `commit()` (a failure, a cancelled render) removes its temporary file and leaves
/// whatever was at the destination untouched.
///
/// What may be at the destination: nothing, or a regular file (replaced). Anything else — a FIFO,
/// a device such as `/dev/null`, a directory, a symbolic link — is refused before anything is
/// written, and never replaced (`checkDestination`, the one place that decides; the writers are to
/// share one rule for such targets).
///
/// Owned by one render from open to commit and never shared, so it needs no lock; being
/// non-copyable, it closes the libsndfile handle and the descriptor exactly once.
struct SoundFileStreamWriter: ~Copyable {
    /// The destination, as given.
    let path: String
    /// Channels per frame.
    let channelCount: Int
    private let temporaryPath: String
    private let fd: Int32
    private let handle: OpaquePointer
    // What `commit()` got through, so that deinit undoes only the rest.
    private var handleClosed = false
    private var descriptorClosed = false
    private var committed = false

    /// Opens a temporary file beside `path` and starts a sound file in `format` there
    /// (`sf_open_fd`); integer encodings clip samples beyond ±1 (`SFC_SET_CLIPPING`). The file
    /// gets mode 0644 less the process umask.
    /// - Throws: `FileError`: `.cannotCreate` when the destination is not a regular file or the
    ///   temporary file cannot be made, `.cannotWrite` when libsndfile cannot write `format` at
    ///   this rate and channel count.
    init(path: String, format: SoundFileFormat, sampleRate: Int, channelCount: Int) throws(FileError) {
        try Self.checkDestination(path)
        var info = SF_INFO()
        info.samplerate = Int32(clamping: sampleRate)
        info.channels = Int32(clamping: channelCount)
        info.format = format.rawValue
        guard sf_format_check(&info) == SF_TRUE else {
            throw FileError(
                .cannotWrite, path: path,
                detail: "libsndfile cannot write \(format) at \(sampleRate) Hz, \(channelCount) ch")
        }
        let temporaryPath = "\(path).tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd: Int32
        do {
            fd = try System.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o644)
        } catch {
            throw FileError(.cannotCreate, path: path, errno: error.rawValue)
        }
        // close_desc = 0: the descriptor stays ours, flushed and closed by commit or deinit.
        guard let handle = sf_open_fd(fd, Int32(SFM_WRITE), &info, 0) else {
            let message = String(cString: sf_strerror(nil))
            close(fd)
            unlink(temporaryPath)
            throw FileError(.cannotWrite, path: path, detail: message)
        }
        _ = sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        self.path = path
        self.channelCount = channelCount
        self.temporaryPath = temporaryPath
        self.fd = fd
        self.handle = handle
    }

    deinit {
        if !handleClosed { sf_close(handle) }
        if !descriptorClosed { close(fd) }
        if !committed { unlink(temporaryPath) }
    }

    /// Refuses a destination that exists and is not a regular file. `lstat`, so a symbolic link is
    /// refused too rather than replaced by a file.
    /// - Throws: `FileError` `.cannotCreate` saying the target is left as it is.
    static func checkDestination(_ path: String) throws(FileError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            // Nothing there (or a directory on the way is missing: creating the file says so).
            if errno == ENOENT { return }
            throw FileError(.cannotCreate, path: path, errno: errno)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw FileError(
                .cannotCreate, path: path, detail: "not a regular file; only a regular file is replaced, this is left as it is")
        }
    }

    /// Appends `frameCount` interleaved frames (`sf_writef_float`).
    /// - Throws: `FileError` `.cannotWrite` with libsndfile's message (a full disk, for one).
    func write(_ samples: UnsafePointer<Float>, frameCount: Int) throws(FileError) {
        let written = sf_writef_float(handle, samples, sf_count_t(frameCount))
        guard written == frameCount else {
            throw FileError(.cannotWrite, path: path, detail: String(cString: sf_strerror(handle)))
        }
    }

    /// Finishes the file (`sf_close` writes the header's lengths), flushes it to disk and renames
    /// it over the destination.
    /// - Throws: `FileError` `.cannotWrite`; the destination is untouched then.
    consuming func commit() throws(FileError) {
        let message = String(cString: sf_strerror(handle))
        handleClosed = true
        guard sf_close(handle) == 0 else { throw FileError(.cannotWrite, path: path, detail: message) }
        let synced = fsync(fd) == 0 ? 0 : errno
        descriptorClosed = true
        let closed = close(fd) == 0 ? 0 : errno
        if synced != 0 || closed != 0 { throw FileError(.cannotWrite, path: path, errno: synced != 0 ? synced : closed) }
        guard rename(temporaryPath, path) == 0 else { throw FileError(.cannotWrite, path: path, errno: errno) }
        committed = true
    }
}
