internal import CPulse
import Glibc

/// The engine's PulseAudio objects (context, stream, timers) and its timeline, owned by the
/// mainloop thread: the callbacks that fill the stream, rewrite its queued audio, retire the
/// voices that have been played, and notice a server that stopped answering.
///
/// Faults. A voice is retired `.finished` only when the server's own timing report puts its read
/// position, less the sink's latency, past the voice's last frame (`retireVoices`), never on
/// libpulse's interpolated clock, which runs on while the server is stopped and can run ahead of
/// it while it plays. A healthy server reads the stream continuously (silence included), so while sounds
/// play a read position that has stood still for `EngineTimeouts.stall` means the server hung
/// (`EngineWatch`): every play fails `.serverStalled` and the connection closes (the next play
/// connects again). A connection that is not ready within `EngineTimeouts.open` fails
/// `.serverUnavailable`.
///
/// Thread safety: none of its own. It is touched only on the mainloop thread, or while holding
/// `pa_threaded_mainloop_lock` (see `PulseAudioEngine`'s locking rule).
final class PulseAudioConnection {
    let configuration: PulseAudioOutput.Configuration
    /// The engine that owns this connection; it outlives every callback (shutdown disconnects them
    /// first).
    unowned(unsafe) var engine: PulseAudioEngine!
    var api: UnsafeMutablePointer<pa_mainloop_api>!
    var context: OpaquePointer?
    var stream: OpaquePointer?
    var tick: OpaquePointer?
    /// When `tick` fires (pa_rtclock microseconds).
    var tickDeadline: pa_usec_t = 0
    /// Ends a connection attempt that is not ready in time (`EngineTimeouts.open`).
    var connectTimer: OpaquePointer?
    /// The watch on the wake-up eventfd; freed before the output goes, so that the mainloop never
    /// calls back into a released output.
    var wakeEvent: OpaquePointer?
    var timeline: Timeline
    /// Our timeline frame that the next in-order write starts at.
    var writeIndex: Int64 = 0
    /// The server's stream index minus ours, in frames (rewrites from the read pointer shift it).
    var serverOffset: Int64 = 0
    /// Rewrites whose timing reports, which say where they landed (and so correct
    /// `serverOffset`), are still outstanding: until then a read position maps onto our timeline
    /// by an old offset, which can put it past where the server really is, so no voice is retired
    /// (`retireVoices`).
    var pendingOffsets = 0
    /// When this stream's first audio was written (CLOCK_MONOTONIC seconds): the write that fills
    /// its prebuffer, from which the server reads at once. Until the server first reports its read
    /// position, that position is the time since then.
    var firstWriteTime: Double?
    var rewritesEnabled = true
    /// The stall watchdog (on the server's reported read index) and the idle close.
    var watch: EngineWatch
    /// When the last timing report arrived, and whether one we asked for is still outstanding.
    var timingTime: Double?
    var timingRequested = false
    /// When the last tick ran: a late one means this thread did not run (see `onTick`).
    var lastTickTime: Double?
    let scratchFrames: Int
    let scratch: UnsafeMutablePointer<Float>

    init(configuration: PulseAudioOutput.Configuration) {
        self.configuration = configuration
        watch = EngineWatch(idleTimeout: configuration.idleTimeout)
        scratchFrames = configuration.sampleRate
        scratch = .allocate(capacity: scratchFrames * 2)
        // Rewrites start at the read position, never more than a queue's length back.
        timeline = Timeline(
            sampleRate: configuration.sampleRate,
            history: Int64(configuration.bufferDuration * Double(configuration.sampleRate)), capacity: 1024)
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
        guard let context else { return engine.connectionEnded(PlaybackError(.serverUnavailable)) }
        pa_context_set_state_callback(context, { context, userdata in
            let connection = Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue()
            connection.contextStateChanged(pa_context_get_state(context))
        }, userdata)
        if pa_context_connect(context, configuration.server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            return fail(.serverUnavailable)
        }
        // libpulse waits for a server that accepted the socket but never answers for 30 s.
        let deadline = pa_rtclock_now() + pa_usec_t(EngineTimeouts.open * 1_000_000)
        connectTimer = pa_context_rttime_new(context, deadline, { api, event, _, userdata in
            let connection = Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue()
            api!.pointee.time_free(event)
            connection.connectTimer = nil
            connection.fail(
                .serverUnavailable, detail: "no answer within \(EngineTimeouts.open) s (the server may be hung)")
        }, userdata)
    }

    func contextStateChanged(_ state: pa_context_state_t) {
        switch state {
        case PA_CONTEXT_READY:
            // The stream is asked for at once, as a PulseAudio server wants it, rather than after
            // the server's name: one round trip fewer before the first sample. The
            // name still comes back first (a server answers in order), so on PipeWire's pulse
            // server, which does not honour rewrites, the stream is replaced by one with a short
            // in-order queue before either is ready.
            pa_operation_unref(pa_context_get_server_info(context, { _, info, userdata in
                let connection = Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue()
                let name = info.map { String(cString: $0.pointee.server_name) } ?? ""
                if SoundServerInfo.isPipeWire(serverName: name) { connection.openStream(rewrites: false) }
            }, userdata))
            openStream(rewrites: true)
        case PA_CONTEXT_FAILED:
            fail(stream == nil ? .serverUnavailable : .connectionLost)
        case PA_CONTEXT_TERMINATED:
            break
        default:
            break
        }
    }

    /// Opens the playback stream, replacing the one being opened if there is one.
    func openStream(rewrites: Bool) {
        closeStream()
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
            let connection = Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue()
            connection.streamStateChanged(pa_stream_get_state(stream))
        }, userdata)
        pa_stream_set_write_callback(stream, { _, bytes, userdata in
            Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue().fill(bytes: bytes)
        }, userdata)
        pa_stream_set_underflow_callback(stream, { _, userdata in
            Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue().engine.core.record { $0.underflows += 1 }
        }, userdata)
        // Called for every timing report: the automatic ones, ours, the rewrites'.
        pa_stream_set_latency_update_callback(stream, { _, userdata in
            Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue().timingReported()
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
        pendingOffsets = 0
        firstWriteTime = nil
        watch.reset()
        timingTime = nil
        timingRequested = false
        if pa_stream_connect_playback(stream, nil, &attributes, flags, nil, nil) < 0 {
            fail(.serverUnavailable)
        }
    }

    func streamStateChanged(_ state: pa_stream_state_t) {
        switch state {
        case PA_STREAM_READY:
            watch.soundsBegan(at: MonotonicClock.now)
            if let connectTimer {
                api.pointee.time_free(connectTimer)
                self.connectTimer = nil
            }
            engine.streamBecameReady(rewrites: rewritesEnabled)
        case PA_STREAM_FAILED:
            fail(.serverUnavailable)
        default:
            break
        }
    }

    /// The server asks for `bytes` more: render the next part of the timeline.
    ///
    /// A new stream with nothing to play is held: nothing is written, so the server does not start
    /// it (its prebuffer is the whole queue) and does not ask for more. The first sound then starts
    /// it (`startIfHeld`) with the sound itself at frame 0, as `paplay` starts its stream, instead
    /// of being rewritten over a queue of silence the server already plays, after the thread hops
    /// that bring it to this thread: for the first sound of a process, a service's first play, or
    /// the first after a reconnect. Idle, a held stream costs almost no wake-ups.
    func fill(bytes: Int) {
        guard let stream, firstWriteTime != nil || !timeline.isEmpty else { return }
        if firstWriteTime == nil { firstWriteTime = MonotonicClock.now }
        var remaining = bytes / Int(bytesPerFrame)
        while remaining > 0 {
            let frames = min(remaining, scratchFrames)
            renderAndWrite(stream, from: writeIndex, frames: frames, seek: PA_SEEK_RELATIVE)
            writeIndex += Int64(frames)
            remaining -= frames
        }
    }

    /// Starts a held stream (see `fill`) once its timeline has something to play: the whole queue
    /// the server asked for, from frame 0, in order.
    func startIfHeld() {
        guard let stream, firstWriteTime == nil, !timeline.isEmpty else { return }
        let writable = pa_stream_writable_size(stream)
        // (size_t)-1 on error; 0 before the server's first request, whose callback then fills.
        guard writable != 0, writable != .max else { return }
        fill(bytes: writable)
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
        // libpulse calls the latency callback (`timingReported`) for this report before this one,
        // so the voices it has played are retired here, by the corrected offset. The offset stays
        // as it was when the request cannot be made (nil: libpulse's slots for outstanding reports
        // are full, as on a hung server), the reply is an error, or its write index is unknown (a
        // later rewrite whose own request could not be made): until the next rewrite's report, and
        // a finish it puts early is held back by `Timeline.retire`. A stream replaced since (in
        // `openStream`) has its own offset: a report for the old one changes nothing.
        if let operation = pa_stream_update_timing_info(stream, { stream, success, userdata in
            let connection = Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue()
            guard stream == connection.stream else { return }
            connection.pendingOffsets = max(0, connection.pendingOffsets - 1)
            if success != 0, let info = pa_stream_get_timing_info(stream), info.pointee.write_index_corrupt == 0 {
                connection.serverOffset = info.pointee.write_index / connection.bytesPerFrame - connection.writeIndex
            }
            connection.retireVoices()
        }, userdata) {
            pa_operation_unref(operation)
            pendingOffsets += 1
        }
        return true
    }

    private func renderAndWrite(_ stream: OpaquePointer, from start: Int64, frames: Int, seek: pa_seek_mode_t) {
        timeline.render(from: start, frames: frames, into: scratch)
        pa_stream_write(stream, scratch, frames * Int(bytesPerFrame), nil, 0, seek)
    }

    /// The frame a change made now takes effect at, on our timeline: where the server is reading
    /// (extrapolated from its last timing report), so that a new sound is heard at once; or, on a
    /// server that does not honour rewrites, the write position, the first frame not yet sent.
    ///
    /// A stream just started has queued a whole buffer (its first sound, then silence) before the
    /// server first reports where it reads (that report is a round trip away, and one from before
    /// the start is stale). Taking the write position then would put a sound behind that queue;
    /// the read position is instead the time since the first write, when the server started
    /// reading. An error either way only moves where the rewrite, which lands at the server's real
    /// read pointer, maps onto our timeline; the report that follows the rewrite corrects
    /// `serverOffset`.
    func changeFrame() -> Int64 {
        guard rewritesEnabled else { return writeIndex }
        let rate = Double(configuration.sampleRate)
        let ours: Int64
        // A report from before the stream started (a held stream gets them too) says nothing about
        // where it reads now: its time since would count the wait as played.
        if let stream, let info = pa_stream_get_timing_info(stream), info.pointee.read_index_corrupt == 0,
            let timingTime, let firstWriteTime, timingTime >= firstWriteTime
        {
            var now = timeval()
            gettimeofday(&now, nil)
            let stamp = info.pointee.timestamp
            let elapsed = Double(now.tv_sec - stamp.tv_sec) + Double(now.tv_usec - stamp.tv_usec) * 1e-6
            ours = info.pointee.read_index / bytesPerFrame + Int64(max(0, elapsed) * rate) - serverOffset
        } else if let firstWriteTime {
            ours = Int64((MonotonicClock.now - firstWriteTime) * rate)
        } else {
            return writeIndex
        }
        let queued = Int64(configuration.bufferDuration * rate)
        return min(writeIndex, max(writeIndex - queued, ours))
    }

    /// When the frame `frame` of our timeline reaches the device (CLOCK_MONOTONIC seconds): the
    /// frames between it and where the server reads now (extrapolated from its last report, as in
    /// `changeFrame`), then the sink's latency from that report. A stream with no report since it
    /// started counts no frames ahead (its first sound starts it); with no report at all, no
    /// latency either: the frame is taken to be heard now.
    func heardTime(of frame: Int64) -> Double {
        let now = MonotonicClock.now
        guard let stream, let info = pa_stream_get_timing_info(stream), info.pointee.read_index_corrupt == 0 else { return now }
        let rate = Double(configuration.sampleRate)
        var ahead = 0.0
        if let timingTime, let firstWriteTime, timingTime >= firstWriteTime {
            var wall = timeval()
            gettimeofday(&wall, nil)
            let stamp = info.pointee.timestamp
            let elapsed = Double(wall.tv_sec - stamp.tv_sec) + Double(wall.tv_usec - stamp.tv_usec) * 1e-6
            let reading = info.pointee.read_index / bytesPerFrame + Int64(max(0, elapsed) * rate) - serverOffset
            ahead = Double(max(0, frame - reading)) / rate
        }
        return now + ahead + Double(info.pointee.sink_usec) * 1e-6
    }

    /// Where the server plays now, on our timeline, by libpulse's interpolated clock
    /// (`pa_stream_get_time`; with `PA_STREAM_INTERPOLATE_TIMING` that is libpulse's smoother). It
    /// only says when to ask the server (`requestTimingIfDue`), never that a voice ended: before the
    /// smoother has its reports it returns the system time since the stream resumed, and after,
    /// its rate estimate, whatever the server did meanwhile.
    func interpolatedPlayedFrame() -> Int64? {
        guard let stream else { return nil }
        var usec: pa_usec_t = 0
        guard pa_stream_get_time(stream, &usec) == 0 else { return nil }
        return Int64(usec) * Int64(configuration.sampleRate) / 1_000_000 - serverOffset
    }

    /// The last frame the server had played when it sent its latest timing report, on our
    /// timeline: the bytes it had read from the stream less its sink's latency, never more than we
    /// have written (a server that ran dry reads on past the write index, through silence).
    /// Nil until the stream has a report.
    func reportedPlayedFrame() -> Int64? {
        guard let stream, let info = pa_stream_get_timing_info(stream), info.pointee.read_index_corrupt == 0 else {
            return nil
        }
        let latency = Int64(info.pointee.sink_usec) * Int64(configuration.sampleRate) / 1_000_000
        return min(writeIndex, info.pointee.read_index / bytesPerFrame - latency - serverOffset)
    }

    /// Completes voices whose last sample has been played (stopped ones once their ramp has), as
    /// the server's own report says: a finish promises the last sample was played, so it is never
    /// taken from an extrapolation, nor from a report that puts it sooner than the sound's length
    /// after its start (`Timeline.retire`), nor while a rewrite's report is outstanding
    /// (`pendingOffsets`: that report's callback retires them).
    func retireVoices() {
        guard pendingOffsets == 0, let played = reportedPlayedFrame() else { return }
        engine.core.retire(on: &timeline, playedUpTo: played, at: MonotonicClock.now)
    }

    /// A timing report arrived: note whether the server's read position moved, and retire what it
    /// has played (unless a rewrite's report is outstanding: `retireVoices`).
    func timingReported() {
        let now = MonotonicClock.now
        timingTime = now
        timingRequested = false
        if let stream, let info = pa_stream_get_timing_info(stream), info.pointee.read_index_corrupt == 0 {
            watch.observe(position: info.pointee.read_index, at: now)
        }
        retireVoices()
    }

    /// Asks the server where it reads, unless a report is outstanding: while sounds play, when the
    /// last report is older than `timingRefresh`, or when the interpolated clock says a voice has
    /// ended (its end is then confirmed by the report, see `retireVoices`).
    func requestTimingIfDue(now: Double) {
        guard !timingRequested, let stream, let played = interpolatedPlayedFrame(), let end = timeline.earliestEnd else { return }
        let stale = timingTime.map { now - $0 > PulseAudioOutput.timingRefresh } ?? true
        guard stale || end <= played else { return }
        // Nil when too many reports are outstanding (a hung server): the stall check takes over.
        guard let operation = pa_stream_update_timing_info(stream, nil, nil) else { return }
        pa_operation_unref(operation)
        timingRequested = true
    }

    /// While sounds play, checks every 5 ms for finished ones. Idle, it wakes only once more, when
    /// the idle time is up (to close): an open, silent stream costs the server's requests for
    /// silence and nothing of ours (a tick every 5 ms was 200 wake-ups a second).
    /// - Parameter delay: microseconds from now; an earlier tick already due is kept.
    func scheduleTick(in delay: pa_usec_t = 5_000) {
        guard let context else { return }
        let deadline = pa_rtclock_now() + delay
        if let tick {
            if tickDeadline <= deadline { return }
            pa_context_rttime_restart(context, tick, deadline)
        } else {
            tick = pa_context_rttime_new(context, deadline, { api, event, _, userdata in
                let connection = Unmanaged<PulseAudioConnection>.fromOpaque(userdata!).takeUnretainedValue()
                api!.pointee.time_free(event)
                connection.tick = nil
                connection.onTick()
            }, userdata)
        }
        tickDeadline = deadline
    }

    func onTick() {
        let now = MonotonicClock.now
        if let lastTickTime, now - lastTickTime > PulseAudioOutput.timingRefresh {
            // This thread did not run for a while (a loaded machine): the server's reports may be
            // waiting unread, so time not watched is not held against it.
            watch.excuse(now - lastTickTime)
        }
        lastTickTime = now
        if !timeline.isEmpty && watch.isStalled(at: now) {
            return fail(
                .serverStalled,
                detail: "its read position stood still for \(EngineTimeouts.stall) s while the sound played")
        }
        requestTimingIfDue(now: now)
        if let left = watch.idleTimeLeft(idle: timeline.isEmpty && !engine.hasPendingWork, at: now) {
            if left <= 0 {
                disconnect()
                engine.connectionEnded(nil)
                return
            }
            // A play before then schedules the 5 ms tick again (applyCommands).
            return scheduleTick(in: pa_usec_t(left * 1_000_000) + 1_000)
        }
        scheduleTick()
    }

    /// Closes the connection and fails every play with `reason` and `detail` (by default the
    /// server's message).
    func fail(_ reason: PlaybackError.Reason, detail: String? = nil) {
        let detail = detail ?? context.map { String(cString: pa_strerror(pa_context_errno($0))) }
        disconnect()
        engine.connectionEnded(PlaybackError(reason, detail: detail))
    }

    func disconnect() {
        if let tick {
            api.pointee.time_free(tick)
            self.tick = nil
        }
        if let connectTimer {
            api.pointee.time_free(connectTimer)
            self.connectTimer = nil
        }
        closeStream()
        if let context {
            pa_context_set_state_callback(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
            self.context = nil
        }
        timeline.removeAll()
        watch.reset()
        timingRequested = false
        lastTickTime = nil
    }

    /// Disconnects the stream, with no callback left to run.
    private func closeStream() {
        guard let stream else { return }
        pa_stream_set_state_callback(stream, nil, nil)
        pa_stream_set_write_callback(stream, nil, nil)
        pa_stream_set_underflow_callback(stream, nil, nil)
        pa_stream_set_latency_update_callback(stream, nil, nil)
        pa_stream_disconnect(stream)
        pa_stream_unref(stream)
        self.stream = nil
    }
}
