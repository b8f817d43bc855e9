import Glibc
import Synchronization

/// A change in a set of devices a `DeviceWatcher` keeps, keyed by what names a device (a node's
/// path, an LED's name).
package enum DeviceChange<Key: Hashable & Sendable, Item: Equatable & Sendable>: Sendable, Equatable {
    /// A device is there that was not before, or is there with another description.
    case appeared(Item)
    /// The device with this key is gone (or is about to reappear with another description).
    case disappeared(Key)
}

/// The one loop behind the device monitors (`VibratorMonitor`, `LEDMonitor`): a thread of its own
/// waits on a descriptor that says "something changed" (inotify, a uevent socket), asks `relevant`
/// whether what arrived concerns these devices, and if so rescans and reports the difference from
/// the last scan, removals first, each set in key order.
///
/// The events themselves are never trusted to say what changed: a rescan does, which also catches a
/// device whose permissions or properties udev fixes a moment after the kernel announced it.
///
/// Thread safety: `current` and `cancel()` may be called from any thread, `cancel()` also from the
/// handler. Locking rule: `known` is taken only to read or swap the set, never while the handler runs.
package final class DeviceWatcher<Key: Hashable & Comparable & Sendable, Item: Equatable & Sendable>: Sendable {
    private let scan: @Sendable () -> [Key: Item]
    private let handler: @Sendable ([DeviceChange<Key, Item>]) -> Void
    private let known: Mutex<[Key: Item]>
    /// Signalled by `cancel()`; the thread watches it beside the event descriptor.
    private let wake: EventFD
    private let thread: Mutex<Thread?>

    /// Scans once (that set is `current`), then starts the thread, which owns `descriptor` from
    /// here on and closes it when it ends, also when this throws.
    /// - Parameters:
    ///   - drain: reads everything waiting on the descriptor (it is non-blocking) and says
    ///     whether any of it concerns these devices.
    ///   - handler: called on the watcher's thread with the changes of one rescan, never empty.
    /// - Throws: `Errno` when no eventfd or thread can be made.
    package init(
        threadName: String, descriptor: Int32, drain: @escaping @Sendable (Int32) -> Bool,
        scan: @escaping @Sendable () -> [Key: Item], handler: @escaping @Sendable ([DeviceChange<Key, Item>]) -> Void
    ) throws(Errno) {
        self.scan = scan
        self.handler = handler
        do {
            wake = try EventFD()
        } catch {
            Glibc.close(descriptor)
            throw error
        }
        known = Mutex(scan())
        thread = Mutex(nil)
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

    /// Stops watching; the handler is not called after `cancel()` returns (unless called from it).
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
            let changes = rescan()
            if !changes.isEmpty { handler(changes) }
        }
    }

    private func rescan() -> [DeviceChange<Key, Item>] {
        let now = scan()
        return known.withLock { known in
            var changes: [DeviceChange<Key, Item>] = []
            for key in known.keys.sorted() where now[key] != known[key] {
                changes.append(.disappeared(key))
            }
            for key in now.keys.sorted() where now[key] != known[key] {
                changes.append(.appeared(now[key]!))
            }
            known = now
            return changes
        }
    }
}
