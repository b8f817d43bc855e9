internal import CPulse
import Dispatch
import Glibc
import Synchronization

/// The engine's machinery behind `PulseAudioOutput`: the threaded mainloop, the queued commands and
/// the handles of the plays in progress (the PulseAudio objects and the timeline are in its
/// `PulseAudioConnection`). The audio thread works on this object only, never on the
/// `PulseAudioOutput` users hold, so the last reference to that facade is never dropped on the
/// audio thread; its deinit shuts this engine down (joining the audio thread) before it can be freed.
final class PulseAudioEngine: QueuedEngine, @unchecked Sendable {
    // Locking rule: everything in `connection` (the PulseAudio objects, the timeline) and `drained`
    // is touched only on the PulseAudio mainloop thread, i.e. in its callbacks, or while holding
    // `pa_threaded_mainloop_lock` (init and shutdown). API threads reach the mainloop only through
    // `core` (behind its lock) and the wake-up eventfd. That is what makes this class
    // `@unchecked Sendable`.

    let configuration: PulseAudioOutput.Configuration
    /// Commands taken from the requests, mainloop thread only; swapped back (emptied) each time.
    private var drained: [Timeline.Command] = []
    /// The plays and commands API threads queue, the connection's state and the statistics; its
    /// requests are closed by shutdown, once the mainloop no longer watches the wake-up eventfd.
    let core = EngineCore()
    private let mainloop: OpaquePointer
    /// The wake-up eventfd: API threads signal it, the mainloop watches it. (An eventfd rather
    /// than a pipe: one descriptor, and a slightly shorter tail on the write that wakes the audio
    /// thread — which is nearly all of `play`'s p99; see docs/benchmarks.md.) It stays
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
        core.closed(with: nil, closing: true)
        pa_threaded_mainloop_lock(mainloop)
        freeWakeEvent()
        connection.disconnect()
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_stop(mainloop)
        pa_threaded_mainloop_free(mainloop)
        core.closed(with: PlaybackError(.outputClosed))
    }

    /// Called with the mainloop lock held (or on its thread).
    private func freeWakeEvent() {
        if let event = connection.wakeEvent, let api = connection.api { api.pointee.io_free(event) }
        connection.wakeEvent = nil
    }

    /// Opens the connection now instead of on the first `play`, and waits up to `timeout` seconds
    /// (at most `EngineTimeouts.open`, when the attempt itself gives up) for the stream
    /// to be ready. A server that accepts the connection but never answers (a hung one) is no
    /// longer waited for once that time is up.
    /// - Throws: `PlaybackError` (`.serverUnavailable` with the server's message) if it is not.
    func prepare(timeout: Double) throws(PlaybackError) {
        try core.requests.prepare(
            timeout: timeout, timedOut: PlaybackError(.serverUnavailable, detail: "no stream after \(timeout) s"),
            wake: serviceNow)
    }

    /// Does what the mainloop does when woken, on the calling thread with the mainloop lock held:
    /// a closed engine starts connecting at once rather than after the mainloop thread is
    /// scheduled, which on a busy machine (a new process decoding its sound on the other core)
    /// came a millisecond or more later.
    private func serviceNow() {
        pa_threaded_mainloop_lock(mainloop)
        service()
        pa_threaded_mainloop_unlock(mainloop)
    }

    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, delivery: Delivery,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        play(.buffer(buffer), from: 0, options: options, delivery: delivery, completion: completion)
    }

    var timelineRate: Int { configuration.sampleRate }

    /// The server's timing reports say when a frame is played: each sound's onset is known.
    var reportsOnsets: Bool { true }

    func wakeAudioThread() {
        wake.signal()
    }

    // MARK: The PulseAudio thread

    /// Runs on the mainloop thread whenever an API thread has queued something (or under its lock:
    /// `serviceNow`).
    private func service() {
        switch core.state {
        case .closed:
            if core.beginOpeningIfWanted() { connection.connect() }
        case .opening:
            break
        case .ready:
            applyCommands()
        }
    }

    /// Takes the queued commands and applies them at the current read position, then rewrites the
    /// queued audio so that they are heard at once.
    private func applyCommands() {
        core.requests.takeCommands(into: &drained)
        defer { drained.removeAll(keepingCapacity: true) }
        guard !drained.isEmpty else { return }
        let now = connection.changeFrame()
        let wasIdle = connection.timeline.isEmpty
        core.place(drained, on: &connection.timeline, at: now, time: MonotonicClock.now) {
            connection.heardTime(of: now)
        }
        // The stall clock starts no earlier than the sound: an idle stream's last report may be old.
        if wasIdle && !connection.timeline.isEmpty { connection.watch.soundsBegan(at: MonotonicClock.now) }
        if connection.rewrite(from: now) { core.record { $0.rewrites += 1 } }
        connection.startIfHeld()
        connection.scheduleTick()
    }

    func streamBecameReady(rewrites: Bool) {
        core.record { $0.rewritesEnabled = rewrites }
        core.becameReady()
        applyCommands()
        // The tick that closes the stream when idle: applyCommands schedules it only when a play
        // was waiting, so a stream opened by `prepare()` alone would otherwise stay open for good.
        connection.scheduleTick()
    }

    /// The connection closed. With an error (the server went away, refused us, or could not be
    /// reached), every sound playing or waiting fails. Without one (closed when idle), nothing was
    /// playing; a play that raced with the close opens a new connection.
    func connectionEnded(_ error: PlaybackError?) {
        if core.closed(with: error) { service() }
    }

    var hasPendingWork: Bool { core.requests.hasPendingWork }
}
