import Glibc
import Synchronization

/// A blink running on an LED: started by `init`, ended by `end()` (or by the handle going away),
/// which puts back the trigger, brightness and colour the LED had before.
///
/// The kernel keeps the timing where it can: the pattern trigger (`ledtrig-pattern`) gets the
/// pattern as brightness/duration pairs and a repeat count. Where the trigger is absent, a thread
/// of the blink's own writes `brightness` at each half period (`method == .timer`).
///
/// One blink per LED in a process: a new blink on an LED takes it over from the one running there,
/// which stops at once and whose `end()` then puts nothing back; the new one's `end()` puts back
/// what the LED had before the first. Which feedback deserves the LED (priorities) is the caller's
/// choice.
///
/// Thread safety: every member may be used from any thread; `end()` any number of times, the first
/// restores. Locking rule: `owners` is held for the whole of a start or an end, sysfs writes
/// included (microseconds each), so that starts and ends on one LED happen one at a time.
public final class LEDBlink: Sendable {
    /// How the LED is driven.
    public enum Method: Sendable, Equatable {
        /// The kernel's pattern trigger keeps the timing.
        case patternTrigger
        /// A thread writes `brightness` (no pattern trigger on this system).
        case timer
        /// A steady light: `brightness` written once (frequency 0).
        case steady
    }

    /// The LED blinking.
    public let led: LEDInfo
    /// The pattern it blinks.
    public let pattern: LEDBlinkPattern
    /// How it is driven.
    public let method: Method
    /// Tells this blink's entry in `owners` from a later blink's on the same LED.
    private let token: UInt64
    private let ended = Atomic<Bool>(false)

    /// What `end()` puts back.
    struct SavedState: Sendable {
        var trigger: String
        var brightness: String
        var multiIntensity: String? = nil
        /// Under the pattern trigger: the pattern running, and its `repeat`.
        var pattern: String? = nil
        var repeatCount: String? = nil
    }

    /// The blink that owns an LED now, by the LED's sysfs path: what the LED had before any of
    /// this process's blinks, and the timer thread to stop.
    private struct Owner: Sendable {
        var token: UInt64
        var saved: SavedState
        var blinker: TimerBlinker?
    }

    private static let owners = Lock<[String: Owner]>([:])
    private static let tokens = Atomic<UInt64>(0)

    /// Starts `pattern` on `led`, in `color` (for a multicolor LED, through `multi_intensity`).
    /// - Parameters:
    ///   - led: the LED, from `LEDDiscovery`.
    ///   - pattern: the blink.
    ///   - color: nil leaves a multicolor LED's colour as it is; a single-colour LED must be known
    ///     to show it (`led.colors`).
    /// - Throws: `.unsupportedColor`; `.permissionDenied` naming the first file that may not be
    ///   written (what was already changed is put back first, and a blink of this process it
    ///   would have taken over stays ended); `.deviceGone`.
    public init(led: LEDInfo, pattern: LEDBlinkPattern, color: LEDColor? = nil) throws(LEDError) {
        var intensities: [Int]?
        if let color {
            switch led.kind {
            case .single:
                guard led.colors.contains(color) else { throw Self.unsupported(color, on: led) }
            case .multicolor:
                guard let values = led.intensities(for: color) else { throw Self.unsupported(color, on: led) }
                intensities = values
            }
        }
        let method: Method = pattern.frequency == 0 ? .steady : led.hasPatternTrigger ? .patternTrigger : .timer
        let token = Self.tokens.wrappingAdd(1, ordering: .relaxed).newValue
        self.led = led
        self.pattern = pattern
        self.method = method
        self.token = token
        try Self.owners.withLock { (owners: inout [String: Owner]) throws(LEDError) in
            let previous = owners.removeValue(forKey: led.path)
            previous?.blinker?.stop()
            let saved: SavedState
            do throws(LEDError) {
                saved = try Self.save(led, over: previous?.saved, withIntensities: intensities != nil)
            } catch {
                if let previous { try? Self.restore(previous.saved, on: led) }
                throw error
            }
            do throws(LEDError) {
                let blinker = try Self.start(pattern, method: method, intensities: intensities, on: led)
                owners[led.path] = Owner(token: token, saved: saved, blinker: blinker)
            } catch {
                try? Self.restore(saved, on: led)
                throw error
            }
        }
    }

    /// What `end()` will put back: what an earlier blink of this process saved, else the LED's
    /// state now; the intensities too when the blink sets a colour.
    private static func save(_ led: LEDInfo, over earlier: SavedState?, withIntensities: Bool) throws(LEDError) -> SavedState {
        let path = led.path
        var saved: SavedState
        if let earlier {
            saved = earlier
        } else {
            saved = SavedState(
                trigger: SysfsAttribute.triggers(try SysfsAttribute.read(path + "/trigger")).active,
                brightness: try SysfsAttribute.read(path + "/brightness"))
            if saved.trigger == "pattern" {
                saved.pattern = try? SysfsAttribute.read(path + "/pattern")
                saved.repeatCount = try? SysfsAttribute.read(path + "/repeat")
            }
        }
        if withIntensities && saved.multiIntensity == nil {
            saved.multiIntensity = try SysfsAttribute.read(path + "/multi_intensity")
        }
        return saved
    }

    /// Starts a blink the way a feedbackd `Led` feedback does: on the LED `selector` picks
    /// (by default a udev-tagged one that shows `color`), in `color`, at `frequency` Hz, until
    /// `end()`.
    /// - Throws: `.noDevice` when no LED matches; `.invalidArgument` for a frequency out of
    ///   bounds; what `init(led:pattern:color:)` throws.
    public convenience init(
        color: LEDColor, frequency: Double, brightness: Double = 1, selector: LEDSelector? = nil,
        discovery: LEDDiscovery = LEDDiscovery()
    ) throws(LEDError) {
        let pattern = try LEDBlinkPattern(frequency: frequency, brightness: brightness)
        try self.init(led: discovery.led(selector ?? .feedback(color)), pattern: pattern, color: color)
    }

    deinit {
        try? end()
    }

    /// Writes the colour and the pattern; returns the timer thread of `.timer`.
    private static func start(
        _ pattern: LEDBlinkPattern, method: Method, intensities: [Int]?, on led: LEDInfo
    ) throws(LEDError) -> TimerBlinker? {
        if let intensities {
            try SysfsAttribute.write(led.path + "/multi_intensity", intensities.map(String.init).joined(separator: " "))
        }
        let on = pattern.level(maximum: led.maximumBrightness)
        switch method {
        case .patternTrigger:
            // An LED already on the pattern trigger keeps it: feedbackd's udev rule sets it and then
            // lets a group write `pattern` and `repeat`, files that leaving and re-entering the
            // trigger would make again, root's only.
            if try currentTrigger(of: led) != "pattern" {
                try SysfsAttribute.write(led.path + "/trigger", "pattern")
            }
            // `repeat` first: each of the two writes (re)starts the pattern, and a pattern
            // started before its count is known would be restarted a moment later.
            try SysfsAttribute.write(led.path + "/repeat", pattern.repeatText)
            try SysfsAttribute.write(led.path + "/pattern", pattern.patternText(maximum: led.maximumBrightness))
            return nil
        case .steady:
            try SysfsAttribute.write(led.path + "/trigger", "none")
            try SysfsAttribute.write(led.path + "/brightness", String(on))
            return nil
        case .timer:
            try SysfsAttribute.write(led.path + "/trigger", "none")
            // The first write here, not on the thread, so that a refused file is this call's error.
            try SysfsAttribute.write(led.path + "/brightness", String(on))
            return try TimerBlinker(path: led.path + "/brightness", level: on, pattern: pattern)
        }
    }

    /// Whether `end()` has been called.
    public var isEnded: Bool { ended.load(ordering: .acquiring) }

    /// Whether a blink of this process runs on `led` now.
    package static func isBlinking(_ led: LEDInfo) -> Bool {
        owners.withLock { $0[led.path] != nil }
    }

    /// Stops the blink and puts back the LED's trigger, its brightness (when no trigger was
    /// active) and its multicolor intensities. Only the first call does anything, and nothing
    /// when a later blink took the LED over.
    /// - Throws: the error of the first file that could not be written back (`.deviceGone` when
    ///   the LED was unplugged meanwhile); the others are still tried.
    public func end() throws(LEDError) {
        guard ended.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return
        }
        try Self.owners.withLock { (owners: inout [String: Owner]) throws(LEDError) in
            // A later blink took the LED over: it stopped this one and puts the LED back itself.
            guard owners[led.path]?.token == token, let owner = owners.removeValue(forKey: led.path) else { return }
            owner.blinker?.stop()
            try Self.restore(owner.saved, on: led)
        }
    }

    /// Turns `led` off for good: no trigger, brightness 0. For an LED a blink left on when its
    /// process was killed before it could put the LED back.
    /// - Throws: `.permissionDenied` naming the refused file; `.deviceGone`.
    public static func turnOff(_ led: LEDInfo) throws(LEDError) {
        try SysfsAttribute.write(led.path + "/trigger", "none")
        try SysfsAttribute.write(led.path + "/brightness", "0")
    }

    private static func unsupported(_ color: LEDColor, on led: LEDInfo) -> LEDError {
        let shows = led.colors.isEmpty ? "its colour is not known; leave the colour out" : "it shows " + led.colors.map(\.rawValue).joined(separator: ", ")
        return LEDError(.unsupportedColor(color), source: led.path, detail: shows)
    }

    /// The LED's active trigger now.
    private static func currentTrigger(of led: LEDInfo) throws(LEDError) -> String {
        SysfsAttribute.triggers(try SysfsAttribute.read(led.path + "/trigger")).active
    }

    /// Writes `saved` back. The trigger is written only when it changed: under a saved `pattern`
    /// trigger (feedbackd's udev rule leaves LEDs on it), the pattern it ran is written back, or one
    /// that stays off when there was none. The brightness is only written for `none`: under a
    /// trigger, the trigger sets it, and writing 0 would remove the trigger again.
    static func restore(_ saved: SavedState, on led: LEDInfo) throws(LEDError) {
        var first: LEDError?
        func attempt(_ file: String, _ value: String) {
            do {
                try SysfsAttribute.write(led.path + "/" + file, value)
            } catch {
                if first == nil { first = error }
            }
        }
        if (try? currentTrigger(of: led)) != saved.trigger { attempt("trigger", saved.trigger) }
        if saved.trigger == "pattern" {
            let previous = saved.pattern.flatMap { $0.isEmpty ? nil : $0 }
            // Off for a second, once: the trigger then stops with the LED off.
            attempt("pattern", previous ?? "0 1000 0 0")
            attempt("repeat", previous == nil ? "1" : saved.repeatCount ?? "-1")
        }
        if saved.trigger == "none" { attempt("brightness", saved.brightness) }
        if let intensities = saved.multiIntensity { attempt("multi_intensity", intensities) }
        if let first { throw first }
    }
}

/// The `.timer` fallback: a thread that writes `brightness` on and off at each half period,
/// against the monotonic clock so that late wake-ups do not add up.
///
/// Thread safety: `stop()` from any thread but its own, any number of times.
final class TimerBlinker: Sendable {
    private let wake: EventFD
    private let thread: Lock<Thread?>

    /// Starts the thread with the LED on (the caller wrote the first "on").
    init(path: String, level: Int, pattern: LEDBlinkPattern) throws(LEDError) {
        do {
            wake = try EventFD()
        } catch {
            throw LEDError(.ioError(errno: error.rawValue), source: path, detail: "eventfd")
        }
        thread = Lock(nil)
        let half = UInt64(pattern.halfPeriod) * 1_000_000
        // Step k (at k half periods) turns the LED off when k is odd, on when even; `count` cycles
        // end with the off step 2 × count − 1.
        let lastStep = pattern.count.map { $0 * 2 - 1 }
        let wakeDescriptor = wake.descriptor
        do {
            let started = try startThread(name: "fbs-led-blink") {
                var fds = [pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
                let origin = MonotonicClock.nanoseconds
                var step = 1
                while lastStep.map({ step <= $0 }) ?? true {
                    let due = origin + UInt64(step) * half
                    let now = MonotonicClock.nanoseconds
                    if due > now {
                        guard let ready = try? System.poll(&fds, timeout: due - now) else { return }
                        if ready > 0 { return }
                        continue
                    }
                    // A write that fails (the LED was unplugged) ends the blink; end() reports it.
                    guard (try? SysfsAttribute.write(path, step % 2 == 0 ? String(level) : "0")) != nil else { return }
                    step += 1
                }
            }
            thread.withLock { $0 = started }
        } catch {
            throw LEDError(.ioError(errno: error.rawValue), source: path, detail: "pthread_create")
        }
    }

    /// Ends the thread and waits for it.
    func stop() {
        guard let running = thread.withLock({ value -> Thread? in defer { value = nil }; return value }) else { return }
        wake.signal()
        running.join()
    }
}
