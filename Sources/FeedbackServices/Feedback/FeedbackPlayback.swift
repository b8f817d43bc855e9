import Dispatch
import Synchronization

/// One feedback play in progress: stop it, or ask whether it still runs.
///
/// Thread safety: every method may be called from any thread, any number of times, also after the
/// play has ended (then it does nothing).
public final class FeedbackPlayback: Sendable {
    /// What is being played.
    public let alert: AlertSound
    let id: UInt64
    /// Where the parts report their outcomes.
    let join: FeedbackJoin

    private struct State {
        var sound: PlaybackHandle?
        /// The sound is being looked up, decoded or waiting for the output: no handle yet.
        var soundPending = false
        var vibration: HapticPlayback?
        var lights: LightLane?
        var stopRequested = false
        var ended = false
        /// When the sound was heard: nil while not known, `.some(nil)` when no sound was placed.
        var onset: Double??
        var onsetWaiters: [@Sendable (Double?) -> Void] = []
    }
    private let state = Lock(State())

    init(id: UInt64, alert: AlertSound, join: FeedbackJoin) {
        self.id = id
        self.alert = alert
        self.join = join
    }

    /// The sound ID being played, when the alert named one.
    public var soundID: SystemSoundID? { alert.soundID }

    /// Whether the play has not reported its result yet.
    public var isPlaying: Bool { state.withLock { !$0.ended } }

    /// Stops the sound, the vibration and the lights; the result reports them `.stopped`. A stop that comes
    /// before the sound has started (it is still being looked up, decoded, or waiting for the sound
    /// server to answer) ends the sound part at once, and it never starts; a part the profile or
    /// the feedback type had already ruled out keeps that outcome.
    public func stop() {
        let (sound, pending, vibration, lights) = state.withLock { state in
            state.stopRequested = true
            return (state.sound, state.soundPending, state.vibration, state.lights)
        }
        sound?.stop()
        if pending { join.finish(sound: .stopped) }
        vibration?.stop()
        lights?.stop()
    }

    /// Calls `body` once with the instant (`MonotonicClock` seconds) the sound's first frame
    /// reaches the device, or with nil when no sound is placed (there is none, it failed or was
    /// stopped before it started): what a vibration or light held for the sound starts on. At
    /// once when that is already known.
    package func whenSoundStarts(_ body: @escaping @Sendable (Double?) -> Void) {
        let known = state.withLock { state -> Double?? in
            if state.onset == nil { state.onsetWaiters.append(body) }
            return state.onset
        }
        if let known { body(known) }
    }

    /// Records when the sound was heard (nil: it never will be); the first call counts.
    func soundStarted(at instant: Double?) {
        let waiters = state.withLock { state -> [@Sendable (Double?) -> Void] in
            guard state.onset == nil else { return [] }
            state.onset = .some(instant)
            defer { state.onsetWaiters = [] }
            return state.onsetWaiters
        }
        for body in waiters { body(instant) }
    }

    /// Whether `stop()` was called.
    var stopRequested: Bool { state.withLock { $0.stopRequested } }

    /// Marks the sound as on its way (looked up, decoded, waiting for the output), unless a stop
    /// came first: then it must not start, and this returns false.
    func beginSound() -> Bool {
        state.withLock { state in
            guard !state.stopRequested else { return false }
            state.soundPending = true
            return true
        }
    }

    func attach(sound: PlaybackHandle) {
        if state.withLock({ state in
            state.sound = sound
            state.soundPending = false
            return state.stopRequested
        }) { sound.stop() }
    }

    func attach(vibration: HapticPlayback) {
        if state.withLock({ state in
            state.vibration = vibration
            return state.stopRequested
        }) { vibration.stop() }
    }

    /// Plays `lights` as part of this play: the result waits for them, `stop()` ends them, and
    /// they start when the sound is heard.
    func attach(lights: LightLane) {
        join.expectLights()
        lights.whenEnded { [join] in join.finishLights() }
        let stopped = state.withLock { state in
            state.lights = lights
            return state.stopRequested
        }
        if stopped { lights.stop() }
        whenSoundStarts { lights.start(at: $0) }
    }

    func markEnded() {
        state.withLock { state in
            state.ended = true
            state.sound = nil
            state.vibration = nil
            state.lights = nil
        }
    }
}

/// Gathers the two parts' outcomes and reports the result once, when the last part (the lights
/// too, when a pattern has them) has ended. The first outcome recorded for a part is the one
/// reported.
final class FeedbackJoin: Sendable {
    private struct State {
        var sound: SoundOutcome?
        var vibration: VibrationOutcome?
        var lightsPending = false
        var report: (@Sendable (SoundOutcome, VibrationOutcome) -> Void)?
    }
    private let state = Lock(State())

    /// Sets what runs once both parts have ended; a part may finish before this is set.
    func whenDone(_ report: @escaping @Sendable (SoundOutcome, VibrationOutcome) -> Void) {
        complete { $0.report = report }
    }

    func finish(sound: SoundOutcome) {
        complete { if $0.sound == nil { $0.sound = sound } }
    }

    func finish(vibration: VibrationOutcome) {
        complete { if $0.vibration == nil { $0.vibration = vibration } }
    }

    /// The result waits for `finishLights()` too; called before `whenDone`.
    func expectLights() {
        complete { $0.lightsPending = true }
    }

    func finishLights() {
        complete { $0.lightsPending = false }
    }

    /// Records a part; the call that completes both takes the report out under the lock, so it
    /// runs exactly once whatever the threads.
    private func complete(_ record: (inout State) -> Void) {
        let ready = state.withLock { state -> (@Sendable (SoundOutcome, VibrationOutcome) -> Void, SoundOutcome, VibrationOutcome)? in
            record(&state)
            guard let sound = state.sound, let vibration = state.vibration, !state.lightsPending, let report = state.report
            else { return nil }
            state.report = nil
            return (report, sound, vibration)
        }
        if let (report, sound, vibration) = ready { report(sound, vibration) }
    }
}
