import Glibc

/// Small files written whole or not at all, and the directories they live in. `read` is also the
/// session service's bounded reader for theme files.
package enum AtomicFile {
    /// Replaces `path` with `bytes`: a temporary file beside it (created with exactly `mode`, not
    /// narrowed by the umask), written, flushed to disk, renamed over `path`, and the directory
    /// flushed, so a reader sees the old file or the new one and a crash never leaves half a file.
    /// - Throws: `SoundError` with `.writeFailed`, naming `path` and the system's message; `path`
    ///   is untouched then.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(SoundError) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd: Int32
        do {
            fd = try System.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: mode)
        } catch {
            throw SoundError(.writeFailed, source: path, detail: error.description)
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
        guard failure == 0 else { throw SoundError(.writeFailed, source: path, detail: Errno(rawValue: failure).description) }
        committed = true
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if let directoryFD = try? System.open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// Creates `path` and its missing parents with `mode`; existing directories are left as they are.
    /// - Throws: `SoundError` with `.writeFailed` naming the directory that could not be made.
    static func makeDirectories(_ path: String, mode: mode_t) throws(SoundError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/\(component)"
            if mkdir(current, mode) != 0 && errno != EEXIST {
                throw SoundError(.writeFailed, source: current, detail: Errno.current.description)
            }
        }
    }

    /// The contents of `path`, or nil when there is no such file.
    /// - Throws: `SoundError` for any other failure: `.permissionDenied`, `.isDirectory`,
    ///   `.notARegularFile`, `.ioError`, or `.malformed` for a file over `limit` bytes.
    package static func read(_ path: String, limit: Int) throws(SoundError) -> [UInt8]? {
        guard let (fd, size) = try openRegularFileIfPresent(path) else { return nil }
        defer { close(fd) }
        guard size <= Int64(limit) else {
            throw SoundError(.malformed, source: path, detail: "\(size) bytes, more than the \(limit) expected at most")
        }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var count = 0
        while count < bytes.count {
            let got: Int
            do {
                got = try bytes.withUnsafeMutableBytes { raw in
                    Result { () throws(Errno) in try System.read(fd, into: raw.baseAddress! + count, count: raw.count - count) }
                }.get()
            } catch {
                throw SoundError(.ioError(errno: error.rawValue), source: path, detail: error.description)
            }
            if got == 0 { break }
            count += got
        }
        return Array(bytes[..<count])
    }
}
