import Glibc

/// What identifies one version of a file without reading it: device, inode, size and modification
/// time. A file edited in place changes its size or time; one replaced by a rename changes its inode.
/// Readers that cache what they parsed from a file (the settings, the persistent registry) compare
/// stamps, one `stat` per lookup, to know when to read it again. A value; safe to share across threads.
struct FileStamp: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var seconds: Int
    var nanoseconds: Int

    /// The stamp of the file at `path` (following symlinks), or nil when it cannot be `stat`ed.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        seconds = info.st_mtim.tv_sec
        nanoseconds = info.st_mtim.tv_nsec
    }
}
