import Dispatch
import Synchronization

/// One feedback play in progress: stop it, or ask whether it still runs.
///
/// Thread safety: every method may be called from any thread, any number of times, also after the
/// play has ended (then it does nothing).
public final class FeedbackPlayback: Sendable {
    /// The sound ID being played.
    public let soundID: SystemSoundID
    let id: UInt64

    private struct State {
        var sound: PlaybackHandle?
        var vibration: HapticPlayback?
        var stopRequested = false
        var ended = false
    }
    private let state = Mutex(State())

    init(id: UInt64, soundID: SystemSoundID) {
        self.id = id
        self.soundID = soundID
    }

    /// Whether the play has not reported its result yet.
    public var isPlaying: Bool { state.withLock { !$0.ended } }

    /// Stops the sound and the vibration; the result reports them `.stopped`. A stop that comes
    /// before the parts have started (the sound is still being looked up) stops them as they start.
    public func stop() {
        let (sound, vibration) = state.withLock { state in
            state.stopRequested = true
            return (state.sound, state.vibration)
        }
        sound?.stop()
        vibration?.stop()
    }

    func attach(sound: PlaybackHandle) {
        if state.withLock({ state in
            state.sound = sound
            return state.stopRequested
        }) { sound.stop() }
    }

    func attach(vibration: HapticPlayback) {
        if state.withLock({ state in
            state.vibration = vibration
            return state.stopRequested
        }) { vibration.stop() }
    }

    func markEnded() {
        state.withLock { state in
            state.ended = true
            state.sound = nil
            state.vibration = nil
        }
    }
}

/// Gathers the two parts' outcomes and reports the result once, when the last part has ended.
final class FeedbackJoin: Sendable {
    private struct State {
        var sound: SoundOutcome?
        var vibration: VibrationOutcome?
        var report: (@Sendable (SoundOutcome, VibrationOutcome) -> Void)?
    }
    private let state: Mutex<State>

    init(report: @escaping @Sendable (SoundOutcome, VibrationOutcome) -> Void) {
        state = Mutex(State(report: report))
    }

    func finish(sound: SoundOutcome) {
        complete { if $0.sound == nil { $0.sound = sound } }
    }

    func finish(vibration: VibrationOutcome) {
        complete { if $0.vibration == nil { $0.vibration = vibration } }
    }

    /// Records a part; the call that completes both takes the report out under the lock, so it
    /// runs exactly once whatever the threads.
    private func complete(_ record: (inout State) -> Void) {
        let ready = state.withLock { state -> (@Sendable (SoundOutcome, VibrationOutcome) -> Void, SoundOutcome, VibrationOutcome)? in
            record(&state)
            guard let sound = state.sound, let vibration = state.vibration, let report = state.report else { return nil }
            state.report = nil
            return (report, sound, vibration)
        }
        if let (report, sound, vibration) = ready { report(sound, vibration) }
    }
}
