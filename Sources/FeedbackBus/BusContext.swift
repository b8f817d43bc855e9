import CSystemd
import Glibc
import Synchronization

/// What an exported object does when called: the bus thread calls these with the call's message
/// and the bus.
package protocol BusObjectHandler: AnyObject {
    /// Handles a method call and returns the reply's values (matching the method's result
    /// signature); a thrown `BusError` is the reply instead.
    func call(_ message: BusMessage, bus: BusContext) throws(BusError) -> [BusValue]
    /// The value of the property `name`.
    func get(_ name: String, bus: BusContext) throws(BusError) -> BusValue
    /// Sets the writable property `name` to `value` (already of its type).
    func set(_ name: String, to value: BusValue, bus: BusContext) throws(BusError)
}

/// How a name request ended.
package enum NameRequest: Equatable, Sendable {
    /// This connection owns the name now.
    case owned
    /// Another connection owns it and did not let it go; its process, when the bus says.
    case taken(ownerPID: Int32?)
}

/// The bus as the bus thread uses it: only code on that thread gets one (handlers, jobs handed over
/// with `BusConnection.perform`, and `BusConnection.setUp` before the loop starts). It is not
/// `Sendable`, so it cannot be handed to another thread.
package struct BusContext {
    package let connection: BusConnection
    private var bus: OpaquePointer { connection.bus }

    /// Asks the bus for `name` (`sd_bus_request_name`), letting a later instance take it over;
    /// `replace` takes it from an owner that allows that.
    package func requestName(_ name: String, replace: Bool) throws(BusError) -> NameRequest {
        var flags = UInt64(SD_BUS_NAME_ALLOW_REPLACEMENT)
        if replace { flags |= UInt64(SD_BUS_NAME_REPLACE_EXISTING) }
        let result = sd_bus_request_name(bus, name, flags)
        switch -result {
        case EEXIST: return .taken(ownerPID: ownerPID(of: name))
        case EALREADY: return .owned
        default:
            try check(result, "requesting the name \(name)")
            return .owned
        }
    }

    /// Gives `name` back to the bus (`sd_bus_release_name`).
    package func releaseName(_ name: String) {
        _ = sd_bus_release_name(bus, name)
    }

    /// The process that owns `name`, from the bus (`GetConnectionUnixProcessID`, through
    /// `sd_bus_get_name_creds`); nil when nobody owns it or the bus does not say.
    package func ownerPID(of name: String) -> Int32? {
        var creds: OpaquePointer?
        guard sd_bus_get_name_creds(bus, name, UInt64(SD_BUS_CREDS_PID), &creds) >= 0, let creds else { return nil }
        defer { sd_bus_creds_unref(creds) }
        var pid: pid_t = 0
        return sd_bus_creds_get_pid(creds, &pid) >= 0 ? pid : nil
    }

    /// Serves `members` of `interface` at `path` (`sd_bus_add_object_vtable`); sd-bus answers
    /// `Introspect` and `org.freedesktop.DBus.Properties` from the same table.
    package func export(
        path: String, interface: String, members: [BusMember], handler: any BusObjectHandler
    ) throws(BusError) {
        let object = ExportedObject(handler: handler, connection: connection)
        var described: [csystemd_member] = []
        for member in members {
            var entry = csystemd_member()
            switch member {
            case .method(let name, let signature, let result, let names):
                entry.kind = CSYSTEMD_METHOD
                entry.name = connection.registrations.keep(name)
                entry.signature = connection.registrations.keep(signature)
                entry.result = connection.registrations.keep(result)
                entry.names = connection.registrations.keep(Self.argumentNames(names))
            case .signal(let name, let signature, let names):
                entry.kind = CSYSTEMD_SIGNAL
                entry.name = connection.registrations.keep(name)
                entry.signature = connection.registrations.keep(signature)
                entry.names = connection.registrations.keep(Self.argumentNames(names))
            case .property(let name, let signature, let writable, let emitsChange):
                entry.kind = writable ? CSYSTEMD_WRITABLE_PROPERTY : CSYSTEMD_PROPERTY
                entry.name = connection.registrations.keep(name)
                entry.signature = connection.registrations.keep(signature)
                object.propertyTypes[name] = signature
                if emitsChange { entry.flags = UInt64(SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE) }
            }
            described.append(entry)
        }
        guard let vtable = csystemd_vtable_new(described, described.count, methodTrampoline, getTrampoline, setTrampoline)
        else { throw .failed("out of memory building the vtable of \(interface)") }
        connection.registrations.vtables.append(vtable)
        let userdata = connection.registrations.keep(object)
        var slot: OpaquePointer?
        try check(sd_bus_add_object_vtable(bus, &slot, path, interface, vtable, userdata), "exporting \(interface) at \(path)")
        connection.registrations.slots.append(slot!)
    }

    /// Sends a signal (`sd_bus_message_new_signal`, `sd_bus_send`): to every connection that
    /// subscribed, or only to `destination` (a unique name) when given
    /// (`sd_bus_message_set_destination`), so that what concerns one client reaches no other.
    package func emitSignal(
        path: String, interface: String, member: String, destination: String? = nil, _ values: [BusValue]
    ) throws(BusError) {
        var handle: OpaquePointer?
        try check(sd_bus_message_new_signal(bus, &handle, path, interface, member), "creating the signal \(member)")
        let message = BusMessage(adopting: handle!)
        if let destination {
            try check(sd_bus_message_set_destination(message.handle, destination), "addressing the signal \(member)")
        }
        for value in values { try message.append(value) }
        try check(sd_bus_send(bus, message.handle, nil), "sending the signal \(member)")
    }

    /// Sends `PropertiesChanged` for `properties` of `interface` at `path`, with their new values
    /// (read through the object's handler) (`sd_bus_emit_properties_changed_strv`).
    package func emitPropertiesChanged(path: String, interface: String, properties: [String]) throws(BusError) {
        var names = properties.map { strdup($0) } + [nil]
        defer { names.forEach { free($0) } }
        try check(sd_bus_emit_properties_changed_strv(bus, path, interface, &names), "sending PropertiesChanged")
    }

    /// Calls `handler` on the bus thread for every signal that matches (`sd_bus_add_match`; nil
    /// matches any, `arguments` are the string arguments that must be equal: `[2: ""]` is
    /// `arg2=''`); the bus is told to route them here. The values are the program's own names,
    /// never a client's: they are not quoted.
    package func subscribe(
        sender: String?, path: String?, interface: String?, member: String?, arguments: [Int: String] = [:],
        _ handler: @escaping (BusMessage, BusContext) -> Void
    ) throws(BusError) {
        let keys = [("sender", sender), ("path", path), ("interface", interface), ("member", member)]
            + arguments.sorted { $0.key < $1.key }.map { ("arg\($0.key)", $0.value) }
        let rule = (["type='signal'"] + keys.compactMap { key, value in value.map { "\(key)='\($0)'" } })
            .joined(separator: ",")
        let box = SignalBox(handler: handler, connection: connection)
        let userdata = connection.registrations.keep(box)
        var slot: OpaquePointer?
        try check(
            sd_bus_add_match(
                bus, &slot, rule,
                { message, userdata, _ in
                    let box = Unmanaged<SignalBox>.fromOpaque(userdata!).takeUnretainedValue()
                    box.handler(BusMessage(referencing: message!), BusContext(connection: box.connection))
                    return 0
                }, userdata),
            "subscribing to \(member ?? "signals")")
        connection.registrations.slots.append(slot!)
    }

    /// Calls `handler` on the bus thread with a client's unique name (`:1.42`) when it leaves the
    /// bus (`NameOwnerChanged` with no new owner). Every service that keeps state per client
    /// subscribes through this one place. Only departures are routed here (`arg2=''`): a program
    /// connecting to the bus does not wake the service, nor delay the play a client's first call
    /// asks for right behind its `Hello`.
    package func onClientLeft(_ handler: @escaping (String, BusContext) -> Void) throws(BusError) {
        try subscribe(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged", arguments: [2: ""]
        ) { message, bus in
            if let name = message.readDeparture() { handler(name, bus) }
        }
    }

    /// Calls `handler` on the bus thread when the process receives `signal` (`sd_event_add_signal`).
    /// The signal must be blocked in every thread first (`pthread_sigmask` before any thread starts).
    package func onSignal(_ signal: Int32, _ handler: @escaping (BusContext) -> Void) throws(BusError) {
        try addEventSource("watching signal \(signal)", handler) { source, userdata in
            sd_event_add_signal(connection.event, source, signal, { _, _, userdata in EventBox.fire(userdata) }, userdata)
        }
    }

    /// Calls `handler` on the bus thread whenever `fd` is readable (`sd_event_add_io`); the handler
    /// must read what is there. The descriptor stays the caller's and must outlive the connection.
    package func onReadable(_ fd: Int32, _ handler: @escaping (BusContext) -> Void) throws(BusError) {
        try addEventSource("watching descriptor \(fd)", handler) { source, userdata in
            sd_event_add_io(
                connection.event, source, fd, UInt32(EPOLLIN.rawValue), { _, _, _, userdata in EventBox.fire(userdata) },
                userdata)
        }
    }

    /// Calls `handler` on the bus thread once, `seconds` from now (`sd_event_add_time_relative` on
    /// `CLOCK_MONOTONIC`, to the millisecond). The loop sleeps until then: a timer is one wake-up,
    /// where a Dispatch timer would start libdispatch's manager thread (see `Delivery`).
    package func after(_ seconds: Double, _ handler: @escaping (BusContext) -> Void) throws(BusError) {
        let box = Unmanaged.passRetained(EventBox(handler: handler, connection: connection))
        var source: OpaquePointer?
        let microseconds = UInt64(max(0, seconds) * 1_000_000)
        let added = sd_event_add_time_relative(
            connection.event, &source, CLOCK_MONOTONIC, microseconds, 1000,
            { source, _, userdata in
                let box = Unmanaged<EventBox>.fromOpaque(userdata!).takeUnretainedValue()
                box.connection.registrations.timers.remove(source!)
                let result = EventBox.fire(userdata)
                // Freed once this callback returns (sd-event defers it); its destroy callback
                // releases the box.
                sd_event_source_unref(source)
                return result
            }, box.toOpaque())
        guard added >= 0, let source else {
            box.release()
            throw BusError(code: -added, "adding a timer")
        }
        sd_event_source_set_destroy_callback(source) { Unmanaged<EventBox>.fromOpaque($0!).release() }
        connection.registrations.timers.insert(source)
    }

    /// Adds an event source with `add` (given where to put the source and the userdata its
    /// callback passes to `EventBox.fire`), kept as long as the connection.
    private func addEventSource(
        _ what: String, _ handler: @escaping (BusContext) -> Void,
        _ add: (UnsafeMutablePointer<OpaquePointer?>, UnsafeMutableRawPointer) -> Int32
    ) throws(BusError) {
        let userdata = connection.registrations.keep(EventBox(handler: handler, connection: connection))
        var source: OpaquePointer?
        try check(add(&source, userdata), what)
        connection.registrations.eventSources.append(source!)
    }

    /// Takes over the reply to `message`, a method call being handled: the handler returns at
    /// once (its return value is not sent) and the work goes on elsewhere, so that slow work (a
    /// decode) does not hold up other clients. Exactly one `PendingReply.send` must follow.
    package func answerLater(_ message: BusMessage) -> PendingReply {
        message.answeredLater = true
        return PendingReply(message: message, connection: connection)
    }

    /// Ends the loop once the current handler or job returns; what was queued is sent first.
    package func exit() {
        _ = sd_event_exit(connection.event, 0)
    }

    /// sd-bus's argument names: each name followed by a NUL.
    private static func argumentNames(_ names: [String]) -> [UInt8] {
        names.flatMap { Array($0.utf8) + [0] }
    }
}

@available(*, unavailable)
extension BusContext: Sendable {}

/// An exported object: its handler and its properties' types. Lives as long as the connection.
private final class ExportedObject {
    let handler: any BusObjectHandler
    unowned let connection: BusConnection
    var propertyTypes: [String: String] = [:]

    init(handler: any BusObjectHandler, connection: BusConnection) {
        self.handler = handler
        self.connection = connection
    }
}

private final class SignalBox {
    let handler: (BusMessage, BusContext) -> Void
    unowned let connection: BusConnection

    init(handler: @escaping (BusMessage, BusContext) -> Void, connection: BusConnection) {
        self.handler = handler
        self.connection = connection
    }
}

private final class EventBox {
    let handler: (BusContext) -> Void
    unowned let connection: BusConnection

    /// What an event source's C callback does: run the handler of the box `userdata` points to.
    static func fire(_ userdata: UnsafeMutableRawPointer?) -> Int32 {
        let box = Unmanaged<EventBox>.fromOpaque(userdata!).takeUnretainedValue()
        box.handler(BusContext(connection: box.connection))
        return 0
    }

    init(handler: @escaping (BusContext) -> Void, connection: BusConnection) {
        self.handler = handler
        self.connection = connection
    }
}

/// Every method of every exported object comes here (userdata: its `ExportedObject`). A thrown
/// `BusError` becomes the error reply.
private let methodTrampoline: sd_bus_message_handler_t = { handle, userdata, failure in
    let object = Unmanaged<ExportedObject>.fromOpaque(userdata!).takeUnretainedValue()
    do throws(BusError) {
        let call = BusMessage(referencing: handle!)
        let values = try object.handler.call(call, bus: BusContext(connection: object.connection))
        guard !call.answeredLater, sd_bus_message_get_expect_reply(handle) > 0 else { return 1 }
        var reply: OpaquePointer?
        try check(sd_bus_message_new_method_return(handle, &reply), "creating a reply")
        let message = BusMessage(adopting: reply!)
        for value in values { try message.append(value) }
        try check(sd_bus_send(nil, message.handle, nil), "sending a reply")
        return 1
    } catch {
        return sd_bus_error_set(failure, error.name, error.message)
    }
}

/// Every property read comes here: the value is appended to `reply`.
private let getTrampoline: sd_bus_property_get_t = { _, _, _, property, reply, userdata, failure in
    let object = Unmanaged<ExportedObject>.fromOpaque(userdata!).takeUnretainedValue()
    do throws(BusError) {
        let value = try object.handler.get(String(cString: property!), bus: BusContext(connection: object.connection))
        try BusMessage(referencing: reply!).append(value)
        return 1
    } catch {
        return sd_bus_error_set(failure, error.name, error.message)
    }
}

/// Every property write comes here: the new value is read from `value` by the property's type.
private let setTrampoline: sd_bus_property_set_t = { _, _, _, property, value, userdata, failure in
    let object = Unmanaged<ExportedObject>.fromOpaque(userdata!).takeUnretainedValue()
    let name = String(cString: property!)
    do throws(BusError) {
        let newValue = try BusMessage(referencing: value!).readBasic(object.propertyTypes[name] ?? "")
        try object.handler.set(name, to: newValue, bus: BusContext(connection: object.connection))
        return 1
    } catch {
        return sd_bus_error_set(failure, error.name, error.message)
    }
}

/// The reply to a method call that is answered after its handler returned (`BusContext.answerLater`).
///
/// Thread safety: `send` may be called from any thread, once; the reply is built and sent on the
/// bus thread.
package final class PendingReply: @unchecked Sendable {
    // Locking rule: `message` is used and released on the bus thread only (sd-bus messages are not
    // thread-safe): in `answerLater`, and in the job `send` hands over. `sent` is atomic.
    private var message: BusMessage?
    private let connection: BusConnection
    private let sent = Atomic<Bool>(false)

    fileprivate init(message: BusMessage, connection: BusConnection) {
        self.message = message
        self.connection = connection
    }

    /// Sends the reply's values, or the error, to the caller (`sd_bus_message_new_method_return`
    /// or `sd_bus_reply_method_error`). Later calls do nothing.
    package func send(_ result: Result<[BusValue], BusError>) {
        guard !sent.exchange(true, ordering: .acquiringAndReleasing) else { return }
        connection.perform { [self] _ in reply(result) }
    }

    /// Sends the reply now, from the bus thread (`bus` proves it): before any signal the jobs
    /// queued meanwhile send, as a handler's reply goes before them. Later calls do nothing.
    package func send(_ result: Result<[BusValue], BusError>, bus: BusContext) {
        guard !sent.exchange(true, ordering: .acquiringAndReleasing) else { return }
        reply(result)
    }

    private func reply(_ result: Result<[BusValue], BusError>) {
        guard let call = message else { return }
        defer { message = nil }
        guard sd_bus_message_get_expect_reply(call.handle) > 0 else { return }
        switch result {
        case .success(let values):
            var handle: OpaquePointer?
            guard sd_bus_message_new_method_return(call.handle, &handle) >= 0, let handle else { return }
            let reply = BusMessage(adopting: handle)
            do throws(BusError) {
                for value in values { try reply.append(value) }
                _ = sd_bus_send(nil, reply.handle, nil)
            } catch {
                send(error, to: call)
            }
        case .failure(let error):
            send(error, to: call)
        }
    }

    private func send(_ error: BusError, to call: BusMessage) {
        var failure = sd_bus_error()
        defer { sd_bus_error_free(&failure) }
        _ = sd_bus_error_set(&failure, error.name, error.message)
        _ = sd_bus_reply_method_error(call.handle, &failure)
    }
}
