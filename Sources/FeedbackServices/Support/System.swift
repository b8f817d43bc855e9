internal import CFeedbackShims
import Glibc

/// The package's system calls, one choke point per family, with one policy:
///
/// - A call interrupted by a signal (`EINTR`) is made again. Linux reports `EINTR` only when the
///   call did nothing, so the retry is always safe. Waits with a timeout (`poll`) are the one
///   exception: they return as if nothing were ready, so the caller recomputes its deadline.
/// - Any other failure throws the `Errno` the call left; callers turn it into their domain's error
///   (`SoundError`, `HapticsError`) where they know what the call meant.
///
/// Descriptors stay plain `Int32`s owned by the types that open them; these functions never close
/// one they were given. What other modules of the package use (reads, writes, `waitpid`) is
/// `package`, in Swift types; the rest stays internal.
///
/// Thread safety: every function may be called from any thread; none allocates or locks, so the
/// audio thread may use them.
package enum System {
    /// Makes `call` again while it fails with `EINTR`; any other failure (a negative result)
    /// throws `errno`.
    @inline(__always)
    private static func retryingInterrupts<Result: BinaryInteger>(_ call: () -> Result) throws(Errno) -> Result {
        while true {
            let result = call()
            if result >= 0 { return result }
            let error = Errno.current
            if error != .interrupted { throw error }
        }
    }

    /// Opens `path` (`open(2)`).
    /// - Returns: the new descriptor; the caller closes it.
    package static func open(_ path: String, _ flags: Int32, mode: UInt32 = 0) throws(Errno) -> Int32 {
        try retryingInterrupts { Glibc.open(path, flags, mode) }
    }

    /// Reads up to `count` bytes into `buffer` (`read(2)`).
    /// - Returns: the bytes read; 0 at the end of the file.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int) throws(Errno) -> Int {
        try retryingInterrupts { Glibc.read(fd, buffer, count) }
    }

    /// Writes up to `count` bytes from `buffer` in one call (`write(2)`).
    /// - Returns: the bytes written, which may be fewer.
    package static func write(_ fd: Int32, from buffer: UnsafeRawPointer, count: Int) throws(Errno) -> Int {
        try retryingInterrupts { Glibc.write(fd, buffer, count) }
    }

    /// Writes all of `bytes`, calling `write(2)` again after a short write.
    /// - Throws: `Errno`; `EIO` if a write wrote nothing.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let written = try write(fd, from: bytes.baseAddress! + offset, count: bytes.count - offset)
            guard written > 0 else { throw Errno.ioError }
            offset += written
        }
    }

    /// Fills all of `buffer` from `fd`, calling `read(2)` again after a short read.
    /// - Returns: false when the file ended first.
    package static func readAll(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Bool {
        var offset = 0
        while offset < buffer.count {
            let got = try read(fd, into: buffer.baseAddress! + offset, count: buffer.count - offset)
            guard got > 0 else { return false }
            offset += got
        }
        return true
    }

    /// The size of the regular file open at `fd`, checked on the descriptor itself (`fstat(2)`), so
    /// that what was checked is what is read; nil when it is something else: a FIFO, a device, a
    /// directory, a socket. Every reader of a file a client or a cache names checks it this way.
    package static func regularFileSize(_ fd: Int32) throws(Errno) -> Int? {
        var status = stat()
        _ = try retryingInterrupts { fstat(fd, &status) }
        return status.st_mode & S_IFMT == S_IFREG ? Int(status.st_size) : nil
    }

    /// An `ioctl(2)` whose argument is a pointer.
    static func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(Errno) {
        _ = try retryingInterrupts { fbs_ioctl_pointer(fd, request, argument) }
    }

    /// An `ioctl(2)` whose argument is an integer passed by value (`EVIOCRMFF`).
    static func ioctl(_ fd: Int32, _ request: UInt, value: Int) throws(Errno) {
        _ = try retryingInterrupts { fbs_ioctl_value(fd, request, value) }
    }

    /// Waits until one of `fds` is ready or `timeout` nanoseconds pass (`ppoll(2)`, so a deadline
    /// is kept to the nanosecond; nil waits as long as it takes). Each `revents` is cleared first.
    /// - Returns: how many descriptors are ready; 0 after the timeout, or when a signal ended the
    ///   wait early.
    static func poll(_ fds: inout [pollfd], timeout: UInt64?) throws(Errno) -> Int {
        for index in fds.indices { fds[index].revents = 0 }
        var limit = timespec()
        if let timeout {
            limit.tv_sec = Int(timeout / 1_000_000_000)
            limit.tv_nsec = Int(timeout % 1_000_000_000)
        }
        let count = UInt(fds.count)
        let result = fds.withUnsafeMutableBufferPointer { fds in
            timeout == nil ? fbs_ppoll(fds.baseAddress, count, nil) : fbs_ppoll(fds.baseAddress, count, &limit)
        }
        if result >= 0 { return Int(result) }
        let error = Errno.current
        if error == .interrupted { return 0 }
        throw error
    }

    /// Takes or releases an advisory lock on a whole file (`flock(2)`); with `LOCK_NB`, a lock
    /// held elsewhere throws `.wouldBlock`.
    static func flock(_ fd: Int32, _ operation: Int32) throws(Errno) {
        _ = try retryingInterrupts { lockFile(fd, operation) }
    }

    /// The names in directory `path`, `.` and `..` left out, in the order the file system gives
    /// them (`opendir(3)`, `readdir(3)`).
    /// - Throws: `Errno` when the directory cannot be opened (`ENOENT`, `EACCES`, `ENOTDIR`).
    static func directoryEntries(_ path: String) throws(Errno) -> [String] {
        guard let stream = opendir(path) else { throw Errno.current }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Waits for child `pid` to change state (`waitpid(2)`).
    /// - Returns: the child's pid (0 with `WNOHANG` while it runs on) and its wait status.
    package static func waitpid(_ pid: Int32, options: Int32 = 0) throws(Errno) -> (pid: Int32, status: Int32) {
        var status: Int32 = 0
        let changed = try retryingInterrupts { Glibc.waitpid(pid, &status, options) }
        return (changed, status)
    }
}

extension System {
    /// A pipe, both ends close-on-exec: (read end, write end).
    package static func pipe() throws(Errno) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard fbs_pipe_cloexec(&ends) == 0 else { throw Errno.current }
        return (ends[0], ends[1])
    }

    /// Adds to `actions` that the spawned child closes every descriptor above standard error
    /// (`posix_spawn_file_actions_addclosefrom_np`), so that it holds none of its parent's pipes
    /// open: a long-lived child that kept `swift test`'s event pipe cut the run's output short.
    /// `actions` points to a `posix_spawn_file_actions_t` (untyped: Glibc's types are internal here).
    package static func closeInheritedDescriptors(_ actions: UnsafeMutableRawPointer) {
        _ = fbs_spawn_close_from(actions, 3)
    }
}

/// glibc's `flock(2)`, named apart: inside `System`, `flock` is `System.flock`, and `Glibc.flock`
/// is the `struct flock`.
private func lockFile(_ fd: Int32, _ operation: Int32) -> Int32 {
    flock(fd, operation)
}
