internal import CFeedbackShims
import Glibc

/// Files written whole or not at all, the directories they live in, and the one rule every writer
/// follows for what already is at the path.
///
/// What a write does with the path's current occupant:
/// - nothing there: a new regular file;
/// - a regular file: replaced atomically (a temporary file beside it, flushed, renamed over it);
/// - a symbolic link: followed to the regular file it names, which is replaced as above; the link
///   stays a link (a dangling link, or a loop, is refused);
/// - a FIFO or a character device (`/dev/null`, a pipe to a player): written into, never replaced,
///   when the writer is a sound output (`StreamTargets.writeInto`); refused otherwise;
/// - a directory, a block device or a socket: refused.
///
/// No write ever renames over, unlinks or truncates anything that is not a regular file, so
/// `--output /dev/null` run as root leaves `/dev/null` a device.
package enum AtomicFile {
    /// What a write does with a FIFO or character device at its path.
    enum StreamTargets {
        /// Writes the bytes into it (sound outputs: `--output /dev/null`, a FIFO a player reads);
        /// `-` then means standard output.
        case writeInto
        /// Refuses it (`FileError.Reason.cannotWrite`): a settings or registry file must be a
        /// regular file.
        case refuse
    }

    /// The permissions of the file a write leaves behind.
    enum Permissions {
        /// Exactly this mode, whatever the umask and whatever the file had (the registry: 0600).
        case exactly(mode_t)
        /// The replaced file's own mode; a new file gets `new` less the umask.
        case keepingExisting(new: mode_t)
    }

    /// Writes `bytes` to `path` as the rules above say; a regular file is replaced atomically and
    /// its directory flushed, so a reader sees the old file or the new one and a crash never
    /// leaves half a file.
    /// - Throws: `FileError`: `.cannotCreate` when the temporary file cannot be made, `.cannotWrite`
    ///   when writing, flushing or renaming fails or the path holds what may not be written (the
    ///   detail says what), naming `path` and the `errno`; a regular file at `path` is untouched then.
    static func write(
        _ bytes: [UInt8], to path: String, permissions: Permissions, streams: StreamTargets
    ) throws(FileError) {
        if path == "-" && streams == .writeInto {
            return try writeAll(bytes, to: STDOUT_FILENO, path: "standard output")
        }
        switch try target(of: path) {
        case .absent(let resolved):
            try replace(resolved, with: bytes, existingMode: nil, permissions: permissions, reportedAs: path)
        case .regular(let resolved, let mode):
            try replace(resolved, with: bytes, existingMode: mode, permissions: permissions, reportedAs: path)
        case .stream:
            guard streams == .writeInto else {
                throw FileError(.cannotWrite, path: path, detail: "not a regular file; it is left as it is")
            }
            try writeIntoStream(bytes, path: path)
        }
    }

    /// `write(bytes, to: path, permissions: .exactly(mode), streams: .refuse)`: the registry's and
    /// the settings' kind of file.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(FileError) {
        try write(bytes, to: path, permissions: .exactly(mode), streams: .refuse)
    }

    /// What is at a path about to be written.
    enum Target {
        /// Nothing: create a regular file at this path (the link target for a symlink).
        case absent(String)
        /// A regular file at this path (the link target for a symlink), with its mode.
        case regular(String, mode: mode_t)
        /// A FIFO or a character device.
        case stream
    }

    /// What is at `path`, by the rules above (a symbolic link followed to what it names).
    /// - Throws: `FileError` `.cannotWrite` for what is never written (a directory, a block device,
    ///   a socket, a dangling link) or cannot be looked at.
    static func target(of path: String) throws(FileError) -> Target {
        var status = stat()
        if lstat(path, &status) != 0 {
            guard errno == ENOENT else { throw failure(path, errno) }
            return .absent(path)
        }
        var resolved = path
        if status.st_mode & S_IFMT == S_IFLNK {
            guard let real = realpath(path, nil) else {
                let code = errno
                throw FileError(
                    .cannotWrite, path: path, errno: code,
                    detail: code == ENOENT ? "a symbolic link to nothing; it is left as it is" : nil)
            }
            resolved = String(cString: real)
            free(real)
            guard stat(resolved, &status) == 0 else { throw failure(path, errno) }
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return .regular(resolved, mode: status.st_mode & 0o7777)
        case S_IFIFO, S_IFCHR: return .stream
        case S_IFDIR: throw FileError(.cannotWrite, path: path, detail: "is a directory")
        default:
            throw FileError(.cannotWrite, path: path, detail: "a block device or socket is never written")
        }
    }

    private static func replace(
        _ path: String, with bytes: [UInt8], existingMode: mode_t?, permissions: Permissions, reportedAs name: String
    ) throws(FileError) {
        let exact: mode_t? =
            switch permissions {
            case .exactly(let mode): mode
            case .keepingExisting: existingMode
            }
        let createMode: mode_t =
            switch permissions {
            case .exactly(let mode): mode
            case .keepingExisting(let new): new
            }
        let temporary = try createTemporary(beside: path, mode: createMode, reportedAs: name)
        var committed = false
        defer { if !committed { unlink(temporary.path) } }
        let code = writeAllBytes(bytes, to: temporary.fd)
        guard code == 0 else {
            close(temporary.fd)
            throw failure(name, code)
        }
        try commitTemporary(temporary, over: path, mode: exact, reportedAs: name)
        committed = true
    }

    /// A new temporary file beside `path` (`O_EXCL`, created with `mode`), to be renamed over it by
    /// `commitTemporary`; the caller removes it if it never is.
    /// - Throws: `FileError` `.cannotCreate`, naming `name`.
    static func createTemporary(
        beside path: String, mode: mode_t, reportedAs name: String
    ) throws(FileError) -> (path: String, fd: Int32) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        do {
            return (temporary, try System.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: mode))
        } catch {
            throw FileError(.cannotCreate, path: name, errno: error.rawValue)
        }
    }

    /// Gives the written temporary file `mode` (when not nil), flushes it to disk, closes it (on
    /// every path), renames it over `path` and flushes the directory.
    /// - Throws: `FileError` `.cannotWrite`, naming `name`; `path` is untouched then.
    static func commitTemporary(
        _ temporary: (path: String, fd: Int32), over path: String, mode: mode_t?, reportedAs name: String
    ) throws(FileError) {
        var code: Int32 = 0
        if let mode, fchmod(temporary.fd, mode) != 0 { code = errno }
        if code == 0 && fsync(temporary.fd) != 0 { code = errno }
        if close(temporary.fd) != 0 && code == 0 { code = errno }
        if code == 0 && rename(temporary.path, path) != 0 { code = errno }
        guard code == 0 else { throw failure(name, code) }
        let directory = parentDirectory(path)
        if let directoryFD = try? System.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    private static func writeIntoStream(_ bytes: [UInt8], path: String) throws(FileError) {
        let fd = try openStream(path)
        defer { close(fd) }
        try writeAll(bytes, to: fd, path: path)
    }

    /// Opens a FIFO or character device for writing, without creating, truncating or blocking: a
    /// FIFO that no process reads is refused at once (`ENXIO`) instead of waiting for a reader
    /// forever. The descriptor it returns blocks; the caller closes it.
    /// - Throws: `FileError` `.cannotWrite`.
    static func openStream(_ path: String) throws(FileError) -> Int32 {
        let fd: Int32
        do {
            fd = try System.open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        } catch {
            if error.rawValue == ENXIO {
                throw FileError(.cannotWrite, path: path, errno: ENXIO, detail: "no process is reading the FIFO")
            }
            throw failure(path, error.rawValue)
        }
        // The path may have been swapped between the check and the open: write only into what
        // the check allowed.
        var status = stat()
        guard fstat(fd, &status) == 0, [S_IFIFO, S_IFCHR].contains(status.st_mode & S_IFMT) else {
            close(fd)
            throw FileError(.cannotWrite, path: path, detail: "changed while it was being opened")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws(FileError) {
        let code = writeAllBytes(bytes, to: fd)
        guard code == 0 else { throw failure(path, code) }
    }

    /// Writes every byte (`System.writeAll`: `EINTR` retried); returns 0 or the `errno` that stopped it.
    private static func writeAllBytes(_ bytes: [UInt8], to fd: Int32) -> Int32 {
        do {
            try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try System.writeAll(fd, raw) } }.get()
            return 0
        } catch {
            return error.rawValue
        }
    }

    private static func failure(_ path: String, _ code: Int32) -> FileError {
        FileError(.cannotWrite, path: path, errno: code)
    }

    /// Creates `path` and its missing parents with `mode`; existing directories are left as they are.
    /// - Throws: `FileError` with `.cannotCreate` naming the directory that could not be made.
    static func makeDirectories(_ path: String, mode: mode_t) throws(FileError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/\(component)"
            if mkdir(current, mode) != 0 && errno != EEXIST {
                throw FileError(.cannotCreate, path: current, errno: errno)
            }
        }
    }

    /// The contents of `path`, or nil when there is no such file.
    /// - Throws: `FileError` for any other failure: `.notFound` (a directory on the path is not
    ///   one), `.permissionDenied`, `.notARegularFile`, `.ioError`, or `.tooLarge` for a file over
    ///   `limit` bytes.
    package static func read(_ path: String, limit: Int) throws(FileError) -> [UInt8]? {
        let opened: (fd: Int32, size: Int64)?
        do throws(OpenRefusal) {
            opened = try openRegularFileIfPresent(path)
        } catch {
            throw FileError(refused: error, path: path)
        }
        guard let (fd, size) = opened else { return nil }
        defer { close(fd) }
        guard size <= Int64(limit) else { throw FileError(.tooLarge(size: size, limit: limit), path: path) }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var count = 0
        while count < bytes.count {
            let got: Int
            do {
                got = try bytes.withUnsafeMutableBytes { raw in
                    Result { () throws(Errno) in try System.read(fd, into: raw.baseAddress! + count, count: raw.count - count) }
                }.get()
            } catch {
                throw FileError(.ioError, path: path, errno: error.rawValue)
            }
            if got == 0 { break }
            count += got
        }
        return Array(bytes[..<count])
    }
}

/// The small text files of settings we read: our own settings file, GTK's `settings.ini`, a sound
/// theme's `index.theme`.
enum SettingsFile {
    /// The most bytes such a file may have: 64 KiB. Real ones are a few hundred bytes (a theme's
    /// `index.theme` a few KiB at most); a larger one is refused unread, so a file of gigabytes
    /// (read again by every play) costs one `fstat`, not memory and minutes.
    static let sizeLimit = 64 << 10

    /// The file's bytes, or nil when there is none.
    /// - Throws: `FileError`: `.tooLarge` for a file over `sizeLimit`; `.notARegularFile` for a
    ///   directory, FIFO or device (never read, so never waited on); `.permissionDenied`, `.ioError`.
    static func read(_ path: String) throws(FileError) -> [UInt8]? {
        try AtomicFile.read(path, limit: sizeLimit)
    }
}
