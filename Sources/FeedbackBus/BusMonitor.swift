import CSystemd
import FeedbackServices
import Glibc

/// A monitor connection (`org.freedesktop.DBus.Monitoring.BecomeMonitor`): it receives a copy of
/// every message on the bus that matches its rules — method calls between other connections and
/// their replies included — and can send nothing. A session bus lets its own user monitor it.
///
/// The bus disconnects a monitor that falls behind; `next` then throws, and the owner connects a
/// new one.
///
/// Thread safety: none; one thread uses it (it is not `Sendable`).
package final class BusMonitor {
    // Locking rule: used by one thread only.
    private let bus: OpaquePointer

    /// Connects to the bus at `address` and becomes a monitor of the messages matching `rules`
    /// (match rules: `type='method_call',interface='…',member='…'`; a well-known `sender` matches
    /// whoever owns the name when the message is sent).
    /// - Throws: `BusError` when the bus cannot be reached or refuses to be monitored.
    package init(address: String, rules: [String], timeout: Double = 5) throws(BusError) {
        var bus: OpaquePointer?
        try check(sd_bus_new(&bus), "creating a bus connection")
        do throws(BusError) {
            try check(sd_bus_set_address(bus, address), "setting the bus address")
            try check(sd_bus_set_bus_client(bus, 1), "setting up the bus connection")
            // A monitor answers nothing (sd-bus would otherwise reply to calls it sees).
            try check(sd_bus_set_monitor(bus, 1), "setting up a monitor")
            try check(sd_bus_start(bus), "connecting to \(address)")
            var handle: OpaquePointer?
            try check(
                sd_bus_message_new_method_call(
                    bus, &handle, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Monitoring",
                    "BecomeMonitor"),
                "asking to monitor the bus")
            let message = BusMessage(adopting: handle!)
            try message.append(.strings(rules))
            try message.append(.uint32(0))
            var error = sd_bus_error()
            defer { sd_bus_error_free(&error) }
            let called = sd_bus_call(bus, message.handle, UInt64(timeout * 1_000_000), &error, nil)
            if called < 0 {
                throw BusError(
                    name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                    message: "BecomeMonitor: " + (error.message.map { String(cString: $0) } ?? "\(Errno(rawValue: -called))"))
            }
        } catch {
            sd_bus_flush_close_unref(bus)
            throw error
        }
        self.bus = bus!
    }

    deinit {
        sd_bus_flush_close_unref(bus)
    }

    /// The next message the bus copied to this monitor; nil when none came within `timeout`
    /// seconds (nil: no limit) or `stop` (a descriptor, polled beside the bus) became readable.
    /// - Throws: `BusError` when the connection broke (the bus dropped a monitor that fell behind,
    ///   or went away).
    package func next(timeout: Double?, stop: Int32) throws(BusError) -> MonitoredMessage? {
        let deadline = timeout.map { MonotonicClock.now + $0 } ?? .infinity
        while true {
            var message: OpaquePointer?
            let processed = try check(sd_bus_process(bus, &message), "reading from the bus")
            if let message {
                defer { sd_bus_message_unref(message) }
                if let monitored = MonitoredMessage(message) { return monitored }
                continue
            }
            if processed > 0 { continue }
            let left = deadline - MonotonicClock.now
            guard left > 0 else { return nil }
            var fds = [
                pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
                pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, left.isInfinite ? -1 : Int32(min(left, 3600) * 1000) + 1)
            if ready < 0 && errno != EINTR { throw BusError(code: errno, "waiting for the bus") }
            if fds[1].revents != 0 { return nil }
        }
    }
}

/// A message a `BusMonitor` saw: its header, and the message to read its values from.
package struct MonitoredMessage {
    /// What kind of message it is.
    package enum Kind: Sendable, Equatable {
        case methodCall, methodReturn, error, signal
    }
    package let kind: Kind
    /// The sender's unique name.
    package let sender: String
    /// The destination (a unique or well-known name); empty for a broadcast signal.
    package let destination: String
    /// Its serial (the cookie its sender gave it).
    package let serial: UInt64
    /// For a reply or error: the serial of the call it answers; else 0.
    package let replySerial: UInt64
    /// Interface and member (empty for replies).
    package let interface: String
    package let member: String
    /// For an error: its name.
    package let errorName: String
    /// Its values, read in order.
    package let message: BusMessage

    init?(_ handle: OpaquePointer) {
        var type: UInt8 = 0
        guard sd_bus_message_get_type(handle, &type) >= 0 else { return nil }
        switch Int(type) {
        case SD_BUS_MESSAGE_METHOD_CALL: kind = .methodCall
        case SD_BUS_MESSAGE_METHOD_RETURN: kind = .methodReturn
        case SD_BUS_MESSAGE_METHOD_ERROR: kind = .error
        case SD_BUS_MESSAGE_SIGNAL: kind = .signal
        default: return nil
        }
        sender = sd_bus_message_get_sender(handle).map { String(cString: $0) } ?? ""
        destination = sd_bus_message_get_destination(handle).map { String(cString: $0) } ?? ""
        var cookie: UInt64 = 0
        serial = sd_bus_message_get_cookie(handle, &cookie) >= 0 ? cookie : 0
        var replyCookie: UInt64 = 0
        replySerial = sd_bus_message_get_reply_cookie(handle, &replyCookie) >= 0 ? replyCookie : 0
        interface = sd_bus_message_get_interface(handle).map { String(cString: $0) } ?? ""
        member = sd_bus_message_get_member(handle).map { String(cString: $0) } ?? ""
        errorName = sd_bus_message_get_error(handle).flatMap { $0.pointee.name.map { String(cString: $0) } } ?? ""
        message = BusMessage(referencing: handle)
    }
}
