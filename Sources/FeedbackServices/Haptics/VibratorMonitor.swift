import Glibc

/// Notices vibrators appearing and disappearing, by watching the directory with inotify
/// (`inotify_add_watch` for created, deleted and re-permissioned entries); no udev needed.
///
/// The handler runs on the monitor's own thread, once per change, in order. The monitor keeps
/// watching until `cancel()`, which may be called from any thread, including the handler.
package final class VibratorMonitor: Sendable {
    /// A change in the set of vibrators.
    package enum Change: Sendable, Equatable {
        /// A vibrator is there that was not before (plugged in, or now permitted).
        case appeared(VibratorInfo)
        /// The vibrator at this node is gone.
        case disappeared(path: String)
    }

    private let watcher: DeviceWatcher<String, VibratorInfo>

    /// Starts watching `discovery.directory`. The vibrators present now are `current`; only later
    /// changes reach the handler.
    /// - Throws: `.ioError` when inotify cannot watch the directory.
    package init(
        discovery: VibratorDiscovery = VibratorDiscovery(), handler: @escaping @Sendable (Change) -> Void
    ) throws(HapticsError) {
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { throw HapticsError(errno: errno, source: discovery.directory) }
        // IN_ATTRIB: udev fixes a node's permissions a moment after creating it.
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)
        guard inotify_add_watch(inotify, discovery.directory, mask) >= 0 else {
            let error = HapticsError(errno: errno, source: discovery.directory)
            Glibc.close(inotify)
            throw error
        }
        do {
            watcher = try DeviceWatcher(
                threadName: "fbs-vibrators", descriptor: inotify,
                drain: { inotify in
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while (try? System.read(inotify, into: &buffer, count: buffer.count)) ?? 0 > 0 {}
                    return true
                },
                scan: { (try? discovery.vibrators()) ?? [] }, key: { $0.path },
                appeared: { handler(.appeared($0)) }, disappeared: { handler(.disappeared(path: $0)) })
        } catch {
            throw HapticsError(.ioError(errno: error.rawValue), source: discovery.directory, detail: error.description)
        }
    }

    /// The vibrators as last seen.
    package var current: [VibratorInfo] {
        watcher.current.sorted { ($0.path.count, $0.path) < ($1.path.count, $1.path) }
    }

    /// Stops watching; the handler is not called after `cancel()` returns (unless called from it).
    package func cancel() {
        watcher.cancel()
    }
}
