import FeedbackServices
import Glibc

/// The loaded feedback theme's files (and the pattern files it names), watched with inotify: a
/// theme edited, replaced (an editor's rename) or removed is read again without SIGHUP, as a device theme package's upgrade or a user's
/// edit of `~/.config/feedbackd/themes/NAME.json` expects. The watch is on each file's directory
/// and only the theme's own names count, so that other files there (the other devices' themes)
/// cause no reload. Idle, it costs nothing: the bus loop polls its descriptor with the rest.
///
/// Thread safety: `watch` (after each load, on a reload thread) and `themeFileChanged` (on the bus
/// thread) share the watch table behind a lock.
final class ThemeFileWatch: Sendable {
    /// The inotify descriptor the bus loop polls.
    let descriptor: Int32
    /// Each watch: its directory and the theme's file names in it.
    private let watched = Lock<[Int32: Set<String>]>([:])

    /// Nil when inotify cannot be used (then only SIGHUP reloads the theme).
    init?() {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
    }

    deinit { close(descriptor) }

    /// Watches the directories of `files` (a theme's chain, absolute paths) instead of what was
    /// watched before.
    func watch(_ files: [String]) {
        var names: [String: Set<String>] = [:]
        for file in files {
            guard let slash = file.lastIndex(of: "/") else { continue }
            let directory = slash == file.startIndex ? "/" : String(file[..<slash])
            names[directory, default: []].insert(String(file[file.index(after: slash)...]))
        }
        watched.withLock { watched in
            for watch in watched.keys { inotify_rm_watch(descriptor, watch) }
            watched.removeAll()
            let events = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE)
            for (directory, files) in names {
                let watch = inotify_add_watch(descriptor, directory, events)
                if watch >= 0 { watched[watch, default: []].formUnion(files) }
            }
        }
    }

    /// Reads every event waiting; whether one was about a theme file.
    func themeFileChanged() -> Bool {
        var changed = false
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return changed }
            let table = watched.withLock { $0 }
            var offset = 0
            // Each event: wd (Int32), mask, cookie, len (UInt32), then len bytes of NUL-padded name.
            while offset + 16 <= count {
                let (watch, length) = buffer.withUnsafeBytes { bytes in
                    (bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                        Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let end = min(count, offset + 16 + length)
                let name = String(decoding: buffer[(offset + 16)..<end].prefix { $0 != 0 }, as: UTF8.self)
                if table[watch]?.contains(name) == true { changed = true }
                offset += 16 + length
            }
        }
    }
}
