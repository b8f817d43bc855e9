import Glibc
import Synchronization

/// How important a pattern is: a pattern pre-empts playing patterns of lower priority.
public struct HapticPriority: RawRepresentable, Comparable, Hashable, Sendable {
    /// The level; higher wins.
    public let rawValue: Int
    /// Creates a priority; higher wins.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Background feedback (key clicks).
    public static let low = Self(rawValue: 0)
    /// Ordinary feedback; the default.
    public static let normal = Self(rawValue: 50)
    /// Alerts and calls.
    public static let high = Self(rawValue: 100)

    /// Whether `lhs` is less important than `rhs`.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// How a played pattern ended; every `play` reports exactly one.
public enum HapticCompletion: Sendable, Equatable {
    /// It played to its end.
    case finished
    /// `stop()` or `stopAll()` ended it.
    case stopped
    /// A pattern of higher priority took the motor.
    case preempted
    /// It could not play on: the device went away, ran out of slots, or refused an effect.
    case failed(HapticsError)
}

/// One playing pattern: stop it, or wait for its completion.
public final class HapticPlayback: Sendable {
    let id: UInt64
    private let engine: HapticEngine

    init(id: UInt64, engine: HapticEngine) {
        self.id = id
        self.engine = engine
    }

    /// Stops the pattern; its completion reports `.stopped` unless it had already ended.
    /// Does not block; any thread.
    public func stop() { engine.enqueue(.stop(id)) }

    /// Starts a play made `held` at `time`, CLOCK_MONOTONIC seconds (`MonotonicClock.now`, what
    /// `PlaybackHandle.whenHeard` gives), or at once when that has passed or is nil; does nothing
    /// to a play already started or ended, so a second release is harmless.
    package func release(at time: Double?) {
        engine.enqueue(.release(id, at: time.map { UInt64(max(0, $0) * 1e9) } ?? 0))
    }
}

/// Plays vibration patterns on one force-feedback device.
///
/// Each pattern's steps are uploaded as effects (`EVIOCSFF`) and started with `EV_FF` writes. When the
/// device has a slot for every step, the steps carry their own `replay.delay` and one write starts a
/// whole pattern, so the kernel or the device times them; otherwise the engine's thread uploads and
/// starts each step at its time. Several patterns play at once where slots allow; a pattern of
/// higher priority pre-empts lower ones (they complete `.preempted`).
///
/// Thread safety: every method may be called from any thread and none blocks on the device: work is
/// handed to the engine's own thread, which also runs the completions (so a completion must not
/// block, and may call `play` or `stop`). That thread keeps the engine alive until `shutdown()`.
///
/// If the device goes away (unplugged, its driver gone), every playing pattern completes
/// `.failed` with `.deviceGone`, once, and later plays fail the same way at once.
public final class HapticEngine: Sendable {
    /// The device the engine plays on.
    package let device: ForceFeedbackDevice

    enum Command: Sendable {
        /// A play; `held` ones are uploaded and wait for `release`.
        case play(UInt64, VibrationPattern, HapticPriority, held: Bool, @Sendable (HapticCompletion) -> Void)
        /// A held play starts at a CLOCK_MONOTONIC nanosecond (now, when that has passed).
        case release(UInt64, at: UInt64)
        case stop(UInt64)
        case stopAll
    }

    private struct Inbox {
        var commands: [Command] = []
        var nextID: UInt64 = 1
        var maximumStrength = 1.0
        var shuttingDown = false
        var thread: Thread?
    }
    private let inbox = Lock(Inbox())
    /// An eventfd the engine thread polls beside the device, to learn of new commands at once.
    private let wake: EventFD

    /// Starts an engine (and its thread) on an open device.
    /// - Throws: `.ioError` when the thread or its wake-up descriptor cannot be created.
    package init(device: ForceFeedbackDevice) throws(HapticsError) {
        self.device = device
        do {
            wake = try EventFD()
        } catch {
            throw HapticsError(errno: error.rawValue, source: device.path)
        }
        let worker = HapticWorker(engine: self)
        do {
            let thread = try startThread(name: "fbs-haptics") { worker.run() }
            inbox.withLock { $0.thread = thread }
        } catch {
            throw HapticsError(.ioError(errno: error.rawValue), source: device.path, detail: "pthread_create")
        }
    }

    /// Opens the vibrator `selector` picks and starts an engine on it.
    public convenience init(
        _ selector: VibratorSelector = .first, discovery: VibratorDiscovery = VibratorDiscovery()
    ) throws(HapticsError) {
        try self.init(device: discovery.open(selector))
    }

    /// The strength every intensity is scaled by, 0…1 (1 by default); applies to patterns played after.
    public var maximumStrength: Double {
        get { inbox.withLock { $0.maximumStrength } }
        set { inbox.withLock { $0.maximumStrength = ForceFeedbackEffect.unit(newValue) } }
    }

    /// Plays a pattern. Returns at once; `completion` is called exactly once, on the engine's thread.
    @discardableResult
    public func play(
        _ pattern: VibrationPattern, priority: HapticPriority = .normal,
        completion: @escaping @Sendable (HapticCompletion) -> Void = { _ in }
    ) -> HapticPlayback {
        play(pattern, priority: priority, held: false, completion: completion)
    }

    /// Plays a pattern, or with `held` makes it ready (its effects uploaded, its slots taken) and
    /// starts it only at `HapticPlayback.release(at:)`: a vibration meant to be felt when a sound
    /// is heard, whose time the sound's output tells only once it has placed the sound.
    package func play(
        _ pattern: VibrationPattern, priority: HapticPriority, held: Bool,
        completion: @escaping @Sendable (HapticCompletion) -> Void
    ) -> HapticPlayback {
        let id = inbox.withLock { inbox in
            defer { inbox.nextID += 1 }
            return inbox.nextID
        }
        enqueue(.play(id, pattern, priority, held: held, completion))
        return HapticPlayback(id: id, engine: self)
    }

    /// Stops every playing pattern (they complete `.stopped`).
    public func stopAll() { enqueue(.stopAll) }

    /// Stops every pattern and ends the engine's thread, waiting for it; patterns played afterwards
    /// complete `.stopped` at once. The device stays open. Must not be called from a completion.
    public func shutdown() {
        let thread = inbox.withLock { inbox -> Thread? in
            inbox.shuttingDown = true
            defer { inbox.thread = nil }
            return inbox.thread
        }
        guard let thread else { return }
        wake.signal()
        thread.join()
    }

    func enqueue(_ command: Command) {
        let refused = inbox.withLock { inbox -> Bool in
            guard !inbox.shuttingDown else { return true }
            inbox.commands.append(command)
            return false
        }
        if refused, case .play(_, _, _, _, let completion) = command { return completion(.stopped) }
        wake.signal()
    }

    /// What the engine thread takes each time it wakes.
    func takeCommands() -> (commands: [Command], maximumStrength: Double, shuttingDown: Bool) {
        wake.drain()
        return inbox.withLock { inbox in
            defer { inbox.commands.removeAll() }
            return (inbox.commands, inbox.maximumStrength, inbox.shuttingDown)
        }
    }

    var wakeDescriptor: Int32 { wake.descriptor }
}
