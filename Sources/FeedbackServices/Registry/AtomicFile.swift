import Glibc

/// Small files written whole or not at all, and the directories they live in. `read` is also the
/// session service's bounded reader for theme files.
package enum AtomicFile {
    /// Replaces `path` with `bytes`: a temporary file beside it (created with exactly `mode`, not
    /// narrowed by the umask), written, flushed to disk, renamed over `path`, and the directory
    /// flushed, so a reader sees the old file or the new one and a crash never leaves half a file.
    /// - Throws: `FileError`: `.cannotCreate` when the temporary file cannot be made, `.cannotWrite`
    ///   when writing, flushing or renaming it fails, naming `path` and the `errno`; `path` is
    ///   untouched then.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(FileError) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd: Int32
        do {
            fd = try System.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: mode)
        } catch {
            throw FileError(.cannotCreate, path: path, errno: error.rawValue)
        }
        var committed = false
        defer { if !committed { unlink(temporary) } }
        var failure: Int32 = 0
        if fchmod(fd, mode) != 0 { failure = errno }
        if failure == 0 {
            do {
                try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try System.writeAll(fd, raw) } }.get()
            } catch {
                failure = error.rawValue
            }
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        if close(fd) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else { throw FileError(.cannotWrite, path: path, errno: failure) }
        committed = true
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if let directoryFD = try? System.open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
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
