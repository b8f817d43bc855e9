/// Notices LEDs appearing and disappearing (a keyboard or a phone's LED controller plugged in or
/// bound), from the kernel's uevents of the `leds` subsystem: sysfs makes no inotify events.
///
/// Events come from the kernel as it creates the class device, possibly before udev has written
/// its properties (`FEEDBACKD_TYPE`); udev's own "change" or a later event brings the update as a
/// `.disappeared` and `.appeared` pair.
///
/// Thread safety: the handler runs on the monitor's own thread, once per change, in order. The
/// monitor keeps watching until `cancel()`, which may be called from any thread, including the
/// handler; `current` may be read from any thread.
package final class LEDMonitor: Sendable {
    /// A change in the set of LEDs.
    package enum Change: Sendable, Equatable {
        /// An LED is there that was not before, or is there with another description.
        case appeared(LEDInfo)
        /// The LED of this name is gone.
        case disappeared(name: String)
    }

    private let watcher: DeviceWatcher<String, LEDInfo>

    /// Starts watching. The LEDs present now are `current`; only later changes reach the handler.
    /// - Throws: `.ioError` when the uevent socket cannot be opened (a kernel without netlink).
    package init(discovery: LEDDiscovery = LEDDiscovery(), handler: @escaping @Sendable (Change) -> Void) throws(LEDError) {
        do {
            watcher = try DeviceWatcher(
                threadName: "fbs-leds", descriptor: try UEventSocket.open(),
                drain: { UEventSocket.drain($0, subsystem: "leds") },
                scan: { (try? discovery.leds()) ?? [] }, key: { $0.name },
                appeared: { handler(.appeared($0)) }, disappeared: { handler(.disappeared(name: $0)) })
        } catch {
            throw LEDError(.ioError(errno: error.rawValue), source: "NETLINK_KOBJECT_UEVENT", detail: error.description)
        }
    }

    /// The LEDs as last seen, in name order.
    package var current: [LEDInfo] { watcher.current }

    /// Stops watching; the handler is not called after `cancel()` returns (unless called from it).
    package func cancel() {
        watcher.cancel()
    }
}
