internal import CPulse
import Dispatch
import Glibc
import Synchronization

/// The engine's machinery behind `PulseAudioOutput`: the threaded mainloop, the queued commands and
/// the handles of the plays in progress (the PulseAudio objects and the timeline are in its
/// `PulseAudioConnection`). The audio thread works on this object only, never on the
/// `PulseAudioOutput` users hold, so the last reference to that facade is never dropped on the
/// audio thread; its deinit shuts this engine down (joining the audio thread) before it can be freed.
final class PulseAudioEngine: TimelineControl, @unchecked Sendable {
    // Locking rule: everything in `connection` (the PulseAudio objects, the timeline) and `drained`
    // is touched only on the PulseAudio mainloop thread, i.e. in its callbacks, or while holding
    // `pa_threaded_mainloop_lock` (init and shutdown). API threads reach the mainloop only through
    // `shared` (a Mutex) and the wake-up eventfd. That is what makes this class `@unchecked Sendable`.

    let configuration: PulseAudioOutput.Configuration
    /// Commands taken from `shared`, mainloop thread only; swapped back (emptied) each time.
    private var drained: [Timeline.Command] = []

    private struct Shared {
        var commands: [Timeline.Command] = []
        var handles: [UInt64: PlaybackHandle] = [:]
        var state: ConnectionState = .closed
        var statistics = PulseAudioOutput.Statistics()
        var readyWaiters: [DispatchSemaphore] = []
        var lastError: PlaybackError?
        /// Set by shutdown: the mainloop no longer watches the wake-up eventfd, nothing may be queued.
        var closed = false
    }

    private enum ConnectionState { case closed, connecting, ready }

    private let shared = Mutex(Shared())
    private let mainloop: OpaquePointer
    /// The wake-up eventfd: API threads signal it, the mainloop watches it. (An eventfd rather
    /// than a pipe: one descriptor, and a slightly shorter tail on the write that wakes the audio
    /// thread — which is nearly all of `play`'s p99; see the README's benchmark notes.) It stays
    /// open until deinit: a handle's stop() racing shutdown may still signal it (it holds the
    /// engine for the call), and must not hit a reused descriptor.
    private let wake: EventFD
    private let connection: PulseAudioConnection

    init(configuration: PulseAudioOutput.Configuration) {
        self.configuration = configuration
        mainloop = pa_threaded_mainloop_new()!
        do {
            wake = try EventFD()
        } catch {
            preconditionFailure("eventfd failed: \(error)")
        }
        connection = PulseAudioConnection(configuration: configuration)
        connection.engine = self
        pa_threaded_mainloop_lock(mainloop)
        let api = pa_threaded_mainloop_get_api(mainloop)!
        connection.api = api
        let event = api.pointee.io_new(
            api, wake.descriptor, PA_IO_EVENT_INPUT,
            { _, _, _, _, userdata in
                // The engine outlives this event: shutdown() frees it before the engine can go.
                let engine = Unmanaged<PulseAudioEngine>.fromOpaque(userdata!).takeUnretainedValue()
                engine.wake.drain()
                engine.service()
            }, Unmanaged.passUnretained(self).toOpaque())
        connection.wakeEvent = event
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_start(mainloop)
    }

    /// Disconnects, stops the audio thread and waits for it; every sound still playing ends
    /// `.failed(.outputClosed)`. Called once, by the facade's deinit, never on the audio thread.
    func shutdown() {
        shared.withLock { $0.closed = true }
        pa_threaded_mainloop_lock(mainloop)
        freeWakeEvent()
        connection.disconnect()
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_stop(mainloop)
        pa_threaded_mainloop_free(mainloop)
        let handles = shared.withLock { shared in
            // Streams that were about to start would otherwise keep their feeders waiting forever.
            for command in shared.commands { command.discard() }
            defer { shared.handles.removeAll() }
            return Array(shared.handles.values)
        }
        for handle in handles { handle.end(.failed(PlaybackError(.outputClosed))) }
    }

    /// Called with the mainloop lock held (or on its thread).
    private func freeWakeEvent() {
        if let event = connection.wakeEvent, let api = connection.api { api.pointee.io_free(event) }
        connection.wakeEvent = nil
    }

    var statistics: PulseAudioOutput.Statistics { shared.withLock { $0.statistics } }

    /// Opens the connection now instead of on the first `play`, and waits up to `timeout` seconds
    /// (at most `PulseAudioOutput.connectTimeout`, when the attempt itself gives up) for the stream
    /// to be ready. A server that accepts the connection but never answers (a hung one) is no
    /// longer waited for once that time is up.
    /// - Throws: `PlaybackError` (`.serverUnavailable` with the server's message) if it is not.
    func prepare(timeout: Double) throws(PlaybackError) {
        let semaphore = DispatchSemaphore(value: 0)
        let ready = shared.withLock { shared -> Bool in
            if shared.state == .ready { return true }
            shared.lastError = nil
            shared.readyWaiters.append(semaphore)
            return false
        }
        if ready { return }
        wake.signal()
        if semaphore.wait(timeout: .now() + timeout) == .timedOut {
            shared.withLock { $0.readyWaiters.removeAll { $0 === semaphore } }
            throw PlaybackError(.serverUnavailable, detail: "no stream after \(timeout) s")
        }
        let error = shared.withLock { $0.state == .ready ? nil : $0.lastError }
        if let error { throw error }
    }

    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, delivery: Delivery,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        play(.buffer(buffer), from: 0, options: options, delivery: delivery, completion: completion)
    }

    /// Starts a voice `offset` seconds into `source` (a seek). A stream source is cancelled (its
    /// feeder stops) when the voice ends, however it ends.
    func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions, delivery: Delivery,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        let voice: (samples: VoiceSamples, offset: Int64)
        do {
            voice = try source.samples(
                at: configuration.sampleRate, from: offset, looping: options.playCount != 1, streaming: true)
        } catch {
            return PlaybackHandle.failed(error, delivery: delivery, completion: completion)
        }
        let id = nextPlaybackID()
        let handle = PlaybackHandle(id: id, control: self, delivery: delivery, completion: completion)
        let accepted = shared.withLock { shared in
            guard !shared.closed else { return false }
            shared.handles[id] = handle
            shared.commands.append(.start(id: id, samples: voice.samples, offset: voice.offset, options: options))
            return true
        }
        guard accepted else {
            voice.samples.cancel()
            handle.end(.failed(PlaybackError(.outputClosed)))
            return handle
        }
        wake.signal()
        return handle
    }

    /// Queues `command` for the mainloop, which applies it at the read position.
    func send(_ command: Timeline.Command) {
        let open = shared.withLock { shared in
            guard !shared.closed else { return false }
            shared.commands.append(command)
            return true
        }
        if open { wake.signal() }
    }

    // MARK: The PulseAudio thread

    /// Runs on the mainloop thread whenever an API thread has queued something.
    private func service() {
        let state = shared.withLock { $0.state }
        switch state {
        case .closed:
            let wanted = shared.withLock { !$0.commands.isEmpty || !$0.readyWaiters.isEmpty }
            if wanted {
                shared.withLock {
                    $0.state = .connecting
                    $0.statistics.connections += 1
                }
                connection.connect()
            }
        case .connecting:
            break
        case .ready:
            applyCommands()
        }
    }

    /// Takes the queued commands and applies them at the current read position, then rewrites the
    /// queued audio so that they are heard at once.
    private func applyCommands() {
        // Swapped with an emptied buffer of the same capacity: no allocation while holding the
        // lock that `play` needs, and none on the next `play` either.
        shared.withLock { swap(&$0.commands, &drained) }
        defer { drained.removeAll(keepingCapacity: true) }
        guard !drained.isEmpty else { return }
        let now = connection.changeFrame()
        let wasIdle = connection.timeline.isEmpty
        for command in drained {
            // Only plays still waiting for their voice start (a failed connection or a shutdown
            // ends the others).
            if case .start(let id, _, _, _) = command, !shared.withLock({ $0.handles[id] != nil }) {
                command.discard()
                continue
            }
            connection.timeline.apply(command, at: now)
        }
        // The stall clock starts no earlier than the sound: an idle stream's last report may be old.
        if wasIdle && !connection.timeline.isEmpty { connection.progressTime = MonotonicClock.now }
        if connection.rewrite(from: now) {
            shared.withLock { $0.statistics.rewrites += 1 }
        }
        connection.scheduleTick()
    }

    func streamBecameReady(rewrites: Bool) {
        let waiters = shared.withLock { shared -> [DispatchSemaphore] in
            shared.state = .ready
            shared.statistics.rewritesEnabled = rewrites
            shared.statistics.streamReadyTime = MonotonicClock.now
            defer { shared.readyWaiters.removeAll() }
            return shared.readyWaiters
        }
        waiters.forEach { $0.signal() }
        applyCommands()
    }

    /// The connection closed. With an error (the server went away, refused us, or could not be
    /// reached), every sound playing or waiting fails. Without one (closed when idle), nothing was
    /// playing; a play that raced with the close opens a new connection.
    func connectionEnded(_ error: PlaybackError?) {
        let (failed, waiters, reopen) = shared.withLock { shared -> ([PlaybackHandle], [DispatchSemaphore], Bool) in
            shared.state = .closed
            shared.lastError = error
            if error != nil {
                // Streams that will now never start would keep their feeders waiting forever.
                for command in shared.commands { command.discard() }
            }
            guard error != nil else {
                return ([], [], !shared.commands.isEmpty || !shared.readyWaiters.isEmpty)
            }
            let handles = Array(shared.handles.values)
            shared.handles.removeAll()
            shared.commands.removeAll()
            defer { shared.readyWaiters.removeAll() }
            return (handles, shared.readyWaiters, false)
        }
        if let error {
            for handle in failed { handle.end(.failed(error)) }
        }
        waiters.forEach { $0.signal() }
        if reopen { service() }
    }

    func voiceEnded(_ id: UInt64, _ end: PlaybackEnd) {
        let handle = shared.withLock { $0.handles.removeValue(forKey: id) }
        // The voice is gone already: asking the output to stop it would only take a strong
        // reference to the output on its own thread, where it must never be released.
        handle?.end(end, stoppingVoice: false)
    }

    func noteUnderflow() {
        shared.withLock { $0.statistics.underflows += 1 }
    }

    var hasPendingWork: Bool {
        shared.withLock { !$0.commands.isEmpty || !$0.handles.isEmpty }
    }
}
