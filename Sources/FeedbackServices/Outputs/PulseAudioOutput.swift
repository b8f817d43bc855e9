internal import CFeedbackShims
internal import CPulse
public import Dispatch
import Glibc
import Synchronization

/// The engine: our mixer feeding one always-open PulseAudio playback stream.
///
/// Latency. The stream keeps a safe 50 ms of audio queued at the server (small buffers under-run
/// under load). When a sound starts, stops or changes, the engine re-renders the queued region with
/// the change applied and writes it from the server's read pointer (`PA_SEEK_RELATIVE_ON_READ`), so
/// a new sound is heard at once instead of after the queue. This works because the mix is a pure
/// function of the timeline (see `Mixer`). Servers that do not honour such rewrites (pipewire-pulse,
/// detected by name) get a 20 ms queue written in order instead.
///
/// Lifecycle. The connection opens on the first `play` (or `prepare()`), closes after
/// `idleTimeout` without sound, and opens again on the next `play`: a sound server that went away
/// and came back is used again. If the server dies mid-play, every sound playing ends `.failed`.
///
/// Threads. `play` and the handle methods never wait on the server and never take PulseAudio's
/// lock: they queue a command under a short lock and wake the PulseAudio thread through a
/// non-blocking eventfd. Completions run on the caller's queue, exactly once per play.
public final class PulseAudioOutput: AudioOutput, Sendable {
    /// How the engine connects and buffers.
    public struct Configuration: Sendable {
        /// The server to connect to (e.g. `unix:/run/user/1000/pulse/native`); nil for the
        /// default (`PULSE_SERVER`, then the user's socket).
        public var server: String?
        /// The engine rate, in Hz; sounds must be at this rate.
        public var sampleRate: Int
        /// Audio kept queued at the server, in seconds.
        public var bufferDuration: Double
        /// Seconds without sound after which the connection is closed.
        public var idleTimeout: Double
        /// `application.name` the server shows for the stream.
        public var applicationName: String
        /// The stream's `media.role`, which the server's policy modules act on (module-role-cork,
        /// module-role-ducking, per-role volumes): `event` for alerts and effects, `music`, `game`, …
        public var mediaRole: String

        /// Creates a configuration: default server, 48 kHz, 50 ms queue, 10 s idle timeout, role
        /// `event`.
        public init(
            server: String? = nil, sampleRate: Int = 48_000, bufferDuration: Double = 0.05,
            idleTimeout: Double = 10, applicationName: String = "FeedbackServices", mediaRole: String = "event"
        ) {
            self.server = server
            self.sampleRate = sampleRate
            self.bufferDuration = bufferDuration
            self.idleTimeout = idleTimeout
            self.applicationName = applicationName
            self.mediaRole = mediaRole
        }
    }

    /// Counters for tests and benchmarks.
    public struct Statistics: Sendable, Equatable {
        /// Times the server ran out of queued audio.
        public var underflows = 0
        /// Times queued audio was re-rendered and rewritten for a change.
        public var rewrites = 0
        /// Connections made (the first, and each reconnection).
        public var connections = 0
        /// Whether queued audio is rewritten on changes (false on servers that do not honour it).
        public var rewritesEnabled = true
    }

    public let name = "engine (PulseAudio)"
    /// The configuration it was made with.
    public let configuration: Configuration
    private let core: EngineCore

    /// Creates the engine output. Nothing connects until the first `play` or `prepare()`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        core = EngineCore(configuration: configuration)
    }

    deinit {
        core.shutdown()
    }

    /// Counters since the output was made.
    public var statistics: Statistics { core.statistics }

    /// Opens the connection now instead of on the first `play`, and waits up to `timeout` seconds
    /// for the stream to be ready.
    /// - Throws: `PlaybackError` (`.serverUnavailable` with the server's message) if it is not.
    public func prepare(timeout: Double = 2) throws(PlaybackError) {
        try core.prepare(timeout: timeout)
    }

    @discardableResult
    public func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(), queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        core.play(buffer, options: options, queue: queue, completion: completion)
    }

    /// Starts a voice `offset` frames into `source` (a seek, or streamed music), at the engine rate.
    package func play(
        _ source: VoiceSource, offset: Int64, options: PlaybackOptions, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        core.play(source, offset: offset, options: options, queue: queue, completion: completion)
    }
}

/// The engine's machinery: the PulseAudio objects, the voices, the queued commands. The audio
/// thread works on this object only, never on the `PulseAudioOutput` users hold, so the last
/// reference to that facade is never dropped on the audio thread; its deinit shuts this core down
/// (joining the audio thread) before the core can be freed.
final class EngineCore: PlaybackControl, @unchecked Sendable {
    // Locking rule: everything in `Loop` (the PulseAudio objects, the voices, the timeline) is
    // touched only on the PulseAudio mainloop thread, i.e. in its callbacks, or while holding
    // `pa_threaded_mainloop_lock` (init and shutdown). API threads reach the mainloop only through
    // `shared` (a Mutex) and the wake-up eventfd. That is what makes this class `@unchecked Sendable`.

    let configuration: PulseAudioOutput.Configuration
    /// Commands taken from `shared`, mainloop thread only; swapped back (emptied) each time.
    private var drained: [Command] = []

    private enum Command {
        case start(id: UInt64, source: VoiceSource, offset: Int64, options: PlaybackOptions)
        case stop(id: UInt64)
        case fadeOut(id: UInt64, duration: Double, curve: Envelope.Curve)
        case volume(id: UInt64, Float, ramp: Double, curve: Envelope.Curve)
        case pan(id: UInt64, Float, ramp: Double)
    }

    private struct Shared {
        var commands: [Command] = []
        var handles: [UInt64: PlaybackHandle] = [:]
        var state: ConnectionState = .closed
        var statistics = PulseAudioOutput.Statistics()
        var readyWaiters: [DispatchSemaphore] = []
        var lastError: PlaybackError?
        /// Set by shutdown: the wake-up eventfd is closed, nothing may be queued.
        var closed = false
    }

    private enum ConnectionState { case closed, connecting, ready }

    private let shared = Mutex(Shared())
    private let mainloop: OpaquePointer
    /// The wake-up eventfd: API threads add 1 to it, the mainloop watches it. (An eventfd rather
    /// than a pipe: one descriptor, and a slightly shorter tail on the write that wakes the audio
    /// thread — which is nearly all of `play`'s p99; see the README's benchmark notes.)
    private let wakeFD: Int32
    private let loop: Loop

    init(configuration: PulseAudioOutput.Configuration) {
        self.configuration = configuration
        mainloop = pa_threaded_mainloop_new()!
        wakeFD = fbs_eventfd()
        precondition(wakeFD >= 0, "eventfd failed: \(String(cString: strerror(errno)))")
        loop = Loop(configuration: configuration)
        loop.core = self
        pa_threaded_mainloop_lock(mainloop)
        let api = pa_threaded_mainloop_get_api(mainloop)!
        loop.api = api
        let event = api.pointee.io_new(
            api, wakeFD, PA_IO_EVENT_INPUT,
            { _, _, fd, _, userdata in
                var drain = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
                while read(fd, &drain, MemoryLayout.size(ofValue: drain)) > 0 {}
                // The core outlives this event: shutdown() frees it before the core can go.
                Unmanaged<EngineCore>.fromOpaque(userdata!).takeUnretainedValue().service()
            }, Unmanaged.passUnretained(self).toOpaque())
        loop.wakeEvent = event
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_start(mainloop)
    }

    /// Disconnects, stops the audio thread and waits for it; every sound still playing ends
    /// `.failed(.outputClosed)`. Called once, by the facade's deinit, never on the audio thread.
    func shutdown() {
        shared.withLock { $0.closed = true }
        pa_threaded_mainloop_lock(mainloop)
        freeWakeEvent()
        loop.disconnect()
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_stop(mainloop)
        pa_threaded_mainloop_free(mainloop)
        // The eventfd stays open until deinit: a handle's stop() racing this shutdown may still
        // write to it (it holds the core for the call), and must not hit a reused descriptor.
        let handles = shared.withLock { shared in
            // Streams that were about to start would otherwise keep their feeders waiting forever.
            for case .start(_, .stream(let stream), _, _) in shared.commands { stream.cancel() }
            defer { shared.handles.removeAll() }
            return Array(shared.handles.values)
        }
        for handle in handles { handle.end(.failed(PlaybackError(.outputClosed))) }
    }

    deinit {
        close(wakeFD)
    }

    /// Called with the mainloop lock held (or on its thread).
    private func freeWakeEvent() {
        if let event = loop.wakeEvent, let api = loop.api { api.pointee.io_free(event) }
        loop.wakeEvent = nil
    }

    var statistics: PulseAudioOutput.Statistics { shared.withLock { $0.statistics } }

    /// Opens the connection now instead of on the first `play`, and waits up to `timeout` seconds
    /// for the stream to be ready.
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
        wake()
        if semaphore.wait(timeout: .now() + timeout) == .timedOut {
            shared.withLock { $0.readyWaiters.removeAll { $0 === semaphore } }
            throw PlaybackError(.serverUnavailable, detail: "no stream after \(timeout) s")
        }
        let error = shared.withLock { $0.state == .ready ? nil : $0.lastError }
        if let error { throw error }
    }

    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        guard buffer.sampleRate == configuration.sampleRate, buffer.frameCount > 0 else {
            let handle = PlaybackHandle(id: nextPlaybackID(), control: self, queue: queue, completion: completion)
            handle.end(.failed(PlaybackError(
                .unsupportedSound,
                detail: "the engine plays \(configuration.sampleRate) Hz buffers; this one is \(buffer.sampleRate) Hz")))
            return handle
        }
        return play(.buffer(buffer), offset: 0, options: options, queue: queue, completion: completion)
    }

    /// Starts a voice `offset` frames into `source` (a seek), which must be at the engine rate.
    /// A stream source is cancelled (its feeder stops) when the voice ends, however it ends.
    func play(
        _ source: VoiceSource, offset: Int64, options: PlaybackOptions, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        let id = nextPlaybackID()
        let handle = PlaybackHandle(id: id, control: self, queue: queue, completion: completion)
        let accepted = shared.withLock { shared in
            guard !shared.closed else { return false }
            shared.handles[id] = handle
            shared.commands.append(.start(id: id, source: source, offset: offset, options: options))
            return true
        }
        guard accepted else {
            if case .stream(let stream) = source { stream.cancel() }
            handle.end(.failed(PlaybackError(.outputClosed)))
            return handle
        }
        wake()
        return handle
    }

    func stop(_ id: UInt64) {
        enqueue(.stop(id: id))
    }

    func setVolume(_ id: UInt64, _ volume: Float, ramp: Double, curve: Envelope.Curve) {
        enqueue(.volume(id: id, volume, ramp: ramp, curve: curve))
    }

    func fadeOut(_ id: UInt64, duration: Double, curve: Envelope.Curve) {
        enqueue(.fadeOut(id: id, duration: duration, curve: curve))
    }

    func setPan(_ id: UInt64, _ pan: Float, ramp: Double) {
        enqueue(.pan(id: id, pan, ramp: ramp))
    }

    private func enqueue(_ command: Command) {
        let open = shared.withLock { shared in
            guard !shared.closed else { return false }
            shared.commands.append(command)
            return true
        }
        if open { wake() }
    }

    /// Wakes the mainloop (the eventfd's counter cannot overflow in practice; EAGAIN would mean it
    /// is due to wake anyway).
    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
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
                loop.connect()
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
        let now = loop.estimatedReadFrame()
        let rate = Double(configuration.sampleRate)
        for command in drained {
            switch command {
            case .start(let id, let source, let offset, let options):
                guard shared.withLock({ $0.handles[id] != nil }) else {
                    if case .stream(let stream) = source { stream.cancel() }
                    continue
                }
                let fadeFrames = Int64(options.fadeIn * rate)
                var gain = Envelope(options.fadeIn > 0 ? 0 : options.volume)
                if options.fadeIn > 0 { gain.ramp(at: now, to: options.volume, over: fadeFrames, curve: options.fadeCurve) }
                if let replaced = options.replacing, loop.voices.contains(where: { $0.id == replaced }) {
                    loop.modify(replaced, at: now) { $0.stop(at: now, ramp: fadeFrames, curve: options.fadeCurve) }
                    loop.stopping.insert(replaced)
                }
                loop.voices.append(
                    Voice(id: id, source: source, start: now, offset: offset, playCount: options.playCount, gain: gain,
                          pan: Envelope(min(1, max(-1, options.pan)))))
            case .stop(let id):
                loop.modify(id, at: now) { $0.stop(at: now, ramp: Int64(0.0025 * rate)) }
            case .fadeOut(let id, let duration, let curve):
                if loop.voices.contains(where: { $0.id == id }) {
                    loop.modify(id, at: now) { $0.stop(at: now, ramp: Int64(duration * rate), curve: curve) }
                    loop.stopping.insert(id)
                }
            case .volume(let id, let volume, let ramp, let curve):
                // A voice fading out to a stop keeps its ramp: a level change would undo the fade
                // and leave a cut where it was to end.
                if loop.stopping.contains(id) { continue }
                loop.modify(id, at: now) { $0.gain.ramp(at: now, to: volume, over: Int64(ramp * rate), curve: curve) }
            case .pan(let id, let pan, let ramp):
                loop.modify(id, at: now) { $0.pan.ramp(at: now, to: pan, over: Int64(ramp * rate)) }
            }
        }
        if loop.rewrite(from: now) {
            shared.withLock { $0.statistics.rewrites += 1 }
        }
        loop.scheduleTick()
    }

    fileprivate func streamBecameReady(rewrites: Bool) {
        let waiters = shared.withLock { shared -> [DispatchSemaphore] in
            shared.state = .ready
            shared.statistics.rewritesEnabled = rewrites
            defer { shared.readyWaiters.removeAll() }
            return shared.readyWaiters
        }
        waiters.forEach { $0.signal() }
        applyCommands()
    }

    /// The connection closed. With an error (the server went away, refused us, or could not be
    /// reached), every sound playing or waiting fails. Without one (closed when idle), nothing was
    /// playing; a play that raced with the close opens a new connection.
    fileprivate func connectionEnded(_ error: PlaybackError?) {
        let (failed, waiters, reopen) = shared.withLock { shared -> ([PlaybackHandle], [DispatchSemaphore], Bool) in
            shared.state = .closed
            shared.lastError = error
            if error != nil {
                // Streams that will now never start would keep their feeders waiting forever.
                for case .start(_, .stream(let stream), _, _) in shared.commands { stream.cancel() }
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

    fileprivate func voiceEnded(_ id: UInt64, _ end: PlaybackEnd) {
        let handle = shared.withLock { $0.handles.removeValue(forKey: id) }
        // The voice is gone already: asking the output to stop it would only take a strong
        // reference to the output on its own thread, where it must never be released.
        handle?.end(end, stoppingVoice: false)
    }

    fileprivate func noteUnderflow() {
        shared.withLock { $0.statistics.underflows += 1 }
    }

    fileprivate var hasPendingWork: Bool {
        shared.withLock { !$0.commands.isEmpty || !$0.handles.isEmpty }
    }

    // MARK: -

    /// The PulseAudio objects and the timeline, owned by the mainloop thread.
    private final class Loop {
        let configuration: PulseAudioOutput.Configuration
        /// The core that owns this loop; it outlives every callback (shutdown disconnects them first).
        unowned(unsafe) var core: EngineCore!
        var api: UnsafeMutablePointer<pa_mainloop_api>!
        var context: OpaquePointer?
        var stream: OpaquePointer?
        var tick: OpaquePointer?
        /// The watch on the wake-up eventfd; freed before the output goes, so that the loop never calls
        /// back into a released output.
        var wakeEvent: OpaquePointer?
        var voices: [Voice] = []
        /// Voices fading out to a stop: at their end they report `.stopped`, not `.finished`.
        var stopping: Set<UInt64> = []
        /// Our timeline frame that the next in-order write starts at.
        var writeIndex: Int64 = 0
        /// The server's stream index minus ours, in frames (rewrites from the read pointer shift it).
        var serverOffset: Int64 = 0
        var rewritesEnabled = true
        var idleSince: Double?
        let scratchFrames: Int
        let scratch: UnsafeMutablePointer<Float>

        init(configuration: PulseAudioOutput.Configuration) {
            self.configuration = configuration
            scratchFrames = configuration.sampleRate
            scratch = .allocate(capacity: scratchFrames * 2)
            voices.reserveCapacity(1024)
        }

        deinit { scratch.deallocate() }

        var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
        var bytesPerFrame: Int64 { 8 }

        func connect() {
            let properties = pa_proplist_new()
            defer { pa_proplist_free(properties) }
            pa_proplist_sets(properties, "application.name", configuration.applicationName)
            pa_proplist_sets(properties, "media.role", configuration.mediaRole)
            context = pa_context_new_with_proplist(api, configuration.applicationName, properties)
            guard let context else { return core.connectionEnded(PlaybackError(.serverUnavailable)) }
            pa_context_set_state_callback(context, { context, userdata in
                let loop = Unmanaged<Loop>.fromOpaque(userdata!).takeUnretainedValue()
                loop.contextStateChanged(pa_context_get_state(context))
            }, userdata)
            if pa_context_connect(context, configuration.server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
                fail(.serverUnavailable)
            }
        }

        func contextStateChanged(_ state: pa_context_state_t) {
            switch state {
            case PA_CONTEXT_READY:
                pa_operation_unref(pa_context_get_server_info(context, { _, info, userdata in
                    let loop = Unmanaged<Loop>.fromOpaque(userdata!).takeUnretainedValue()
                    let name = info.map { String(cString: $0.pointee.server_name) } ?? ""
                    loop.openStream(rewrites: !SoundServerInfo.isPipeWire(serverName: name))
                }, userdata))
            case PA_CONTEXT_FAILED:
                fail(stream == nil ? .serverUnavailable : .connectionLost)
            case PA_CONTEXT_TERMINATED:
                break
            default:
                break
            }
        }

        func openStream(rewrites: Bool) {
            rewritesEnabled = rewrites
            let rate = configuration.sampleRate
            var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(rate), channels: 2)
            let properties = pa_proplist_new()
            defer { pa_proplist_free(properties) }
            pa_proplist_sets(properties, "media.role", configuration.mediaRole)
            pa_proplist_sets(properties, "media.name", "FeedbackServices engine")
            stream = pa_stream_new_with_proplist(context, "FeedbackServices engine", &spec, nil, properties)
            guard let stream else { return fail(.serverUnavailable) }
            pa_stream_set_state_callback(stream, { stream, userdata in
                let loop = Unmanaged<Loop>.fromOpaque(userdata!).takeUnretainedValue()
                loop.streamStateChanged(pa_stream_get_state(stream))
            }, userdata)
            pa_stream_set_write_callback(stream, { _, bytes, userdata in
                Unmanaged<Loop>.fromOpaque(userdata!).takeUnretainedValue().fill(bytes: bytes)
            }, userdata)
            pa_stream_set_underflow_callback(stream, { _, userdata in
                Unmanaged<Loop>.fromOpaque(userdata!).takeUnretainedValue().core.noteUnderflow()
            }, userdata)
            let queued = rewrites ? configuration.bufferDuration : min(configuration.bufferDuration, 0.02)
            let frameBytes = UInt32(bytesPerFrame)
            let target = UInt32(queued * Double(rate)) * frameBytes
            var attributes = pa_buffer_attr(
                maxlength: UInt32.max, tlength: target, prebuf: UInt32.max,
                minreq: UInt32(0.005 * Double(rate)) * frameBytes, fragsize: UInt32.max)
            let flags = pa_stream_flags_t(
                rawValue: PA_STREAM_INTERPOLATE_TIMING.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue
                    | PA_STREAM_NOT_MONOTONIC.rawValue)
            writeIndex = 0
            serverOffset = 0
            if pa_stream_connect_playback(stream, nil, &attributes, flags, nil, nil) < 0 {
                fail(.serverUnavailable)
            }
        }

        func streamStateChanged(_ state: pa_stream_state_t) {
            switch state {
            case PA_STREAM_READY:
                idleSince = nil
                core.streamBecameReady(rewrites: rewritesEnabled)
            case PA_STREAM_FAILED:
                fail(.serverUnavailable)
            default:
                break
            }
        }

        /// The server asks for `bytes` more: render the next part of the timeline.
        func fill(bytes: Int) {
            guard let stream else { return }
            var remaining = bytes / Int(bytesPerFrame)
            while remaining > 0 {
                let frames = min(remaining, scratchFrames)
                renderAndWrite(stream, from: writeIndex, frames: frames, seek: PA_SEEK_RELATIVE)
                writeIndex += Int64(frames)
                remaining -= frames
            }
            retireVoices()
        }

        /// Re-renders from `frame` to the write position and writes it at the server's read pointer.
        /// - Returns: whether anything was rewritten.
        func rewrite(from frame: Int64) -> Bool {
            guard let stream, rewritesEnabled, frame < writeIndex else { return false }
            var start = frame
            var seek = PA_SEEK_RELATIVE_ON_READ
            while start < writeIndex {
                let frames = min(Int(writeIndex - start), scratchFrames)
                renderAndWrite(stream, from: start, frames: frames, seek: seek)
                seek = PA_SEEK_RELATIVE
                start += Int64(frames)
            }
            // The write landed at the server's real read index; learn where that was on our timeline.
            pa_operation_unref(pa_stream_update_timing_info(stream, { stream, success, userdata in
                guard success != 0, let info = pa_stream_get_timing_info(stream), info.pointee.write_index_corrupt == 0
                else { return }
                let loop = Unmanaged<Loop>.fromOpaque(userdata!).takeUnretainedValue()
                loop.serverOffset = info.pointee.write_index / loop.bytesPerFrame - loop.writeIndex
            }, userdata))
            return true
        }

        private func renderAndWrite(_ stream: OpaquePointer, from start: Int64, frames: Int, seek: pa_seek_mode_t) {
            voices.withUnsafeBufferPointer { voices in
                Mixer.render(voices, from: start, frameCount: frames, into: scratch)
            }
            pa_stream_write(stream, scratch, frames * Int(bytesPerFrame), nil, 0, seek)
        }

        /// Where the server is reading now, on our timeline (extrapolated from the last timing
        /// update); the write position if that is unknown.
        func estimatedReadFrame() -> Int64 {
            guard let stream, let info = pa_stream_get_timing_info(stream), info.pointee.read_index_corrupt == 0 else {
                return writeIndex
            }
            var now = timeval()
            gettimeofday(&now, nil)
            let stamp = info.pointee.timestamp
            let elapsed = Double(now.tv_sec - stamp.tv_sec) + Double(now.tv_usec - stamp.tv_usec) * 1e-6
            let serverRead = info.pointee.read_index / bytesPerFrame
                + Int64(max(0, elapsed) * Double(configuration.sampleRate))
            let ours = serverRead - serverOffset
            let queued = Int64(configuration.bufferDuration * Double(configuration.sampleRate))
            return min(writeIndex, max(writeIndex - queued, ours))
        }

        /// The last frame the server has played, on our timeline.
        func playedFrame() -> Int64? {
            guard let stream else { return nil }
            var usec: pa_usec_t = 0
            guard pa_stream_get_time(stream, &usec) == 0 else { return nil }
            return Int64(usec) * Int64(configuration.sampleRate) / 1_000_000 - serverOffset
        }

        /// Changes a voice from `now` on. What only shaped frames more than a queue's length
        /// before `now` is dropped, so envelopes stay short however often they change: rewrites
        /// start at the read position, which never goes back that far.
        func modify(_ id: UInt64, at now: Int64, _ change: (inout Voice) -> Void) {
            guard let index = voices.firstIndex(where: { $0.id == id }) else { return }
            change(&voices[index])
            let settled = now - Int64(configuration.bufferDuration * Double(configuration.sampleRate))
            voices[index].gain.forget(before: settled)
            voices[index].pan.forget(before: settled)
        }

        /// Completes voices whose last sample has been played, and drops stopped ones once their
        /// ramp has passed.
        func retireVoices() {
            guard let played = playedFrame() else { return }
            var index = 0
            while index < voices.count {
                if voices[index].end <= played {
                    let voice = voices.remove(at: index)
                    if case .stream(let stream) = voice.source { stream.cancel() }
                    let wasStopping = stopping.remove(voice.id) != nil
                    core.voiceEnded(voice.id, wasStopping ? .stopped : .finished)
                } else {
                    index += 1
                }
            }
        }

        /// While sounds play, checks every 5 ms for finished ones; when idle long enough, closes.
        func scheduleTick() {
            guard tick == nil, let context else { return }
            tick = pa_context_rttime_new(context, pa_rtclock_now() + 5_000, { api, event, _, userdata in
                let loop = Unmanaged<Loop>.fromOpaque(userdata!).takeUnretainedValue()
                api!.pointee.time_free(event)
                loop.tick = nil
                loop.onTick()
            }, userdata)
        }

        func onTick() {
            retireVoices()
            let now = monotonicSeconds()
            if voices.isEmpty && !core.hasPendingWork {
                if let idleSince, now - idleSince >= configuration.idleTimeout {
                    disconnect()
                    core.connectionEnded(nil)
                    return
                }
                if idleSince == nil { idleSince = now }
            } else {
                idleSince = nil
            }
            scheduleTick()
        }

        func fail(_ reason: PlaybackError.Reason) {
            let detail = context.map { String(cString: pa_strerror(pa_context_errno($0))) }
            disconnect()
            core.connectionEnded(PlaybackError(reason, detail: detail))
        }

        func disconnect() {
            if let tick {
                api.pointee.time_free(tick)
                self.tick = nil
            }
            if let stream {
                pa_stream_set_state_callback(stream, nil, nil)
                pa_stream_set_write_callback(stream, nil, nil)
                pa_stream_set_underflow_callback(stream, nil, nil)
                pa_stream_disconnect(stream)
                pa_stream_unref(stream)
                self.stream = nil
            }
            if let context {
                pa_context_set_state_callback(context, nil, nil)
                pa_context_disconnect(context)
                pa_context_unref(context)
                self.context = nil
            }
            for voice in voices {
                if case .stream(let stream) = voice.source { stream.cancel() }
            }
            voices.removeAll(keepingCapacity: true)
            stopping.removeAll()
            idleSince = nil
        }
    }
}

private let playbackIDs = Atomic<UInt64>(1)

/// A process-wide unique play number.
package func nextPlaybackID() -> UInt64 {
    playbackIDs.wrappingAdd(1, ordering: .relaxed).oldValue
}

/// CLOCK_MONOTONIC in seconds.
package func monotonicSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}
