internal import CFeedbackShims
import Glibc

/// The kernel's device events (uevents) from a `NETLINK_KOBJECT_UEVENT` socket: what sysfs cannot
/// report through inotify, such as an LED class device appearing under /sys/class/leds.
///
/// Thread safety: the functions are stateless; a descriptor is read by one thread.
enum UEventSocket {
    /// A non-blocking socket receiving the kernel's uevents (group 1), which any user may open.
    /// - Returns: the descriptor; the caller closes it.
    /// - Throws: `Errno` (`EPROTONOSUPPORT` where netlink is missing, `EMFILE`, …).
    static func open() throws(Errno) -> Int32 {
        let fd = fbs_uevent_socket()
        guard fd >= 0 else { throw Errno.current }
        return fd
    }

    /// Reads every event waiting on `fd`, and says whether any of them was of `subsystem`
    /// (its `SUBSYSTEM=` property). Datagrams not sent by the kernel are ignored.
    static func drain(_ fd: Int32, subsystem: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var matched = false
        while true {
            let received = buffer.withUnsafeMutableBytes { fbs_uevent_receive(fd, $0.baseAddress, UInt($0.count)) }
            if received < 0 {
                if errno == EINTR { continue }
                return matched
            }
            if received > 0, properties(buffer[..<Int(received)])["SUBSYSTEM"] == subsystem { matched = true }
        }
    }

    /// The `KEY=value` properties of one uevent datagram: "ACTION@DEVPATH", then NUL-separated
    /// properties (ACTION, DEVPATH, SUBSYSTEM, …).
    static func properties(_ datagram: ArraySlice<UInt8>) -> [String: String] {
        var properties: [String: String] = [:]
        for field in datagram.split(separator: 0) {
            guard let equals = field.firstIndex(of: UInt8(ascii: "=")) else { continue }
            properties[String(decoding: field[..<equals], as: UTF8.self)] =
                String(decoding: field[(equals + 1)...], as: UTF8.self)
        }
        return properties
    }
}
