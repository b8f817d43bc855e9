internal import CFeedbackShims
internal import CSndFile
import Glibc

/// Writes a sound file block by block, in memory that does not grow with its length: what a render
/// of any length streams into (`FileOutput`). `SoundFileWriter` writes a whole buffer at once.
///
/// What is at the path is treated by the rule every writer follows (`AtomicFile`): a regular file
/// (or the one a symbolic link names) is replaced atomically — the frames go to a temporary file
/// beside it, which `commit()` flushes and renames over it, keeping the replaced file's mode — so a
/// reader never sees half a file; a FIFO or character device (`/dev/null`), or `-` for standard
/// output, is written into at `commit()`, never replaced (the file is built in an anonymous memory
/// file first, since libsndfile seeks back to finish headers: there the file's size is held in
/// memory, at most `FileOutput.maximumDuration` of it); a directory, block device or socket is
/// refused. A writer released without `commit()` (a failure, a cancelled render) removes its
/// temporary file and leaves whatever was at the path untouched.
///
/// Owned by one render from open to commit and never shared, so it needs no lock; being
/// non-copyable, it closes the libsndfile handle and the descriptor exactly once.
struct SoundFileStreamWriter: ~Copyable {
    /// Where the frames go until `commit()`.
    private enum Destination {
        /// A regular file at `path` (new, or replaced keeping its `mode`): the frames go to
        /// `temporary`, renamed over it.
        case file(path: String, temporary: String, mode: mode_t?)
        /// A FIFO or character device at `path`, or standard output when nil: the frames go to an
        /// anonymous memory file, copied into it.
        case stream(path: String?)
    }

    /// The path, as given.
    let path: String
    private let destination: Destination
    private let fd: Int32
    private let handle: OpaquePointer
    // What `commit()` got through, so that deinit undoes only the rest.
    private var handleClosed = false
    private var descriptorClosed = false
    private var committed = false

    /// Starts a sound file in `format` for `path` (`sf_open_fd`); integer encodings clip samples
    /// beyond ±1 (`SFC_SET_CLIPPING`). A new file gets mode 0644 less the process umask.
    /// - Throws: `FileError`: `.cannotWrite` when libsndfile cannot write `format` at this rate and
    ///   channel count or the path holds what is never written, `.cannotCreate` when the temporary
    ///   file cannot be made.
    init(path: String, format: SoundFileFormat, sampleRate: Int, channelCount: Int) throws(FileError) {
        var info = try format.writingInfo(sampleRate: sampleRate, channelCount: channelCount, path: path)
        let destination: Destination
        let fd: Int32
        let target = try (path == "-" ? AtomicFile.Target.stream : AtomicFile.target(of: path))
        switch target {
        case .absent(let resolved):
            let temporary = try AtomicFile.createTemporary(beside: resolved, mode: 0o644, reportedAs: path)
            (destination, fd) = (.file(path: resolved, temporary: temporary.path, mode: nil), temporary.fd)
        case .regular(let resolved, let mode):
            let temporary = try AtomicFile.createTemporary(beside: resolved, mode: 0o644, reportedAs: path)
            (destination, fd) = (.file(path: resolved, temporary: temporary.path, mode: mode), temporary.fd)
        case .stream:
            fd = fbs_memfd("feedbackservices-render")
            guard fd >= 0 else { throw FileError(.cannotWrite, path: path, errno: errno) }
            destination = .stream(path: path == "-" ? nil : path)
        }
        // close_desc = 0: the descriptor stays ours, closed by commit or deinit.
        guard let handle = quietly({ sf_open_fd(fd, Int32(SFM_WRITE), &info, 0) }) else {
            let message = String(cString: sf_strerror(nil))
            close(fd)
            if case .file(_, let temporary, _) = destination { unlink(temporary) }
            throw FileError(.cannotWrite, path: path, detail: message)
        }
        _ = sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        self.path = path
        self.destination = destination
        self.fd = fd
        self.handle = handle
    }

    deinit {
        if !handleClosed { quietly { _ = sf_close(handle) } }
        if !descriptorClosed { close(fd) }
        if !committed, case .file(_, let temporary, _) = destination { unlink(temporary) }
    }

    /// Appends `frameCount` interleaved frames (`sf_writef_float`).
    /// - Throws: `FileError` `.cannotWrite` with libsndfile's message (a full disk, for one).
    func write(_ samples: UnsafePointer<Float>, frameCount: Int) throws(FileError) {
        let written = quietly { sf_writef_float(handle, samples, sf_count_t(frameCount)) }
        guard written == frameCount else {
            throw FileError(.cannotWrite, path: path, detail: String(cString: sf_strerror(handle)))
        }
    }

    /// Finishes the file (`sf_close` writes the header's lengths) and puts it in place: renamed
    /// over a regular file (flushed first), or copied into a FIFO, device or standard output.
    /// - Throws: `FileError` `.cannotWrite`; a regular file at the path is untouched then.
    consuming func commit() throws(FileError) {
        let message = String(cString: sf_strerror(handle))
        handleClosed = true
        guard quietly({ sf_close(handle) }) == 0 else { throw FileError(.cannotWrite, path: path, detail: message) }
        switch destination {
        case .file(let final, let temporary, let mode):
            descriptorClosed = true
            try AtomicFile.commitTemporary((temporary, fd), over: final, mode: mode, reportedAs: path)
        case .stream(let target):
            let output = if let target { try AtomicFile.openStream(target) } else { STDOUT_FILENO }
            defer { if target != nil { close(output) } }
            try copyFile(to: output)
        }
        committed = true
    }

    /// Copies the finished file from its start into `output`, 64 KiB at a time.
    private func copyFile(to output: Int32) throws(FileError) {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var offset: off_t = 0
        while true {
            let got = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw FileError(.cannotWrite, path: path, errno: errno) }
            if got == 0 { return }
            do {
                try chunk.withUnsafeBytes { raw in
                    Result { () throws(Errno) in try System.writeAll(output, UnsafeRawBufferPointer(rebasing: raw[..<got])) }
                }.get()
            } catch {
                throw FileError(.cannotWrite, path: path, errno: error.rawValue)
            }
            offset += off_t(got)
        }
    }
}

extension SoundFileFormat {
    /// What libsndfile is told to write (`SF_INFO`), checked with `sf_format_check`.
    /// - Throws: `FileError` `.cannotWrite` naming `path` when libsndfile cannot write this format at
    ///   this rate and channel count.
    func writingInfo(sampleRate: Int, channelCount: Int, path: String) throws(FileError) -> SF_INFO {
        var info = SF_INFO()
        info.samplerate = Int32(clamping: sampleRate)
        info.channels = Int32(clamping: channelCount)
        info.format = rawValue
        guard sf_format_check(&info) == SF_TRUE else {
            throw FileError(
                .cannotWrite, path: path, detail: "libsndfile cannot write \(self) at \(sampleRate) Hz, \(channelCount) ch")
        }
        return info
    }
}
