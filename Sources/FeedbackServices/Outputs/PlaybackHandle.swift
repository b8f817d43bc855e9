import Synchronization

/// What a handle asks of the output that plays its sound.
protocol PlaybackControl: AnyObject, Sendable {
    func stop(_ id: UInt64)
    func setVolume(_ id: UInt64, _ volume: Float, ramp: Double, curve: Envelope.Curve)
    func setPan(_ id: UInt64, _ pan: Float, ramp: Double)
    /// Ramps to silence over `duration` seconds along `curve`, then ends the play `.stopped` at the
    /// frame the ramp reaches zero.
    func fadeOut(_ id: UInt64, duration: Double, curve: Envelope.Curve)
}

/// A sound that was started: stop it, change its volume or pan, ask whether it still plays.
///
/// Thread safety: every method may be called from any thread, any number of times, also after the
/// sound has ended (then they do nothing). The completion is guaranteed to run exactly once: the
/// first of finished, stopped, cancelled or failed wins, under a lock, and the others are dropped.
public final class PlaybackHandle: Sendable {
    /// The output's number for this play, unique within the process.
    public let id: UInt64
    /// Weak: a handle does not keep its output alive; once the output is gone, the controls do
    /// nothing and the completion has already reported `.failed(.outputClosed)`.
    private weak let control: (any PlaybackControl)?
    /// Where the completion runs, and the completion; nil once the play has ended.
    private let completion: Lock<(delivery: Delivery, body: (@Sendable (PlaybackEnd) -> Void)?)?>
    /// When the sound's first frame reaches the device, once the output has reckoned it: whether
    /// it has (or never will), the time, and who waits for it.
    private let onset: Lock<(settled: Bool, time: Double?, waiters: [@Sendable (Double?) -> Void])>

    /// A play that failed before it reached an output: its completion reports `error` at once.
    static func failed(
        _ error: PlaybackError, delivery: Delivery, completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        let handle = PlaybackHandle(id: nextPlaybackID(), control: nil, delivery: delivery, completion: completion)
        handle.end(.failed(error))
        return handle
    }

    /// - Parameter reportsOnset: whether the output tells when the first frame reaches the device
    ///   (`reportOnset(_:)`); without it, `whenHeard` answers nil at once.
    init(
        id: UInt64, control: (any PlaybackControl)?, delivery: Delivery,
        completion: (@Sendable (PlaybackEnd) -> Void)?, reportsOnset: Bool = false
    ) {
        self.id = id
        self.control = control
        self.completion = Lock((delivery, completion))
        onset = Lock((!reportsOnset, nil, []))
    }

    /// Calls `body` with the CLOCK_MONOTONIC second (`MonotonicClock.now`) at which the sound's
    /// first frame reaches the device, as the output reckons it when it places the sound (the
    /// frames queued ahead of it, at the device's rate): at once if that is known, else on the
    /// output's thread when it is. The engine's outputs tell: ALSA from its PCM's delay, PulseAudio
    /// from the server's timing report and its sink's latency, PipeWire from the graph's delay. Nil
    /// when the output cannot tell (libcanberra, files), or the play ended before it was placed.
    /// What a vibration meant to be felt with the sound starts by (`FeedbackManager`, `haptics play`).
    package func whenHeard(_ body: @escaping @Sendable (Double?) -> Void) {
        let known = onset.withLock { state -> Double?? in
            guard state.settled else {
                state.waiters.append(body)
                return nil
            }
            return .some(state.time)
        }
        if let known { body(known) }
    }

    /// The output placed the sound: its first frame reaches the device at `time` (nil: unknown).
    /// Only the first report counts.
    package func reportOnset(_ time: Double?) {
        let waiters = onset.withLock { state -> [@Sendable (Double?) -> Void] in
            guard !state.settled else { return [] }
            state.settled = true
            state.time = time
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter(time) }
    }

    /// Whether the sound has not ended yet (finished, stopped, cancelled or failed).
    public var isPlaying: Bool { completion.withLock { $0 != nil } }

    /// Stops the sound now, with a few milliseconds' ramp so it does not click. The completion
    /// reports `.stopped`.
    public func stop() {
        end(.stopped)
    }

    /// Moves the volume to `volume` over `ramp` seconds (a fade when `ramp` is long, a click-free
    /// change when short).
    public func setVolume(_ volume: Float, ramp: Double = 0.005) {
        guard isPlaying else { return }
        control?.setVolume(id, max(0, volume), ramp: ramp, curve: .linear)
    }

    /// Moves the balance to `pan` (−1…1) over `ramp` seconds.
    public func setPan(_ pan: Float, ramp: Double = 0.005) {
        guard isPlaying else { return }
        control?.setPan(id, min(1, max(-1, pan)), ramp: ramp)
    }

    /// Fades to silence over `duration` seconds, then stops; the completion reports `.stopped`.
    ///
    /// The ramp and the stop are both on the engine's timeline: the sound ends at the very frame the
    /// ramp reaches zero, and the completion runs once the server has played that frame. Until then
    /// `isPlaying` stays true, and volume changes are ignored (they would undo the fade).
    public func fadeOut(duration: Double) {
        fadeOut(duration: duration, curve: .linear)
    }

    package func fadeOut(duration: Double, curve: Envelope.Curve) {
        guard isPlaying else { return }
        control?.fadeOut(id, duration: max(0, duration), curve: curve)
    }

    /// Moves the volume to `volume` over `ramp` seconds along `curve`.
    package func setVolume(_ volume: Float, ramp: Double, curve: Envelope.Curve) {
        guard isPlaying else { return }
        control?.setVolume(id, max(0, volume), ramp: ramp, curve: curve)
    }

    /// Ends the play with `reason` if it has not ended yet. A stop or cancel asked for by the user
    /// also stops the voice unless `stoppingVoice` is false (the output reports an end it has
    /// already carried out); a finish or failure comes from the output, which already knows.
    /// - Returns: whether this call ended it.
    @discardableResult
    package func end(_ reason: PlaybackEnd, stoppingVoice: Bool = true) -> Bool {
        guard let (delivery, body) = completion.withLock({ state -> (Delivery, (@Sendable (PlaybackEnd) -> Void)?)? in
            defer { state = nil }
            return state
        }) else { return false }
        reportOnset(nil)
        if (reason == .stopped || reason == .cancelled) && stoppingVoice { control?.stop(id) }
        if let body { delivery.deliver { body(reason) } }
        return true
    }
}

private let playbackIDs = Atomic<UInt64>(1)

/// A process-wide unique play number.
func nextPlaybackID() -> UInt64 {
    playbackIDs.wrappingAdd(1, ordering: .relaxed).oldValue
}
