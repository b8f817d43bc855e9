import Dispatch
import Synchronization

/// A haptic pattern's lights (`HapticPattern.Event.light`), played on its timeline: each light is
/// an `LEDBlink` started at its time and ended at its end, on the LED `LEDSelector.color` picks
/// (one udev tagged for feedback first). A later light of the lane on the same LED takes it over,
/// as blinks do; an LED another blink of this process runs on (a theme's `Led` feedback, another
/// play's light) is left to it, and the light is not shown.
///
/// Made idle; `start(at:)` puts the pattern's 0 s at an instant of `MonotonicClock` (the instant
/// its sound is heard, so that the lights keep time with it), `stop()` ends every light at once
/// and puts each LED back. `whenEnded` is called once, when the last light has ended or the lane
/// was stopped. A light that cannot be shown (no LED of its colour, a refused file) is skipped and
/// told to `report` once per kind of failure; the others still play.
///
/// Thread safety: every member may be used from any thread; the lights are driven on a serial
/// queue of the lane's own, and `stop()` waits for nothing.
package final class LightLane: Sendable {
    /// One light: when (seconds from the pattern's start), how long, and what.
    package struct Light: Sendable, Equatable {
        package var time: Double
        package var duration: Double
        package var color: LEDColor
        package var brightness: Double
        package var frequency: Double
    }

    /// The pattern's lights in time order.
    package let lights: [Light]
    private let discovery: LEDDiscovery
    private let report: @Sendable (String) -> Void
    private let queue = DispatchQueue(label: "fbs-lights")

    private struct State {
        var started = false
        var stopped = false
        var ended = false
        /// The blinks running, by their light's place in `lights`.
        var running: [Int: LEDBlink] = [:]
        /// Lights not yet ended (started or not).
        var remaining: Int
        /// Lights whose blink is being made (`begin`): a stop meanwhile ends the lane only once
        /// each of them has put its LED back.
        var beginning = 0
        var reported: Set<String> = []
        var whenEnded: [@Sendable () -> Void] = []
    }
    private let state: Lock<State>

    /// The lights of `pattern`, on the LEDs `discovery` finds.
    package init(
        _ pattern: HapticPattern, discovery: LEDDiscovery = LEDDiscovery(), report: @escaping @Sendable (String) -> Void
    ) {
        lights = pattern.events.compactMap { event in
            guard case .light(let time, let duration, let color, let brightness, let frequency) = event else { return nil }
            return Light(time: time, duration: duration, color: color, brightness: brightness, frequency: frequency)
        }
        self.discovery = discovery
        self.report = report
        state = Lock(State(remaining: lights.count))
    }

    /// Whether the pattern has lights at all.
    package var isEmpty: Bool { lights.isEmpty }

    /// Calls `body` once when every light has ended or the lane was stopped (at once if that is
    /// past, or the lane has no lights), on the lane's queue or the caller's thread.
    package func whenEnded(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.ended || state.remaining == 0 { return true }
            state.whenEnded.append(body)
            return false
        }
        if now { body() }
    }

    /// Starts the lights with the pattern's 0 s at `instant` (`MonotonicClock` seconds; nil: now).
    /// Only the first call does anything, and none after `stop()`.
    package func start(at instant: Double?) {
        let go = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started && !state.stopped
        }
        guard go else { return }
        let zero = instant ?? MonotonicClock.now
        for (index, light) in lights.enumerated() {
            let delay = max(0, zero + light.time - MonotonicClock.now)
            // Its end is scheduled when it begins, so that the two cannot run out of order.
            queue.asyncAfter(deadline: .now() + delay) { [self] in begin(index, endsAt: zero + light.time + light.duration) }
        }
    }

    /// Ends every light now and puts the LEDs back; the lights not begun never begin.
    package func stop() {
        let (running, waiters) = state.withLock { state -> ([LEDBlink], [@Sendable () -> Void]) in
            guard !state.stopped else { return ([], []) }
            state.stopped = true
            defer { state.running = [:] }
            return (Array(state.running.values), state.beginning == 0 ? end(&state) : [])
        }
        for blink in running { try? blink.end() }
        for body in waiters { body() }
    }

    private func begin(_ index: Int, endsAt end: Double) {
        guard state.withLock({ state -> Bool in
            guard !state.stopped else { return false }
            state.beginning += 1
            return true
        }) else { return }
        let blink = makeBlink(index, endsAt: end)
        // A stop that came while the blink was made: the LED is put back before the lane ends.
        let (late, waiters) = state.withLock { state -> (Bool, [@Sendable () -> Void]) in
            state.beginning -= 1
            if state.stopped { return (true, state.beginning == 0 ? self.end(&state) : []) }
            if let blink { state.running[index] = blink }
            return (false, [])
        }
        if late { try? blink?.end() }
        for body in waiters { body() }
    }

    /// Schedules light `index`'s end at `end` and starts its blink; nil when it cannot show (said
    /// once per LED and problem).
    private func makeBlink(_ index: Int, endsAt end: Double) -> LEDBlink? {
        queue.asyncAfter(deadline: .now() + max(0, end - MonotonicClock.now)) { [self] in finish(index) }
        let light = lights[index]
        /// Says `problem` once per `key`.
        func skip(_ key: String, _ problem: String) {
            if state.withLock({ $0.reported.insert(key).inserted }) { report("a light of the pattern is not shown: \(problem)") }
        }
        do {
            let led = try discovery.led(.color(light.color))
            let ours = state.withLock { $0.running.values.contains { $0.led.path == led.path } }
            guard ours || !LEDBlink.isBlinking(led) else {
                skip("busy \(led.path)", "LED \(led.name) blinks for another feedback, which keeps it")
                return nil
            }
            return try LEDBlink(
                led: led, pattern: try LEDBlinkPattern(frequency: light.frequency, brightness: light.brightness),
                color: led.colors.contains(light.color) ? light.color : nil)
        } catch {
            skip("\(error.reason) \(error.source)", "\(error)")
            return nil
        }
    }

    private func finish(_ index: Int) {
        let (blink, waiters) = state.withLock { state -> (LEDBlink?, [@Sendable () -> Void]) in
            guard !state.stopped else { return (nil, []) }
            let blink = state.running.removeValue(forKey: index)
            state.remaining -= 1
            return (blink, state.remaining == 0 ? end(&state) : [])
        }
        try? blink?.end()
        for body in waiters { body() }
    }

    /// Marks the lane ended and hands back its waiters (once).
    private func end(_ state: inout State) -> [@Sendable () -> Void] {
        guard !state.ended else { return [] }
        state.ended = true
        defer { state.whenEnded = [] }
        return state.whenEnded
    }
}
