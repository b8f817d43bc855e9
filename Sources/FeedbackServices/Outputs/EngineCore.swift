import Synchronization

/// How long an engine output waits for each thing that can hang, on every backend.
package enum EngineTimeouts {
    /// Seconds a connection or a device may take to become ready before the plays waiting for it
    /// fail (`.serverUnavailable`, or `.deviceUnavailable` for an ALSA PCM). libpulse itself would
    /// wait 30 s for a server that accepted the socket but does not answer; `snd_pcm_open` through
    /// the pulse plugin, without limit.
    package static let open: Double = 5
    /// Seconds the device's position may stand still (or PipeWire's graph not ask for audio) while
    /// a sound plays before every sound fails `.serverStalled`. A healthy device moves it every few
    /// milliseconds, silence included.
    package static let stall: Double = 2
}

/// What an engine output did since it was made: one type for every backend, for tests, benchmarks
/// and `feedbackctl`. The first group is the core's and means the same on every backend; the
/// second is what a backend reports of its device, and stays at its default where it means nothing.
/// A value.
package struct EngineStatistics: Sendable, Equatable {
    /// Times opening the connection or the device began: the first, and each after an idle close
    /// or a failure, whether or not it then opened.
    package var opens = 0
    /// When the output last became ready to play (CLOCK_MONOTONIC seconds): the moment from which
    /// a sound can be heard at all. Nil before it first opened.
    package var readyTime: Double?
    /// Times the device ran out of queued audio: PulseAudio's underflow reports, ALSA's underruns
    /// (each recovered with `snd_pcm_recover`), PipeWire's cycles whose buffer could not be
    /// dequeued.
    package var underflows = 0
    /// Times queued audio was rewound and rendered again for a change.
    package var rewrites = 0
    /// Whether changes rewrite queued audio on the stream or PCM opened last (false on servers and
    /// devices that do not honour it, and always on PipeWire, which pulls each buffer just in time).
    package var rewritesEnabled = false
    /// Voices a position said had been played before their length had passed since they started,
    /// held back rather than reported `.finished` (`Timeline.heldFinishes`): 0 unless the device's
    /// reported position ran ahead of it.
    package var heldFinishes = 0

    // What the backend reports of its device.

    /// ALSA: `snd_pcm_rewindable` on the PCM opened last, with its first audio queued (0 until its
    /// first sound started).
    package var rewindableFrames = 0
    /// ALSA: whether dmix is in the chain of the PCM opened last; it then gets the short queue and
    /// no rewinds.
    package var sharedMixer = false
    /// ALSA: the ring and period the device granted, in frames, and its sample format (`FLOAT_LE`,
    /// `S32_LE`, `S16_LE`).
    package var bufferFrames = 0
    package var periodFrames = 0
    package var sampleFormat = ""
    /// ALSA: frames kept queued, the whole ring when rewinding, the short queue otherwise.
    package var queuedFrames = 0
    /// PipeWire: frames in the last buffer the graph asked for, the quantum in force.
    package var quantum = 0
    /// PipeWire: how the thread running the process callback was scheduled when it first ran.
    package var streamThread: PipeWireOutput.ThreadScheduling?
}

/// The engine layer every live output shares, in miniaudio's manner: the backend (the PulseAudio
/// connection, the ALSA PCM, the PipeWire stream) opens and closes its device and moves frames,
/// and asks this core what to do. The core holds the requests API threads queue (plays, commands,
/// `prepare` waiters), the connection's state (closed → opening → ready → closed), the open
/// timeout, one statistics record, and a play's end, exactly once whatever ended it. The push
/// backends (PulseAudio, ALSA) also place and retire voices through it (`place`, `retire`): a
/// start whose play has ended already is let go. PipeWire's real-time process callback may not
/// take the core's lock, so it places and retires on its own timeline and hands the onsets and
/// ends to the core from its loop thread.
///
/// Thread safety: every method may be called from any thread; the state is behind one lock, held
/// only for short work that never calls out. The timeline itself is the backend's audio thread's
/// (`EngineWatch` is that thread's clocks).
final class EngineCore: Sendable {
    /// Where the connection (or the device) is.
    enum State: Equatable, Sendable {
        /// Not open: the next play or `prepare` opens it.
        case closed
        /// Being opened since `since` (CLOCK_MONOTONIC seconds).
        case opening(since: Double)
        /// Open and taking sounds.
        case ready
    }

    /// The plays and commands API threads queue, and the `prepare` callers waiting.
    let requests = EngineRequests()
    private struct Shared {
        var state = State.closed
        var statistics = EngineStatistics()
        /// Set by shutdown (`closed(closing: true)`): nothing opens any more.
        var shutDown = false
    }
    private let shared = Lock(Shared())

    /// Where the connection is now.
    var state: State { shared.withLock { $0.state } }

    /// The counters and facts so far.
    var statistics: EngineStatistics { shared.withLock { $0.statistics } }

    /// Changes the statistics (a backend's facts, a rewrite, an underflow).
    func record(_ change: (inout EngineStatistics) -> Void) {
        shared.withLock { change(&$0.statistics) }
    }

    /// Closed, not shut down, and a play or `prepare` waits: the state becomes `opening` and the
    /// opening is counted.
    /// - Returns: whether the backend is to open its device now.
    func beginOpeningIfWanted(now: Double = MonotonicClock.now) -> Bool {
        guard requests.isWanted else { return false }
        return shared.withLock { shared in
            guard shared.state == .closed, !shared.shutDown else { return false }
            shared.state = .opening(since: now)
            shared.statistics.opens += 1
            return true
        }
    }

    /// Whether an opening has taken longer than `EngineTimeouts.open` at `now`.
    func isOpeningOverdue(now: Double = MonotonicClock.now) -> Bool {
        guard case .opening(let since) = state else { return false }
        return now - since > EngineTimeouts.open
    }

    /// The device opened and takes sounds: every `prepare` waiting returns. Only an opening
    /// becomes ready: after a close (the device failed at its first write) or a shutdown, this
    /// changes nothing.
    /// - Parameter now: when it opened (CLOCK_MONOTONIC seconds), `readyTime`.
    /// - Returns: whether it became ready.
    @discardableResult
    func becameReady(now: Double = MonotonicClock.now) -> Bool {
        let opened = shared.withLock { shared -> Bool in
            guard case .opening = shared.state, !shared.shutDown else { return false }
            shared.state = .ready
            shared.statistics.readyTime = now
            return true
        }
        if opened { requests.setReady(true) }
        return opened
    }

    /// The connection closed. With an error (the device went away, refused, hung or never opened),
    /// every play queued or in progress ends `.failed` with it, once. Without one (closed when
    /// idle), nothing was playing. With `closing` (shutdown), nothing may be queued any more.
    /// - Returns: whether plays are still queued: without an error, a play that raced the close,
    ///   for which the backend opens again.
    @discardableResult
    func closed(with error: PlaybackError?, closing: Bool = false) -> Bool {
        shared.withLock { shared in
            shared.state = .closed
            shared.shutDown = shared.shutDown || closing
        }
        return requests.closed(with: error, closing: closing)
    }

    /// Applies `commands` to `timeline` at `frame`, at `time`. A start whose play is no longer
    /// waiting (a failure or a shutdown ended it) is let go; every start placed is told when it
    /// is heard: `heard`, asked once, and only when a sound starts.
    func place(
        _ commands: [Timeline.Command], on timeline: inout Timeline, at frame: Int64, time: Double,
        heard: () -> Double
    ) {
        var onset: Double?
        for command in commands {
            if case .start(let id, _, _, _) = command {
                guard requests.isWaiting(id) else {
                    command.discard()
                    continue
                }
                timeline.apply(command, at: frame, time: time)
                if onset == nil { onset = heard() }
                requests.voicePlaced(id, heardAt: onset!)
                continue
            }
            timeline.apply(command, at: frame, time: time)
        }
    }

    /// Ends the voices of `timeline` whose last frame the device has played (`played`, as the
    /// device itself reports it, never an extrapolation), and records finishes held back.
    func retire(on timeline: inout Timeline, playedUpTo played: Int64, at now: Double) {
        let held = timeline.heldFinishes
        for (id, end) in timeline.retire(playedUpTo: played, time: now) { requests.voiceEnded(id, end) }
        if timeline.heldFinishes != held {
            let count = timeline.heldFinishes
            record { $0.heldFinishes = count }
        }
    }
}

/// The core's clocks on the thread that moves a backend's frames: the stall watchdog and the idle
/// close, the same rules on every backend.
///
/// Stall: while sounds play, the device must show progress (its position moved: `observe`; or,
/// on PipeWire, its graph asked for a buffer: `progressed`); once it has shown none for
/// `EngineTimeouts.stall`, every play fails `.serverStalled`. Its clock starts no earlier than
/// the sound or the connection (an idle stream's last report may be old), and time a backend's
/// thread did not run (`excuse`: PulseAudio's late ticks on a loaded machine, when the server's
/// reports wait unread) is not held against the device. Idle: once nothing plays nor waits for
/// `idleTimeout` seconds, the backend closes its device.
///
/// Thread safety: a value, owned by that thread.
struct EngineWatch {
    /// Seconds without sound after which the device is closed.
    let idleTimeout: Double
    private var lastPosition: Int64?
    private var progressTime = 0.0
    private var idleSince: Double?

    init(idleTimeout: Double) {
        self.idleTimeout = idleTimeout
    }

    /// Sounds began on an idle timeline, or a connection or stream began: the stall clock starts
    /// now.
    mutating func soundsBegan(at now: Double) {
        progressTime = now
    }

    /// The device reports its position `position` at `now`: progress, if it moved.
    mutating func observe(position: Int64, at now: Double) {
        guard position != lastPosition else { return }
        lastPosition = position
        progressTime = now
    }

    /// The device showed it runs at `time` (PipeWire's graph asked for a buffer).
    mutating func progressed(at time: Double) {
        progressTime = max(progressTime, time)
    }

    /// The thread did not run for `seconds`: the device's reports may be waiting unread, so that
    /// time is not held against it.
    mutating func excuse(_ seconds: Double) {
        progressTime += seconds
    }

    /// Whether, at `now`, the position has stood still for longer than `EngineTimeouts.stall`
    /// (asked only while sounds play).
    func isStalled(at now: Double) -> Bool {
        now - progressTime > EngineTimeouts.stall
    }

    /// Whether the device is to close at `now`: `idle` (nothing plays, nothing waits) for
    /// `idleTimeout` seconds. Anything else restarts the idle time.
    /// - Returns: nil when not idle; else the seconds left, 0 when it is to close now.
    mutating func idleTimeLeft(idle: Bool, at now: Double) -> Double? {
        guard idle else {
            idleSince = nil
            return nil
        }
        let since = idleSince ?? now
        idleSince = since
        return max(0, idleTimeout - (now - since))
    }

    /// A new device (or none): forgets its position and the idle time.
    mutating func reset() {
        lastPosition = nil
        idleSince = nil
    }
}
