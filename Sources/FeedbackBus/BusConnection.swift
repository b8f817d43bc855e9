import CSystemd
package import FeedbackServices
import Glibc
import Synchronization

/// A connection to a D-Bus message bus (an `sd_bus`) with its own thread running the loop
/// (`sd_event_loop`, with the bus attached through `sd_bus_attach_event`). Set it up with
/// `setUp(_:)` (name, objects, matches), then `start()` the loop; from then on every use of the bus
/// goes through a `BusContext`, which only the bus thread gets: handlers receive one, and other
/// threads hand work over with `perform(_:)`.
///
/// The loop sleeps in `epoll_wait` until a message, a handed-over job, a signal or a timer
/// (`BusContext.after`) arrives: an idle connection makes no wake-ups.
///
/// Thread safety: `perform` and `join` may be called from any thread; `setUp` and `start` from the
/// thread that opened the connection, before the loop runs.
package final class BusConnection: @unchecked Sendable {
    // Locking rule: `bus`, `event` and `registrations` are used by the thread that opened the
    // connection until `start()`, then only by the bus thread (through a `BusContext`), and in
    // `deinit`, which runs after the loop ended (the thread holds a reference while it runs).
    // `jobs` and `thread` are Mutexes; `wake` may be signalled from any thread.
    let bus: OpaquePointer
    let event: OpaquePointer
    private let wake: EventFD
    private let jobs = Lock<[@Sendable (BusContext) -> Void]>([])
    private let started = Atomic<Bool>(false)
    private let thread = Lock<Thread?>(nil)
    private let exitCode = Atomic<Int32>(0)
    /// Slots, vtables, argument-name strings and handler boxes that must live as long as the bus.
    var registrations = Registrations()

    /// Opens a connection to the session bus (`sd_bus_open_user`: `$DBUS_SESSION_BUS_ADDRESS`, else
    /// `$XDG_RUNTIME_DIR/bus`).
    /// - Throws: `BusError` whose message names the address tried and where it came from.
    package static func session(description: String) throws(BusError) -> BusConnection {
        var bus: OpaquePointer?
        try check(sd_bus_open_user(&bus), "cannot connect to the session bus at \(sessionAddressTried())")
        return try BusConnection(bus: bus!, description: description)
    }

    /// The address `sd_bus_open_user` tries and where it found it, for a message: with no bus
    /// running, the variable to set is the one thing a user needs to know.
    static func sessionAddressTried() -> String {
        let variable = "DBUS_SESSION_BUS_ADDRESS"
        if let address = getenv(variable).map({ String(cString: $0) }), !address.isEmpty {
            return "\(address), from \(variable)"
        }
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/") {
            return "unix:path=\(runtime)/bus, from XDG_RUNTIME_DIR as \(variable) is not set"
        }
        return "unix:path=/run/user/\(getuid())/bus, as neither \(variable) nor XDG_RUNTIME_DIR is set"
    }

    private init(bus: OpaquePointer, description: String) throws(BusError) {
        self.bus = bus
        _ = sd_bus_set_description(bus, description)
        // A connection that breaks (the bus went away) ends the loop with exit code 1.
        _ = sd_bus_set_exit_on_disconnect(bus, 1)
        var event: OpaquePointer?
        let made = sd_event_new(&event)
        guard made >= 0, let event else {
            sd_bus_flush_close_unref(bus)
            throw BusError(code: -made, "creating the event loop")
        }
        self.event = event
        do {
            wake = try EventFD()
        } catch {
            sd_event_unref(event)
            sd_bus_flush_close_unref(bus)
            throw BusError(code: error.rawValue, "creating the loop's eventfd")
        }
        do {
            try check(sd_bus_attach_event(bus, event, 0), "attaching the bus to the loop")
            var source: OpaquePointer?
            try check(
                sd_event_add_io(
                    event, &source, wake.descriptor, UInt32(EPOLLIN.rawValue),
                    { _, _, _, userdata in
                        Unmanaged<BusConnection>.fromOpaque(userdata!).takeUnretainedValue().runJobs()
                        return 0
                    }, Unmanaged.passUnretained(self).toOpaque()),
                "watching the loop's eventfd")
            registrations.eventSources.append(source!)
        } catch {
            sd_event_unref(event)
            sd_bus_flush_close_unref(bus)
            throw error
        }
    }

    deinit {
        // Slots first: they point into the vtables, strings and boxes freed after them.
        for slot in registrations.slots { sd_bus_slot_unref(slot) }
        for source in registrations.eventSources { sd_event_source_unref(source) }
        for timer in registrations.timers { sd_event_source_unref(timer) }
        sd_bus_detach_event(bus)
        sd_bus_flush_close_unref(bus)
        sd_event_unref(event)
        registrations.release()
    }

    /// Runs `body` with the bus on this thread, before the loop starts: request a name, export
    /// objects, add matches.
    package func setUp<Failure: Error>(_ body: (BusContext) throws(Failure) -> Void) throws(Failure) {
        precondition(!started.load(ordering: .acquiring), "setUp after start: use perform")
        try body(BusContext(connection: self))
    }

    /// Starts the loop on a thread of its own; it runs until a job or handler calls `BusContext.exit()`.
    /// - Throws: `BusError` when the system will not start another thread.
    package func start() throws(BusError) {
        precondition(!started.exchange(true, ordering: .acquiringAndReleasing), "started twice")
        do {
            // The thread holds the connection until the loop has ended.
            let started = try startThread(name: "feedback-bus") { [self] in loop() }
            thread.withLock { $0 = started }
        } catch {
            throw BusError(code: error.rawValue, "starting the bus thread")
        }
    }

    /// Waits for the loop to end and returns how it ended: 0 after `BusContext.exit()`, else the
    /// connection broke (or the loop failed).
    package func join() -> Int32 {
        thread.withLock({ $0 })?.join()
        return exitCode.load(ordering: .acquiring)
    }

    /// Runs `job` on the bus thread, after the message being handled (if any) and in the order
    /// jobs were handed over. Jobs handed over after the loop ended never run.
    package func perform(_ job: @escaping @Sendable (BusContext) -> Void) {
        jobs.withLock { $0.append(job) }
        wake.signal()
    }

    /// Work handed to the bus thread (`perform`): where the library delivers what would otherwise
    /// start a Dispatch worker.
    package var delivery: Delivery {
        Delivery { [self] work in perform { _ in work() } }
    }

    private func loop() {
        exitCode.store(sd_event_loop(event), ordering: .releasing)
        // The signals and replies the last jobs queued go out before the connection closes.
        _ = sd_bus_flush(bus)
    }

    private func runJobs() {
        wake.drain()
        let context = BusContext(connection: self)
        while true {
            let batch = jobs.withLock { jobs in
                defer { jobs.removeAll() }
                return jobs
            }
            if batch.isEmpty { return }
            for job in batch { job(context) }
        }
    }
}

/// What must live as long as the bus: sd-bus holds pointers into the vtables, the strings they
/// point to and the handler boxes. Used on the bus thread only (see `BusConnection`'s locking rule).
struct Registrations {
    var slots: [OpaquePointer] = []
    var eventSources: [OpaquePointer] = []
    /// Timers (`BusContext.after`) that have not fired yet; each is freed when it fires.
    var timers: Set<OpaquePointer> = []
    var vtables: [UnsafeMutablePointer<sd_bus_vtable>] = []
    var strings: [UnsafeMutablePointer<CChar>] = []
    var boxes: [Unmanaged<AnyObject>] = []

    /// A copy of `bytes` plus a NUL, freed with the connection.
    mutating func keep(_ bytes: [UInt8]) -> UnsafePointer<CChar> {
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
        for (index, byte) in bytes.enumerated() { pointer[index] = CChar(bitPattern: byte) }
        pointer[bytes.count] = 0
        strings.append(pointer)
        return UnsafePointer(pointer)
    }

    mutating func keep(_ text: String) -> UnsafePointer<CChar> { keep(Array(text.utf8)) }

    /// Retains `object` until the connection is freed; returns it as userdata for sd-bus.
    mutating func keep(_ object: AnyObject) -> UnsafeMutableRawPointer {
        let unmanaged = Unmanaged.passRetained(object)
        boxes.append(unmanaged)
        return unmanaged.toOpaque()
    }

    mutating func release() {
        for vtable in vtables { free(vtable) }
        for string in strings { string.deallocate() }
        for box in boxes { box.release() }
        self = Registrations()
    }
}
