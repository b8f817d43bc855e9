import Glibc
import Synchronization

/// The one loop behind the device monitors (`VibratorMonitor`, `LEDMonitor`): a thread of its own
/// waits on a descriptor that says "something changed" (inotify, a uevent socket), asks `relevant`
/// whether what arrived concerns these devices, and if so rescans and reports the difference from
/// the last scan, removals first, each set in key order. Devices are keyed by what names them (a
/// node's path, an LED's name); one that is there with another description is reported as gone
/// and appeared again.
///
/// The events themselves are never trusted to say what changed: a rescan does, which also catches a
/// device whose permissions or properties udev fixes a moment after the kernel announced it.
///
/// Thread safety: `current` and `cancel()` may be called from any thread, `cancel()` also from the
/// callbacks. Locking rule: `known` is taken only to read or swap the set, never while a callback runs.
package final class DeviceWatcher<Key: Hashable & Comparable & Sendable, Item: Equatable & Sendable>: Sendable {
    private let scan: @Sendable () -> [Item]
    private let key: @Sendable (Item) -> Key
    private let appeared: @Sendable (Item) -> Void
    private let disappeared: @Sendable (Key) -> Void
    private let known: Lock<[Key: Item]>
    /// Signalled by `cancel()`; the thread watches it beside the event descriptor.
    private let wake: EventFD
    private let thread: Lock<Thread?>

    /// Scans once (that set is `current`), then starts the thread, which owns `descriptor` from
    /// here on and closes it when it ends, also when this throws.
    /// - Parameters:
    ///   - scan: the devices there now (a failed scan: none); `key` names each, and of two with
    ///     one name the first counts.
    ///   - drain: reads everything waiting on the descriptor (it is non-blocking) and says
    ///     whether any of it concerns these devices.
    ///   - appeared, disappeared: called on the watcher's thread, once per change, in order.
    /// - Throws: `Errno` when no eventfd or thread can be made.
    package init(
        threadName: String, descriptor: Int32, drain: @escaping @Sendable (Int32) -> Bool,
        scan: @escaping @Sendable () -> [Item], key: @escaping @Sendable (Item) -> Key, appeared: @escaping @Sendable (Item) -> Void,
        disappeared: @escaping @Sendable (Key) -> Void
    ) throws(Errno) {
        self.scan = scan
        self.key = key
        self.appeared = appeared
        self.disappeared = disappeared
        do {
            wake = try EventFD()
        } catch {
            Glibc.close(descriptor)
            throw error
        }
        known = Lock(Self.keyed(scan(), by: key))
        thread = Lock(nil)
        do {
            // The thread holds the watcher until it ends.
            let started = try startThread(name: threadName) { [self] in
                run(descriptor, drain: drain)
                Glibc.close(descriptor)
            }
            thread.withLock { $0 = started }
        } catch {
            Glibc.close(descriptor)
            throw error
        }
    }

    /// The devices as last scanned, in key order.
    package var current: [Item] {
        known.withLock { known in known.keys.sorted().map { known[$0]! } }
    }

    /// Stops watching; no callback runs after `cancel()` returns (unless called from one).
    package func cancel() {
        guard let running = thread.withLock({ value -> Thread? in defer { value = nil }; return value }) else { return }
        wake.signal()
        if running.isCurrent {
            running.detach()
        } else {
            running.join()
        }
    }

    private func run(_ descriptor: Int32, drain: (Int32) -> Bool) {
        var fds = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            guard let ready = try? System.poll(&fds, timeout: nil) else { return }
            if fds[1].revents != 0 { return }
            guard ready > 0, fds[0].revents != 0, drain(descriptor) else { continue }
            let (gone, new) = rescan()
            for key in gone { disappeared(key) }
            for item in new { appeared(item) }
        }
    }

    /// The keys gone or changed since the last scan, and the devices new or changed, in key order.
    private func rescan() -> (gone: [Key], new: [Item]) {
        let now = Self.keyed(scan(), by: key)
        return known.withLock { known in
            let gone = known.keys.sorted().filter { now[$0] != known[$0] }
            let new = now.keys.sorted().filter { now[$0] != known[$0] }.map { now[$0]! }
            known = now
            return (gone, new)
        }
    }

    private static func keyed(_ items: [Item], by key: (Item) -> Key) -> [Key: Item] {
        Dictionary(items.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
    }
}
