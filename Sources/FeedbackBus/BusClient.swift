import CSystemd
import FeedbackServices
import Glibc

/// A client's connection to the session bus, used from one thread: method calls, and the signals
/// sent to it, read with `waitForSignal`. Nothing runs in the background: messages are read only
/// while `call` or `waitForSignal` runs.
///
/// Thread safety: none; one thread uses it (it is not `Sendable`).
package final class BusClient {
    // Locking rule: used by one thread only; `received` is filled by the filter while that thread
    // is inside sd_bus_call, sd_bus_process or sd_bus_wait.
    private let bus: OpaquePointer
    private let received = Received()

    /// The signals that arrived and were not taken yet (sd_bus_add_filter's callback appends).
    private final class Received {
        var signals: [BusSignal] = []
    }

    /// The session bus's address as `sd_bus_open_user` would find it: `DBUS_SESSION_BUS_ADDRESS`,
    /// else `$XDG_RUNTIME_DIR/bus` (or `/run/user/UID/bus`) when that socket exists; nil when there
    /// is none, so that a program can skip the bus without paying for a connection attempt.
    package static func sessionAddress(environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/run/user/\(getuid())"
        var status = stat()
        guard stat("\(runtime)/bus", &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return "unix:path=\(runtime)/bus"
    }

    /// Connects to the bus at `address` (`sd_bus_new`, `sd_bus_set_address`, `sd_bus_start`, which
    /// says Hello).
    /// - Throws: `BusError` when the bus cannot be reached.
    package init(address: String) throws(BusError) {
        var bus: OpaquePointer?
        try check(sd_bus_new(&bus), "creating a bus connection")
        do throws(BusError) {
            try check(sd_bus_set_address(bus, address), "setting the bus address")
            try check(sd_bus_set_bus_client(bus, 1), "setting up the bus connection")
            try check(sd_bus_start(bus), "connecting to \(address)")
        } catch {
            sd_bus_unref(bus)
            throw error
        }
        self.bus = bus!
        let userdata = Unmanaged.passUnretained(received).toOpaque()
        try check(
            sd_bus_add_filter(
                self.bus, nil,
                { message, userdata, _ in
                    guard let message, sd_bus_message_is_signal(message, nil, nil) > 0 else { return 0 }
                    let received = Unmanaged<Received>.fromOpaque(userdata!).takeUnretainedValue()
                    let interface = sd_bus_message_get_interface(message).map { String(cString: $0) } ?? ""
                    let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
                    received.signals.append(BusSignal(interface: interface, member: member, message: BusMessage(referencing: message)))
                    return 0
                }, userdata),
            "watching for signals")
    }

    deinit {
        sd_bus_flush_close_unref(bus)
    }

    /// The connection's unique name on the bus (`:1.42`).
    package var uniqueName: String {
        var name: UnsafePointer<CChar>?
        return sd_bus_get_unique_name(bus, &name) >= 0 ? name.map { String(cString: $0) } ?? "" : ""
    }

    /// Calls `member` and waits up to `timeout` seconds for the reply. Without `autoStart` the bus
    /// does not activate a service that is not running: the call fails with
    /// `org.freedesktop.DBus.Error.ServiceUnknown` (or `NameHasNoOwner`) instead.
    ///
    /// The call is sent at once, behind the connection's `Hello` (`sd_bus_call_async`), rather than
    /// after `Hello`'s answer as `sd_bus_call` would: a connection's first call then costs one round
    /// trip through the bus less (what `feedbackctl fire` through the service pays).
    /// - Returns: the reply, to read its values from.
    /// - Throws: `BusError`: the error the service replied with (`NoReply` when none came in time),
    ///   or why the call could not be made.
    package func call(
        _ destination: String, path: String, interface: String, member: String, _ values: [BusValue] = [],
        autoStart: Bool = false, timeout: Double = 25
    ) throws(BusError) -> BusMessage {
        var handle: OpaquePointer?
        try check(sd_bus_message_new_method_call(bus, &handle, destination, path, interface, member), "creating a call")
        let message = BusMessage(adopting: handle!)
        try check(sd_bus_message_set_auto_start(message.handle, autoStart ? 1 : 0), "creating a call")
        for value in values { try message.append(value) }
        let answer = Answer()
        var slot: OpaquePointer?
        try check(
            sd_bus_call_async(
                bus, &slot, message.handle,
                { reply, userdata, _ in
                    let answer = Unmanaged<Answer>.fromOpaque(userdata!).takeUnretainedValue()
                    answer.reply = reply.map { BusMessage(referencing: $0) }
                    return 0
                }, Unmanaged.passUnretained(answer).toOpaque(), UInt64(timeout * 1_000_000)),
            "calling \(member) on \(destination)")
        // Unreferencing the slot drops the callback, should the wait end without it.
        defer { sd_bus_slot_unref(slot) }
        // sd_bus_process calls the callback with the reply, or with a NoReply error of sd-bus's
        // own when `timeout` has passed (sd_bus_wait wakes for it).
        while answer.reply == nil { try processOrWait(upTo: UInt64.max, "calling \(member) on \(destination)") }
        let reply = answer.reply!
        if let error = sd_bus_message_get_error(reply.handle), sd_bus_error_is_set(error) > 0 {
            throw BusError(
                name: error.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                message: error.pointee.message.map { String(cString: $0) } ?? "")
        }
        return reply
    }

    /// Where `call`'s callback leaves the reply.
    private final class Answer {
        var reply: BusMessage?
    }

    /// The property `name` of `interface` (`org.freedesktop.DBus.Properties.Get`), a basic value.
    /// - Throws: `BusError`, as `call`.
    package func property(_ destination: String, path: String, interface: String, name: String) throws(BusError)
        -> BusValue
    {
        let reply = try call(
            destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string(interface), .string(name)])
        return try reply.readVariant()
    }

    /// Sets the property `name` of `interface` (`org.freedesktop.DBus.Properties.Set`).
    /// - Throws: `BusError`, as `call`.
    package func setProperty(
        _ destination: String, path: String, interface: String, name: String, to value: BusValue
    ) throws(BusError) {
        _ = try call(
            destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
            [.string(interface), .string(name), .variant(value)])
    }

    /// The process that owns `name` (`GetConnectionUnixProcessID`); nil when nobody does.
    package func ownerPID(of name: String) -> Int32? {
        guard
            let reply = try? call(
                "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetConnectionUnixProcessID", [.string(name)])
        else { return nil }
        return (try? reply.readUInt32()).map { Int32(bitPattern: $0) }
    }

    /// Asks the bus to tell this connection when `uniqueName` leaves (`AddMatch` for
    /// `NameOwnerChanged` with that name, sent without waiting for the answer): `waitForSignal`
    /// then sees it.
    /// - Throws: `BusError` when the request cannot be queued.
    package func watchDeparture(of uniqueName: String) throws(BusError) {
        let rule =
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(uniqueName)'"
        try check(sd_bus_add_match_async(bus, nil, rule, { _, _, _ in 0 }, nil, nil), "watching \(uniqueName)")
    }

    /// Whether `signal` is the bus saying that `uniqueName` left (`NameOwnerChanged` with no new owner).
    package static func isDeparture(_ signal: BusSignal, of uniqueName: String) -> Bool {
        signal.interface == "org.freedesktop.DBus" && signal.member == "NameOwnerChanged"
            && signal.message.readDeparture() == uniqueName
    }

    /// Reads and dispatches what arrives until a signal for which `matches` is true comes,
    /// `shouldStop` returns true (checked at least every 10 ms), or the connection breaks. Signals
    /// that do not match are dropped.
    /// - Returns: the signal, or nil when `shouldStop` ended the wait.
    /// - Throws: `BusError` when the connection broke.
    package func waitForSignal(shouldStop: () -> Bool, matches: (BusSignal) -> Bool) throws(BusError) -> BusSignal? {
        while true {
            while !received.signals.isEmpty {
                let signal = received.signals.removeFirst()
                if matches(signal) { return signal }
            }
            if shouldStop() { return nil }
            try processOrWait(upTo: 10_000, "reading from the bus")
        }
    }

    /// Dispatches one message that arrived (`sd_bus_process`), or, with none, waits up to `usec`
    /// microseconds for one (`sd_bus_wait`). A signal (Ctrl-C) ends the wait early, without error,
    /// so that the caller looks at its state again.
    /// - Throws: `BusError` naming `what` when the connection broke.
    private func processOrWait(upTo usec: UInt64, _ what: String) throws(BusError) {
        let processed = try check(sd_bus_process(bus, nil), what)
        if processed == 0, case let waited = sd_bus_wait(bus, usec), waited != -EINTR {
            try check(waited, what)
        }
    }
}

/// A signal a `BusClient` received: its interface and member, and the message to read its values from.
package struct BusSignal {
    /// The interface it belongs to.
    package let interface: String
    /// Its name.
    package let member: String
    /// Its values, read in order.
    package let message: BusMessage
}
