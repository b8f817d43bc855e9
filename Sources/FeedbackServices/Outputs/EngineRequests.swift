import Dispatch
import Synchronization

/// What API threads hand a live engine output's audio thread (the PulseAudio stream's, the ALSA
/// PCM's, PipeWire's data thread): the timeline commands queued for it, the handles of the plays
/// in progress, and the `prepare` callers waiting for the output to be ready. One piece for every
/// such output, so that a play is queued, prepared for and ended by the same rules on each.
///
/// Thread safety: every method may be called from any thread; the state is behind one Mutex, held
/// only for short, non-blocking work (never while calling out). A real-time thread takes the
/// commands with `takeCommandsIfAvailable`, which never waits for that lock.
final class EngineRequests: Sendable {
    private struct State {
        var commands: [Timeline.Command] = []
        var handles: [UInt64: PlaybackHandle] = [:]
        var readyWaiters: [DispatchSemaphore] = []
        var isReady = false
        var lastError: PlaybackError?
        /// Set by shutdown: nothing may be queued any more.
        var closed = false
    }

    private let state = Lock(State())

    /// Records `handle` for the play `id` and queues its `start` command, unless the output is
    /// shut down.
    /// - Returns: whether it was queued (the caller then wakes the audio thread).
    func enqueue(_ id: UInt64, _ handle: PlaybackHandle, _ start: Timeline.Command) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.handles[id] = handle
            state.commands.append(start)
            return true
        }
    }

    /// Queues `command` and calls `wake`, unless the output is shut down (then the command is
    /// let go).
    func send(_ command: Timeline.Command, wake: () -> Void) {
        let open = state.withLock { state in
            guard !state.closed else { return false }
            state.commands.append(command)
            return true
        }
        if open { wake() } else { command.discard() }
    }

    /// Waits up to `timeout` seconds for the output to become ready, after `wake` has asked the
    /// audio thread to open it.
    /// - Throws: the error that ended the attempt, or `timedOut` when none came in time.
    func prepare(timeout: Double, timedOut: PlaybackError, wake: () -> Void) throws(PlaybackError) {
        let semaphore = DispatchSemaphore(value: 0)
        let ready = state.withLock { state -> Bool in
            if state.isReady { return true }
            state.lastError = nil
            state.readyWaiters.append(semaphore)
            return false
        }
        if ready { return }
        wake()
        if semaphore.wait(timeout: .now() + timeout) == .timedOut {
            state.withLock { $0.readyWaiters.removeAll { $0 === semaphore } }
            throw timedOut
        }
        let error = state.withLock { $0.isReady ? nil : ($0.lastError ?? PlaybackError(.outputClosed)) }
        if let error { throw error }
    }

    // MARK: The audio thread's side

    /// Whether a play or a `prepare` waits for the output to open.
    var isWanted: Bool { state.withLock { !$0.commands.isEmpty || !$0.readyWaiters.isEmpty } }

    /// Whether plays are queued or in progress (an output with none may close when idle).
    var hasPendingWork: Bool { state.withLock { !$0.commands.isEmpty || !$0.handles.isEmpty } }

    /// Whether the play `id` is still waiting for its voice (a failure or a shutdown ended the others).
    func isWaiting(_ id: UInt64) -> Bool { state.withLock { $0.handles[id] != nil } }

    /// Swaps the queued commands into `commands` (emptied, its capacity kept): no allocation while
    /// holding the lock that `play` needs, nor on the next `play`.
    func takeCommands(into commands: inout [Timeline.Command]) {
        state.withLock { swap(&$0.commands, &commands) }
    }

    /// `takeCommands` for a real-time thread: a try-lock. When an API thread holds the lock, the
    /// commands stay queued for the next call and this returns false.
    func takeCommandsIfAvailable(into commands: inout [Timeline.Command]) -> Bool {
        state.withLockIfAvailable { swap(&$0.commands, &commands) } != nil
    }

    /// The output is ready (or no longer is); becoming ready releases every `prepare` waiting.
    func setReady(_ ready: Bool) {
        let waiters = state.withLock { state -> [DispatchSemaphore] in
            state.isReady = ready
            guard ready else { return [] }
            defer { state.readyWaiters.removeAll() }
            return state.readyWaiters
        }
        waiters.forEach { $0.signal() }
    }

    /// The output stopped being usable: with `closing`, nothing may be queued any more (shutdown).
    /// With an `error`, every play queued or in progress ends `.failed` with it and every `prepare`
    /// waiting throws it; without one (closed when idle), nothing is ended.
    /// - Returns: whether plays are still queued (without an error: a play that raced the close).
    @discardableResult
    func closed(with error: PlaybackError?, closing: Bool = false) -> Bool {
        let (handles, waiters, queued) = state.withLock { state -> ([PlaybackHandle], [DispatchSemaphore], Bool) in
            state.isReady = false
            state.closed = state.closed || closing
            state.lastError = error
            guard error != nil else { return ([], [], !state.commands.isEmpty || !state.readyWaiters.isEmpty) }
            // Streams that will now never start would keep their feeders waiting forever.
            for command in state.commands { command.discard() }
            state.commands.removeAll()
            defer {
                state.handles.removeAll()
                state.readyWaiters.removeAll()
            }
            return (Array(state.handles.values), state.readyWaiters, false)
        }
        for handle in handles { handle.end(.failed(error!), stoppingVoice: false) }
        waiters.forEach { $0.signal() }
        return queued
    }

    /// Reports when the voice `id`'s first frame reaches the device (`PlaybackHandle.whenHeard`).
    func voicePlaced(_ id: UInt64, heardAt time: Double) {
        let handle = state.withLock { $0.handles[id] }
        handle?.reportOnset(time)
    }

    /// Reports the end of the voice `id`. The voice is gone already, so the handle does not ask
    /// the output to stop it (that would only take a reference to the output on its own thread).
    func voiceEnded(_ id: UInt64, _ end: PlaybackEnd) {
        let handle = state.withLock { $0.handles.removeValue(forKey: id) }
        handle?.end(end, stoppingVoice: false)
    }
}

/// A live engine output whose API side is an `EngineRequests` and whose audio thread a wake-up
/// (an eventfd) rouses: its plays and commands are queued the same way on every such output.
protocol QueuedEngine: TimelineControl {
    /// The engine layer: its requests, state, statistics and rules (`EngineCore`).
    var core: EngineCore { get }
    /// The rate of its timeline, in Hz.
    var timelineRate: Int { get }
    /// Whether it reports when each sound's first frame reaches the device (`voicePlaced`).
    var reportsOnsets: Bool { get }
    /// Wakes the audio thread to take what was queued; never blocks.
    func wakeAudioThread()
}

extension QueuedEngine {
    var reportsOnsets: Bool { false }

    /// Starts a voice `offset` seconds into `source` (a seek). A stream source is cancelled (its
    /// feeder stops) when the voice ends, however it ends.
    func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions, delivery: Delivery,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        startVoice(
            source, from: offset, sampleRate: timelineRate, options: options, delivery: delivery, completion: completion,
            reportsOnset: reportsOnsets
        ) { id, handle, start in
            guard core.requests.enqueue(id, handle, start) else { return false }
            wakeAudioThread()
            return true
        }
    }

    /// Queues `command` for the audio thread, which applies it where it is heard soonest.
    func send(_ command: Timeline.Command) {
        core.requests.send(command, wake: wakeAudioThread)
    }
}
