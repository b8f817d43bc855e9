import Glibc
import Synchronization

/// Notices vibrators appearing and disappearing, by watching the directory with inotify
/// (`inotify_add_watch` for created, deleted and re-permissioned entries); no udev needed.
///
/// The handler runs on the monitor's own thread, once per change, in order. The monitor keeps
/// watching until `cancel()`, which may be called from any thread, including the handler.
public final class VibratorMonitor: Sendable {
    /// A change in the set of vibrators.
    public enum Change: Sendable, Equatable {
        /// A vibrator is there that was not before (plugged in, or now permitted).
        case appeared(VibratorInfo)
        /// The vibrator at this node is gone.
        case disappeared(path: String)
    }

    private let discovery: VibratorDiscovery
    private let handler: @Sendable (Change) -> Void
    /// Read only by the monitor's thread, which closes it when it ends.
    private let inotify: Int32
    /// Signalled by `cancel()`; the monitor's thread watches it beside `inotify`.
    private let wake: EventFD
    private let thread: Mutex<Thread?>
    private let known: Mutex<[String: VibratorInfo]>

    /// Starts watching `discovery.directory`. The vibrators present now are `current`; only later
    /// changes reach the handler.
    /// - Throws: `.ioError` when inotify cannot watch the directory.
    public init(
        discovery: VibratorDiscovery = VibratorDiscovery(), handler: @escaping @Sendable (Change) -> Void
    ) throws(HapticsError) {
        self.discovery = discovery
        self.handler = handler
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { throw HapticsError(errno: errno, source: discovery.directory) }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)
        guard inotify_add_watch(inotify, discovery.directory, mask) >= 0 else {
            let error = HapticsError(errno: errno, source: discovery.directory)
            Glibc.close(inotify)
            throw error
        }
        do {
            wake = try EventFD()
        } catch {
            Glibc.close(inotify)
            throw HapticsError(errno: error.rawValue, source: discovery.directory)
        }
        self.inotify = inotify
        known = Mutex(Dictionary(((try? discovery.vibrators()) ?? []).map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a }))
        thread = Mutex(nil)
        do {
            // The thread holds the monitor until it ends.
            let started = try startThread(name: "fbs-vibrators") { [self] in
                run()
                Glibc.close(inotify)
            }
            thread.withLock { $0 = started }
        } catch {
            Glibc.close(inotify)
            throw HapticsError(.ioError(errno: error.rawValue), source: discovery.directory, detail: "pthread_create")
        }
    }

    /// The vibrators as last seen.
    public var current: [VibratorInfo] {
        known.withLock { Array($0.values) }.sorted { ($0.path.count, $0.path) < ($1.path.count, $1.path) }
    }

    /// Stops watching; the handler is not called after `cancel()` returns (unless called from it).
    public func cancel() {
        guard let running = thread.withLock({ value -> Thread? in defer { value = nil }; return value }) else { return }
        wake.signal()
        if running.isCurrent {
            running.detach()
        } else {
            running.join()
        }
    }

    private func run() {
        var fds = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            guard let ready = try? System.poll(&fds, timeout: nil) else { return }
            if fds[1].revents != 0 { return }
            guard ready > 0, fds[0].revents != 0 else { continue }
            // The events only say that something changed; a rescan says what, and also catches
            // a node whose permissions udev fixes a moment after creating it.
            while (try? System.read(inotify, into: &buffer, count: buffer.count)) ?? 0 > 0 {}
            rescan()
        }
    }

    private func rescan() {
        let now = Dictionary(((try? discovery.vibrators()) ?? []).map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let changes = known.withLock { known -> [Change] in
            var changes: [Change] = []
            for path in known.keys.sorted() where now[path] != known[path] {
                changes.append(.disappeared(path: path))
            }
            for path in now.keys.sorted() where now[path] != known[path] {
                changes.append(.appeared(now[path]!))
            }
            known = now
            return changes
        }
        for change in changes { handler(change) }
    }
}
