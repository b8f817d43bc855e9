internal import CFeedbackShims
internal import CPipeWire
import Glibc
import Synchronization

/// The machinery behind `PipeWireOutput`: a `pw_thread_loop` (the loop thread: connecting, stream
/// and core events, completions, the idle and stall timer) and one playback `pw_stream` whose
/// process callback runs on PipeWire's data thread (real-time where the system allows it) and
/// renders the timeline there.
///
/// Hand-offs, neither of which ever waits on the real-time side:
/// - API threads → data thread: commands in `core.requests` (the `EngineCore` every live output
///   shares), taken with a try-lock (busy means "next quantum") and swapped with an emptied array
///   of the same capacity.
/// - data thread → loop thread: the voices the graph has played, appended to `shared.ended` under
///   a try-lock (kept in `pendingEnds` when it is busy), and the voices placed with when they are
///   heard (`shared.onsets`, `pendingOnsets`), then the loop's event source is signalled (one
///   eventfd write).
final class PipeWireEngine: QueuedEngine, @unchecked Sendable {
    // Locking rule: `core` and `shared` are behind Mutexes. The PipeWire objects (`context`,
    // `pwCore`, `stream`, the hooks, the sources) and `state`-machine fields marked "loop thread"
    // are touched only on the thread loop's thread or with `pw_thread_loop_lock` held (init and
    // shutdown). The fields
    // marked "data thread" are touched only in the process callback, or on the loop thread while
    // no stream exists (before `pw_stream_connect`, after `pw_stream_destroy`, which waits for the
    // data thread to let go of the stream). That is what makes this class `@unchecked Sendable`.

    let configuration: PipeWireOutput.Configuration

    /// The plays and commands API threads queue, the connection's state and the statistics.
    let core = EngineCore()

    /// What the data thread hands the loop thread.
    private struct Shared {
        var ended: [(id: UInt64, end: PlaybackEnd)] = []
        /// Voices placed, and when their first frame reaches the device (CLOCK_MONOTONIC s).
        var onsets: [(id: UInt64, time: Double)] = []
    }

    private let shared: Lock<Shared>

    // Loop thread.
    private let threadLoop: OpaquePointer
    private let loop: UnsafeMutablePointer<pw_loop>
    private let context: OpaquePointer
    private var pwCore: OpaquePointer?
    private var stream: OpaquePointer?
    private let coreListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let streamListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private var wakeSource: UnsafeMutablePointer<spa_source>!
    private var timerSource: UnsafeMutablePointer<spa_source>!
    /// The stall watchdog (on when the graph last asked for audio) and the idle close.
    private var watch: EngineWatch
    private var wasStreaming = false
    /// A failure a stream or core callback reported: handled by `service()`, outside the callback,
    /// because destroying the stream or the core from inside its own event crashes libpipewire.
    private var reportedFailure: PlaybackError?

    // Data thread.
    private var timeline: Timeline
    /// The timeline frame the next buffer starts at.
    private var cursor: Int64 = 0
    private var drained: [Timeline.Command] = []
    private var pendingEnds: [(id: UInt64, end: PlaybackEnd)] = []
    private var pendingOnsets: [(id: UInt64, time: Double)] = []
    /// What the loop thread reads of the data thread: voices on the timeline, when the process
    /// callback last ran (CLOCK_MONOTONIC ns), the last quantum, the thread's scheduling, xruns.
    private let voiceCount = Atomic<Int>(0)
    private let lastProcess = Atomic<UInt64>(0)
    private let quantum = Atomic<Int>(0)
    /// The data thread's policy (`fbs_sched_policy`; -1 until the callback first ran) and its
    /// priority, stored before the policy (release) and read after it (acquire).
    private let policy = Atomic<Int>(-1)
    private let priority = Atomic<Int>(0)
    private let xruns = Atomic<Int>(0)
    private let heldFinishes = Atomic<Int>(0)
    /// Whether the loop thread has looked at the data thread's policy (loop thread).
    private var schedulingChecked = false
    /// Whether the line about a data thread without real-time scheduling was written: once per process.
    private static let notRealTimeSaid = Atomic<Bool>(false)

    /// Polls for idleness, the connect timeout and a stalled graph while connected.
    private static let tick: UInt64 = 50_000_000

    private static let initialised: Bool = {
        pw_init(nil, nil)
        return true
    }()

    /// The stream's and the core's callbacks: C function pointers, with the engine as their data.
    nonisolated(unsafe) private static let streamEvents: UnsafeMutablePointer<pw_stream_events> = {
        let events = UnsafeMutablePointer<pw_stream_events>.allocate(capacity: 1)
        events.initialize(to: pw_stream_events())
        events.pointee.version = UInt32(PW_VERSION_STREAM_EVENTS)
        events.pointee.process = { data in
            Unmanaged<PipeWireEngine>.fromOpaque(data!).takeUnretainedValue().process()
        }
        events.pointee.state_changed = { data, _, state, _ in
            Unmanaged<PipeWireEngine>.fromOpaque(data!).takeUnretainedValue().streamStateChanged(state)
        }
        return events
    }()

    nonisolated(unsafe) private static let coreEvents: UnsafeMutablePointer<pw_core_events> = {
        let events = UnsafeMutablePointer<pw_core_events>.allocate(capacity: 1)
        events.initialize(to: pw_core_events())
        events.pointee.version = UInt32(PW_VERSION_CORE_EVENTS)
        events.pointee.error = { data, id, _, result, message in
            // -EPIPE on the core: the daemon went away.
            guard id == fb_pw_id_core, result == -EPIPE else { return }
            let engine = Unmanaged<PipeWireEngine>.fromOpaque(data!).takeUnretainedValue()
            engine.report(PlaybackError(.connectionLost, detail: message.map { String(cString: $0) }))
        }
        return events
    }()

    init(configuration: PipeWireOutput.Configuration) {
        _ = Self.initialised
        self.configuration = configuration
        var initial = Shared()
        initial.ended.reserveCapacity(256)
        initial.onsets.reserveCapacity(256)
        shared = Lock(initial)
        drained.reserveCapacity(256)
        pendingEnds.reserveCapacity(256)
        pendingOnsets.reserveCapacity(256)
        timeline = Timeline(sampleRate: configuration.sampleRate, history: 0, capacity: 1024)
        watch = EngineWatch(idleTimeout: configuration.idleTimeout)
        threadLoop = pw_thread_loop_new("feedbackservices-pw", nil)!
        loop = pw_thread_loop_get_loop(threadLoop)!
        pw_thread_loop_lock(threadLoop)
        context = Self.newContext(loop)
        let data = Unmanaged.passUnretained(self).toOpaque()
        wakeSource = fb_pw_loop_add_event(loop, { data, _ in
            Unmanaged<PipeWireEngine>.fromOpaque(data!).takeUnretainedValue().service()
        }, data)
        timerSource = fb_pw_loop_add_timer(loop, { data, _ in
            Unmanaged<PipeWireEngine>.fromOpaque(data!).takeUnretainedValue().onTick()
        }, data)
        pw_thread_loop_unlock(threadLoop)
        pw_thread_loop_start(threadLoop)
    }

    /// module-rt's default priority for the data thread, which the context makes `SCHED_FIFO`.
    static let realTimePriority: Int32 = 88

    /// The context the stream connects through. Where the process may make a thread `SCHED_FIFO`
    /// itself (root, `CAP_SYS_NICE`, `RLIMIT_RTPRIO`), no configuration file is read and only the
    /// three modules a stream needs are loaded (the native protocol, client-node, the adapter),
    /// then the data thread that runs the process callback is made `SCHED_FIFO` at
    /// `realTimePriority` — what module-rt would do there. That module links libdbus-1, which
    /// brings libsystemd, libgcrypt and four compressors, and the context's D-Bus support loads
    /// it too: with client-rt.conf's seven modules, 2.4 ms of a new process's 21 ms to its first
    /// sample on this project's machine, against 0.8 ms. Elsewhere the process needs
    /// RTKit on D-Bus for that priority, and gets client-rt.conf, as `pw-play` does: module-rt
    /// installs its thread utilities on the context before the context starts that thread. The
    /// stream's properties are all the output's own, so nothing a client configuration file (or
    /// its `.conf.d`) could add to them is lost by not reading one.
    private static func newContext(_ loop: UnsafeMutablePointer<pw_loop>) -> OpaquePointer {
        if fbs_may_schedule_fifo(realTimePriority) == 1 {
            let properties = fb_pw_properties_new()
            pw_properties_set(properties, "config.name", "null")
            pw_properties_set(properties, "support.dbus", "false")
            // As client-rt.conf has it: libpipewire's warnings (no modules in the configuration,
            // no real-time thread utilities: both by design here) stay off the program's stderr.
            pw_properties_set(properties, "log.level", "0")
            let context = pw_context_new(loop, properties, 0)!
            pw_context_add_spa_lib(context, "audio.convert.*", "audioconvert/libspa-audioconvert")
            pw_context_add_spa_lib(context, "support.*", "support/libspa-support")
            let modules: [String] = ["libpipewire-module-protocol-native", "libpipewire-module-client-node", "libpipewire-module-adapter"]
            let loaded = modules.allSatisfy { pw_context_load_module(context, $0, nil, nil) != nil }
            if loaded, let dataLoop = pw_context_get_data_loop(context), let thread = pw_data_loop_get_thread(dataLoop) {
                _ = fbs_schedule_fifo(pthread_t(UInt(bitPattern: thread)), realTimePriority)
                return context
            }
            pw_context_destroy(context)
        }
        let properties = fb_pw_properties_new()
        pw_properties_set(properties, "config.name", "client-rt.conf")
        return pw_context_new(loop, properties, 0)!
    }

    /// Disconnects, stops the loop thread and waits for it; every sound still playing ends
    /// `.failed(.outputClosed)`. Called once, by the facade's deinit.
    func shutdown() {
        core.closed(with: nil, closing: true)
        pw_thread_loop_lock(threadLoop)
        disconnect()
        fb_pw_loop_destroy_source(loop, wakeSource)
        fb_pw_loop_destroy_source(loop, timerSource)
        pw_thread_loop_unlock(threadLoop)
        pw_thread_loop_stop(threadLoop)
        pw_context_destroy(context)
        pw_thread_loop_destroy(threadLoop)
        coreListener.deallocate()
        streamListener.deallocate()
        core.closed(with: PlaybackError(.outputClosed))
    }

    var statistics: EngineStatistics {
        var statistics = core.statistics
        statistics.quantum = quantum.load(ordering: .relaxed)
        statistics.streamThread = streamThread
        statistics.underflows = xruns.load(ordering: .relaxed)
        statistics.heldFinishes = heldFinishes.load(ordering: .relaxed)
        return statistics
    }

    /// How the data thread was scheduled when the process callback first ran; nil before.
    private var streamThread: PipeWireOutput.ThreadScheduling? {
        let policy = policy.load(ordering: .acquiring)
        guard policy >= 0 else { return nil }
        return .init(policy: Int32(policy), priority: Int32(priority.load(ordering: .relaxed)))
    }

    /// `PipeWireOutput.streamThreadScheduling()`: an engine that never connects, its context's
    /// data-loop thread asked how it is scheduled, on that thread.
    static func probeStreamThreadScheduling() -> PipeWireOutput.ThreadScheduling? {
        let engine = PipeWireEngine(configuration: .init())
        defer { engine.shutdown() }
        return engine.dataThreadScheduling()
    }

    /// Asks the context's data-loop thread for its scheduling, with a blocking invoke on that
    /// loop. Only while no stream exists: libpipewire lets one thread at a time queue invokes on
    /// the data loop, and a stream's own calls queue them from the loop thread.
    private func dataThreadScheduling() -> PipeWireOutput.ThreadScheduling? {
        struct Probe {
            let thread: pthread_t
            var policy: Int32 = -1
            var priority: Int32 = 0
        }
        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        guard stream == nil, let dataLoop = pw_context_get_data_loop(context),
            let thread = pw_data_loop_get_thread(dataLoop)
        else { return nil }
        var probe = Probe(thread: pthread_t(UInt(bitPattern: thread)))
        // Until the thread has entered its loop, an invoke runs on the caller instead: such an
        // answer is not taken, and the thread is asked again a millisecond later.
        for _ in 0..<500 {
            _ = pw_data_loop_invoke(dataLoop, { _, _, _, _, _, data in
                let probe = data!.assumingMemoryBound(to: Probe.self)
                guard pthread_equal(pthread_self(), probe.pointee.thread) != 0 else { return 0 }
                var priority: Int32 = 0
                probe.pointee.policy = fbs_sched_policy(&priority)
                probe.pointee.priority = priority
                return 0
            }, 0, nil, 0, true, &probe)
            if probe.policy >= 0 { return .init(policy: probe.policy, priority: probe.priority) }
            usleep(1_000)
        }
        return nil
    }

    /// Opens the connection and waits up to `timeout` seconds for the stream to stream.
    func prepare(timeout: Double) throws(PlaybackError) {
        try core.requests.prepare(
            timeout: timeout, timedOut: PlaybackError(.serverUnavailable, detail: "no PipeWire stream after \(timeout) s"),
            wake: wakeLoop)
    }

    var timelineRate: Int { configuration.sampleRate }

    /// The graph's delay says when the buffer being filled is played: each sound's onset is known.
    var reportsOnsets: Bool { true }

    /// After a play or a command was queued: connecting or streaming, the process callback takes
    /// it at the next quantum, so only a closed connection needs the loop woken (to open it). A
    /// close racing the play either finds the play queued (and reconnects) or is seen here.
    func wakeAudioThread() {
        if core.state == .closed { wakeLoop() }
    }

    private func wakeLoop() {
        fb_pw_loop_signal_event(loop, wakeSource)
    }

    // MARK: The data thread (real time: no allocation in the steady state, no waiting, no logging)

    private func process() {
        guard let stream else { return }
        let nanoseconds = MonotonicClock.nanoseconds
        let now = Double(nanoseconds) * 1e-9
        lastProcess.store(nanoseconds, ordering: .relaxed)
        if policy.load(ordering: .relaxed) < 0 {
            var threadPriority: Int32 = 0
            let threadPolicy = fbs_sched_policy(&threadPriority)
            priority.store(Int(threadPriority), ordering: .relaxed)
            policy.store(Int(threadPolicy), ordering: .releasing)
        }
        guard let buffer = pw_stream_dequeue_buffer(stream) else {
            xruns.add(1, ordering: .relaxed)
            return
        }
        let data = buffer.pointee.buffer.pointee.datas!
        guard let samples = data.pointee.data else {
            pw_stream_queue_buffer(stream, buffer)
            return
        }
        let stride = 2 * MemoryLayout<Float>.size
        var frames = Int(data.pointee.maxsize) / stride
        if buffer.pointee.requested > 0 { frames = min(frames, Int(buffer.pointee.requested)) }

        // What the graph has played: the frame now at the device is this buffer's first frame
        // minus what is still on its way (the graph's delay, the resampler's and our queue's).
        var time = pw_time()
        // Frames between the one at the device and this buffer's first (none known: none).
        var ahead: Int64 = 0
        if pw_stream_get_time_n(stream, &time, MemoryLayout<pw_time>.size) == 0, time.rate.denom > 0 {
            let delay = time.delay * Int64(time.rate.num) * Int64(configuration.sampleRate) / Int64(time.rate.denom)
            ahead = max(0, delay + Int64(time.buffered) + Int64(time.queued) / Int64(stride))
            // Never past what was rendered: a finish promises the last sample was played.
            let played = min(cursor, cursor - delay - Int64(time.buffered) - Int64(time.queued) / Int64(stride))
            pendingEnds.append(contentsOf: timeline.retire(playedUpTo: played, time: now))
            heldFinishes.store(timeline.heldFinishes, ordering: .relaxed)
        }
        if core.requests.takeCommandsIfAvailable(into: &drained), !drained.isEmpty {
            let heard = now + Double(ahead) / Double(configuration.sampleRate)
            for command in drained {
                if case .start(let id, _, _, _) = command, pendingOnsets.count < pendingOnsets.capacity {
                    pendingOnsets.append((id, heard))
                }
            }
            // Stamped after taking them: `now` was read before, and a play queued in between
            // would get a stamp from before its own call.
            timeline.apply(drained, at: cursor, time: MonotonicClock.now)
            drained.removeAll(keepingCapacity: true)
        }
        timeline.render(from: cursor, frames: frames, into: samples.assumingMemoryBound(to: Float.self))
        cursor += Int64(frames)
        let chunk = data.pointee.chunk!
        chunk.pointee.offset = 0
        chunk.pointee.stride = Int32(stride)
        chunk.pointee.size = UInt32(frames * stride)
        pw_stream_queue_buffer(stream, buffer)

        quantum.store(frames, ordering: .relaxed)
        voiceCount.store(timeline.voices.count, ordering: .relaxed)
        if !pendingEnds.isEmpty || !pendingOnsets.isEmpty,
            shared.withLockIfAvailable({ (shared: inout Shared) -> Void in
                shared.ended.append(contentsOf: pendingEnds)
                shared.onsets.append(contentsOf: pendingOnsets)
            }) != nil
        {
            pendingEnds.removeAll(keepingCapacity: true)
            pendingOnsets.removeAll(keepingCapacity: true)
            wakeLoop()
        }
    }

    // MARK: The loop thread

    /// Runs on the loop thread when an API thread or the data thread signalled it.
    private func service() {
        if let failure = reportedFailure {
            reportedFailure = nil
            if stream != nil || pwCore != nil { fail(failure.reason, detail: failure.detail) }
        }
        deliverEnds()
        if core.beginOpeningIfWanted() { connect() }
    }

    private func deliverEnds() {
        let (onsets, ended) = shared.withLock { shared -> ([(id: UInt64, time: Double)], [(id: UInt64, end: PlaybackEnd)]) in
            defer {
                shared.onsets.removeAll(keepingCapacity: true)
                shared.ended.removeAll(keepingCapacity: true)
            }
            return (shared.onsets.map { ($0.id, $0.time) }, shared.ended.map { ($0.id, $0.end) })
        }
        // Onsets first: a voice placed and ended within one hand-off still tells when it was heard.
        for (id, time) in onsets { core.requests.voicePlaced(id, heardAt: time) }
        for (id, end) in ended { core.requests.voiceEnded(id, end) }
    }

    /// Connects, once `core` has begun opening.
    private func connect() {
        watch.reset()
        watch.soundsBegan(at: MonotonicClock.now)
        wasStreaming = false
        let coreProperties = fb_pw_properties_new()
        // The client's own name too, not only its stream's: what `pactl list clients` and
        // `pw-cli` show (and what a test finds it by).
        pw_properties_set(coreProperties, "application.name", configuration.applicationName)
        if let remote = configuration.remote { pw_properties_set(coreProperties, "remote.name", remote) }
        // pw_context_connect takes the properties, whatever it returns.
        guard let pwCore = pw_context_connect(context, coreProperties, 0) else {
            return fail(.serverUnavailable, detail: "cannot connect to PipeWire: \(Errno.current)")
        }
        self.pwCore = pwCore
        coreListener.initialize(to: spa_hook())
        fb_pw_core_add_listener(pwCore, coreListener, Self.coreEvents, Unmanaged.passUnretained(self).toOpaque())

        let properties = fb_pw_properties_new()
        let rate = configuration.sampleRate
        for (key, value) in [
            ("media.type", "Audio"), ("media.category", "Playback"), ("media.role", configuration.mediaRole),
            ("media.name", "FeedbackServices engine"), ("application.name", configuration.applicationName),
            ("node.name", "feedbackservices"), ("node.latency", "\(configuration.latencyFrames)/\(rate)"),
            ("node.rate", "1/\(rate)"),
        ] {
            pw_properties_set(properties, key, value)
        }
        guard let stream = pw_stream_new(pwCore, "FeedbackServices engine", properties) else {
            return fail(.serverUnavailable, detail: "pw_stream_new failed: \(Errno.current)")
        }
        self.stream = stream
        streamListener.initialize(to: spa_hook())
        pw_stream_add_listener(stream, streamListener, Self.streamEvents, Unmanaged.passUnretained(self).toOpaque())
        cursor = 0
        var pod = [UInt8](repeating: 0, count: 1024)
        let result = pod.withUnsafeMutableBufferPointer { bytes -> Int32 in
            var parameters: [UnsafePointer<spa_pod>?] = [
                fb_pw_build_f32_stereo_format(bytes.baseAddress, UInt32(bytes.count), UInt32(rate))
            ]
            let flags = pw_stream_flags(
                rawValue: PW_STREAM_FLAG_AUTOCONNECT.rawValue | PW_STREAM_FLAG_MAP_BUFFERS.rawValue
                    | PW_STREAM_FLAG_RT_PROCESS.rawValue)
            return pw_stream_connect(stream, SPA_DIRECTION_OUTPUT, fb_pw_id_any, flags, &parameters, 1)
        }
        guard result >= 0 else {
            return fail(.serverUnavailable, detail: "pw_stream_connect failed: \(Errno(rawValue: -result))")
        }
        fb_pw_loop_arm_timer(loop, timerSource, Self.tick, Self.tick)
    }

    private func streamStateChanged(_ state: pw_stream_state) {
        switch state {
        case PW_STREAM_STATE_STREAMING:
            wasStreaming = true
            core.becameReady()
        case PW_STREAM_STATE_ERROR:
            report(PlaybackError(wasStreaming ? .connectionLost : .serverUnavailable, detail: stream.map { stream in
                var error: UnsafePointer<CChar>?
                _ = pw_stream_get_state(stream, &error)
                return error.map { String(cString: $0) } ?? ""
            }))
        case PW_STREAM_STATE_UNCONNECTED:
            if wasStreaming { report(PlaybackError(.connectionLost, detail: "the stream was disconnected")) }
        default:
            break
        }
    }

    private func onTick() {
        deliverEnds()
        let now = MonotonicClock.now
        switch core.state {
        case .closed:
            return
        case .opening:
            if core.isOpeningOverdue(now: now) {
                fail(.serverUnavailable, detail: "no stream within \(EngineTimeouts.open) s")
            }
        case .ready:
            checkScheduling()
            let playing = voiceCount.load(ordering: .relaxed) > 0
            watch.progressed(at: Double(lastProcess.load(ordering: .relaxed)) * 1e-9)
            if playing && watch.isStalled(at: now) {
                return fail(.serverStalled, detail: "the graph did not ask for audio for \(EngineTimeouts.stall) s")
            }
            if watch.idleTimeLeft(idle: !playing && !core.requests.hasPendingWork, at: now) == 0 {
                disconnect()
                connectionEnded(nil)
            }
        }
    }

    /// Once the process callback has run: a data thread without real-time scheduling is said in
    /// one line on standard error (once per process); the output plays on regardless.
    private func checkScheduling() {
        guard !schedulingChecked, let scheduling = streamThread else { return }
        schedulingChecked = true
        guard !scheduling.isRealTime, !Self.notRealTimeSaid.exchange(true, ordering: .relaxed) else { return }
        let line = "feedbackservices: PipeWire's stream thread is \(scheduling): libpipewire-module-rt did not "
            + "raise it (it needs CAP_SYS_NICE, RLIMIT_RTPRIO of at least 11, or RTKit); sounds may break up "
            + "when the machine is busy\n"
        Array(line.utf8).withUnsafeBytes { bytes in _ = try? System.writeAll(2, bytes) }
    }

    /// Notes a failure from inside a libpipewire callback and has the loop handle it next.
    private func report(_ failure: PlaybackError) {
        if reportedFailure == nil { reportedFailure = failure }
        wakeLoop()
    }

    /// Closes the connection and fails every play with `reason`.
    private func fail(_ reason: PlaybackError.Reason, detail: String?) {
        deliverEnds()
        disconnect()
        connectionEnded(PlaybackError(reason, detail: detail))
    }

    private func disconnect() {
        fb_pw_loop_arm_timer(loop, timerSource, 0, 0)
        if let stream {
            spa_hook_remove(streamListener)
            pw_stream_destroy(stream)
            self.stream = nil
        }
        if let pwCore {
            spa_hook_remove(coreListener)
            pw_core_disconnect(pwCore)
            self.pwCore = nil
        }
        reportedFailure = nil
        // No stream: the data thread's fields are ours now.
        timeline.removeAll()
        pendingEnds.removeAll(keepingCapacity: true)
        pendingOnsets.removeAll(keepingCapacity: true)
        drained.removeAll(keepingCapacity: true)
        voiceCount.store(0, ordering: .relaxed)
        watch.reset()
        wasStreaming = false
    }

    /// The connection closed. With an error, every sound playing or waiting fails; without one
    /// (closed when idle), nothing was playing, and a play that raced with the close reopens it.
    private func connectionEnded(_ error: PlaybackError?) {
        // Failed below, every one of them: ends not yet delivered are moot.
        if error != nil { shared.withLock { $0.ended.removeAll(keepingCapacity: true) } }
        if core.closed(with: error) { service() }
    }
}
