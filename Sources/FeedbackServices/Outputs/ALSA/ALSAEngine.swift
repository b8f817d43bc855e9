import Dispatch
import Glibc
import Synchronization

/// The machinery behind `ALSAOutput`: its thread, which owns the PCM and the timeline, and the
/// commands and handles API threads share with it. The thread works on this object only, never on
/// the facade users hold; the facade's deinit shuts this engine down (joining the thread).
final class ALSAEngine: QueuedEngine, @unchecked Sendable {
    // Locking rule: `pcm`, `timeline`, `writeIndex`, `drained`, `scratch`, `descriptors` and the
    // fields below them are touched only on the output's thread (`run`), or after it was joined
    // (`shutdown`). API threads reach it only through `core` (behind its Mutex) and the eventfd.
    // That is what makes this class `@unchecked Sendable`.

    let configuration: ALSAOutput.Configuration

    /// The plays and commands API threads queue, the PCM's state and the statistics.
    let core = EngineCore()
    /// Set by shutdown: the thread ends.
    private let stopping = Atomic<Bool>(false)
    private let wake: EventFD
    private var thread: Thread?

    private var pcm: ALSAPCM?
    /// The open in progress, on a thread of its own, and whether it has taken `EngineTimeouts.open`
    /// (the plays that waited for it failed).
    private var opening: PCMOpening?
    private var openingOverdue = false
    private var timeline: Timeline
    /// Our timeline frame that the next write starts at.
    private var writeIndex: Int64 = 0
    /// Frames kept queued in the ring.
    private var queueFrames = 0
    private var rewritesEnabled = false
    /// Open with nothing written yet: the device starts with the first sound at frame 0, not
    /// behind silence queued while nothing played (which the sound would then have to be
    /// rewound into: on the VM's loopback that rewind underran at `fire`'s first play).
    private var held = false
    private var drained: [Timeline.Command] = []
    private let scratchFrames = 4_096
    private let scratch: UnsafeMutablePointer<Float>
    /// The eventfd, then the PCM's descriptors.
    private let descriptorCapacity = 16
    private let descriptors: UnsafeMutablePointer<pollfd>
    /// The stall watchdog (on the device's played frame) and the idle close.
    private var watch: EngineWatch
    /// The device's last played frame, as its last report at a retire put it.
    private var lastPlayed: Int64?
    /// The device's position as a clock, from its reports at each wake-up: where a sound placed now
    /// is heard, closer than one report's stepped position tells.
    private var position = PlayPositionClock(rate: 48_000)
    /// Whether the device runs (a write since it was opened or recovered): only then do its
    /// reports count; before, its position stands at the frames written, not played.
    private var positionRunning = false
    /// Frames kept between the device's position and a rewound write: what it may already have
    /// taken in, at least a period. Many devices report their position a period at a time (the
    /// loopback card on a 250 Hz tick moves it 4 ms at once): with 1 ms kept, nearly every rewind
    /// underran in the VM.
    private var rewindSafety: Int { max(configuration.sampleRate / 1_000, pcm?.periodFrames ?? 0) }

    init(configuration: ALSAOutput.Configuration) {
        self.configuration = configuration
        do {
            wake = try EventFD()
        } catch {
            preconditionFailure("eventfd failed: \(error)")
        }
        let history = Int64(max(configuration.bufferDuration, configuration.shortQueueDuration) * Double(configuration.sampleRate))
        // A ring the device grants may be longer than asked for: rewinds go back at most its length.
        timeline = Timeline(sampleRate: configuration.sampleRate, history: 4 * history, capacity: 1024)
        watch = EngineWatch(idleTimeout: configuration.idleTimeout)
        scratch = .allocate(capacity: scratchFrames * 2)
        descriptors = .allocate(capacity: descriptorCapacity)
        drained.reserveCapacity(64)
        do {
            thread = try startThread(name: "fbs-alsa") { [self] in run() }
        } catch {
            preconditionFailure("cannot start the ALSA output's thread: \(error)")
        }
    }

    deinit {
        scratch.deallocate()
        descriptors.deallocate()
    }

    /// Stops the thread and waits for it (closing the PCM); every sound still playing ends
    /// `.failed(.outputClosed)`. Called once, by the facade's deinit.
    func shutdown() {
        core.closed(with: nil, closing: true)
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        thread?.join()
        thread = nil
        // Joined: the output's fields are this thread's now. An open still running is not waited
        // for; it closes its PCM when (if ever) it returns.
        opening?.abandon()
        opening = nil
        core.closed(with: PlaybackError(.outputClosed))
    }

    func prepare(timeout: Double) throws(PlaybackError) {
        try core.requests.prepare(
            timeout: timeout,
            timedOut: PlaybackError(
                .deviceUnavailable,
                detail: "ALSA PCM \(configuration.device) not open after \(timeout) s (snd_pcm_open has not returned: "
                    + "a plugin such as pulse may be waiting for a sound server that does not answer)"),
            wake: wakeAudioThread)
    }

    var timelineRate: Int { configuration.sampleRate }

    /// The PCM's delay says when a frame written now is played: each sound's onset is known.
    var reportsOnsets: Bool { true }

    func wakeAudioThread() {
        wake.signal()
    }

    // MARK: The output's thread

    private func run() {
        while !stopping.load(ordering: .relaxed) {
            descriptors[0] = pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)
            // With the short queue the PCM would report room nearly all the time (its ring is mostly
            // empty by design), and polling it would spin: the timeout paces the writes instead.
            let pcmCount = rewritesEnabled ? pcm?.pollDescriptors(descriptors + 1, capacity: descriptorCapacity - 1) ?? 0 : 0
            let ready = poll(descriptors, nfds_t(1 + pcmCount), pollTimeout())
            if ready < 0 && errno != EINTR { preconditionFailure("poll failed: \(Errno.current)") }
            if descriptors[0].revents != 0 { wake.drain() }
            if pcm == nil {
                openIfWanted()
            } else if held {
                beginIfWanted()
            } else {
                applyCommands()
            }
            if pcm != nil && !held { pump() }
            if pcm != nil { checkIdle() }
        }
        if pcm != nil { closeDevice(failing: PlaybackError(.outputClosed)) }
    }

    /// Milliseconds to wait: closed, until woken; open, at most 50 ms (to notice idleness and a
    /// stalled device); with the short queue, until half of it has played; and no longer than
    /// until the first voice's last frame is due, so that its completion does not wait for the
    /// device's next wake-up.
    private func pollTimeout() -> Int32 {
        guard let pcm else {
            // Opening: until the open is overdue, for the plays waiting on it.
            guard case .opening(let since) = core.state, !openingOverdue else { return -1 }
            return Int32(max(1, ((since + EngineTimeouts.open - MonotonicClock.now) * 1_000).rounded(.up)))
        }
        // Held: nothing plays; a play wakes the thread, and the idle close is checked now and then.
        if held { return 50 }
        let rate = Int64(configuration.sampleRate)
        var timeout: Int64 = 50
        if !rewritesEnabled {
            let queued = Int64(max(0, pcm.delay()))
            timeout = min(timeout, (queued - Int64(queueFrames / 2)) * 1_000 / rate)
        }
        if let end = timeline.earliestEnd, let lastPlayed { timeout = min(timeout, (end - lastPlayed) * 1_000 / rate + 1) }
        return Int32(max(1, timeout))
    }

    /// Starts opening the PCM when a play or `prepare` waits for it, and takes the open PCM once
    /// the opening thread has it; fails every waiting play when it cannot be opened, or has not
    /// opened within `EngineTimeouts.open` (the open goes on: a PCM it brings is taken then).
    private func openIfWanted() {
        guard let opening else {
            guard core.beginOpeningIfWanted() else { return }
            opening = PCMOpening(configuration, maximumWriteFrames: scratchFrames) { [weak self] in self?.wakeAudioThread() }
            openingOverdue = false
            return
        }
        guard let opened = opening.take() else {
            if core.isOpeningOverdue() {
                openingOverdue = true
                // Each play that comes while it stays stuck fails at once, with the same reason;
                // the state stays `opening`.
                if core.requests.isWanted {
                    core.requests.closed(
                        with: PlaybackError(
                            .deviceUnavailable,
                            detail: "ALSA PCM \(configuration.device): snd_pcm_open has not returned after \(EngineTimeouts.open) s "
                                + "(a plugin such as pulse may be waiting for a sound server that does not answer)"))
                }
            }
            return
        }
        self.opening = nil
        switch opened {
        case .success(let device): start(device)
        case .failure(let error): core.closed(with: PlaybackError(error, device: configuration.device, opening: true))
        }
    }

    /// Makes `device`, just opened, the PCM sounds play on: held until the first sound (at once
    /// when plays already wait for it).
    private func start(_ device: ALSAPCM) {
        let opened = MonotonicClock.now
        pcm = device
        writeIndex = 0
        lastPlayed = nil
        position = PlayPositionClock(rate: device.rate)
        positionRunning = false
        watch.reset()
        rewritesEnabled = false
        held = true
        queueFrames = min(device.bufferFrames, max(device.periodFrames, Int(configuration.shortQueueDuration * Double(device.rate))))
        core.record { statistics in
            statistics.rewritesEnabled = false
            statistics.rewindableFrames = 0
            statistics.sharedMixer = device.isSharedMixer
            statistics.bufferFrames = device.bufferFrames
            statistics.periodFrames = device.periodFrames
            statistics.sampleFormat = device.format.rawValue
            statistics.queuedFrames = queueFrames
        }
        // Before the ready signal, as the plays queued so far are the ones the open was for: a
        // play that comes after it wakes the thread, with whatever the caller queued next.
        beginIfWanted()
        // A first write that failed closed the PCM (and failed its plays): it did not open.
        guard pcm != nil else { return }
        core.becameReady(now: opened)
    }

    /// Starts the held device when sounds wait: they begin at frame 0, ahead of anything queued,
    /// so the first is heard one period after its write whether or not the device can rewind.
    private func beginIfWanted() {
        guard held, let pcm else { return }
        applyCommands()
        guard !timeline.isEmpty else { return }
        held = false
        // The first fill in one write: the device starts with the first frame written (start
        // threshold 1), so in period-sized writes it would start with one period queued.
        pump(largestWrite: scratchFrames)
        guard self.pcm != nil else { return }
        // Whether the device lets written frames be taken back shows only once some are queued.
        let rewindable = pcm.rewindable()
        if configuration.rewinds && !pcm.isSharedMixer && rewindable > rewindSafety {
            rewritesEnabled = true
            queueFrames = pcm.bufferFrames
        }
        pump()
        core.record { statistics in
            statistics.rewritesEnabled = rewritesEnabled
            statistics.rewindableFrames = max(0, rewindable)
            statistics.queuedFrames = queueFrames
        }
    }

    /// Takes the queued commands and applies them where they are heard soonest: just ahead of the
    /// device's position after a rewind, or at the end of the short queue.
    private func applyCommands() {
        guard let pcm else { return }
        core.requests.takeCommands(into: &drained)
        defer { drained.removeAll(keepingCapacity: true) }
        guard !drained.isEmpty else { return }
        if rewritesEnabled {
            let back = pcm.rewindable() - rewindSafety
            let rewound = back > 0 ? pcm.rewind(back) : 0
            if rewound > 0 {
                writeIndex -= Int64(rewound)
                core.record { $0.rewrites += 1 }
            }
        }
        let wasIdle = timeline.isEmpty
        let time = MonotonicClock.now
        // A voice placed at the write index is heard once the frames queued ahead of it have
        // played (none when held: the device starts with the first write, which comes next).
        core.place(drained, on: &timeline, at: writeIndex, time: time) { held ? time : reckonOnset(pcm) }
        // The stall clock starts no earlier than the sound.
        if wasIdle && !timeline.isEmpty { watch.soundsBegan(at: MonotonicClock.now) }
    }

    /// When a frame written next is heard: once the frames queued ahead of it have played, at the
    /// position the device's reports make now (`PlayPositionClock`), not the stepped one it
    /// reports this instant, which lags by up to a step (snd-aloop's by a jiffy, so a vibration
    /// held for the sound came half a jiffy late on average: docs/benchmarks.md).
    private func reckonOnset(_ pcm: ALSAPCM) -> Double {
        let answer = pcm.delay()
        let now = MonotonicClock.now
        let reported = writeIndex - Int64(max(0, answer))
        let played = position.played(at: now, reported: reported)
        // An error (negative) is no position.
        if positionRunning && answer >= 0 { position.report(played: reported, at: now) }
        return now + max(0, Double(writeIndex) - played) / Double(pcm.rate)
    }

    /// Records where the running device is (one `snd_pcm_delay`), for `reckonOnset`.
    private func observePosition(_ pcm: ALSAPCM) {
        guard !held, positionRunning else { return }
        let delay = pcm.delay()
        // Stamped after the call: a stamp taken late only makes the report a lower bound.
        if delay >= 0 { position.report(played: writeIndex - Int64(delay), at: MonotonicClock.now) }
    }

    /// Fills the queue, a period at a time unless `largestWrite` allows more, then retires the
    /// voices the device has played.
    private func pump(largestWrite: Int? = nil) {
        guard let pcm else { return }
        let free = pcm.available()
        if free < 0 { return recover(free) }
        observePosition(pcm)
        var missing = queueFrames - (pcm.bufferFrames - free)
        while missing > 0 {
            // A period at a time: after a rewind the device has only `rewindSafety` queued, which
            // it must not play out while the rest of the ring is rendered.
            let frames = min(missing, largestWrite ?? pcm.periodFrames, scratchFrames)
            timeline.render(from: writeIndex, frames: frames, into: scratch)
            let written = pcm.write(scratch, frames: frames)
            if written == -Int(EAGAIN) { break }
            if written < 0 { return recover(written) }
            writeIndex += Int64(written)
            positionRunning = true
            missing -= written
            if written < frames { break }
        }
        retireVoices()
    }

    /// Completes the voices whose last frame the device has played, and notices a device whose
    /// position stands still while sounds play.
    private func retireVoices() {
        guard let pcm, !timeline.isEmpty else { return }
        let delay = pcm.delay()
        if delay < 0 { return recover(delay) }
        let played = writeIndex - Int64(delay)
        let now = MonotonicClock.now
        lastPlayed = played
        watch.observe(position: played, at: now)
        if watch.isStalled(at: now) {
            return closeDevice(
                failing: PlaybackError(
                    .serverStalled,
                    detail: "ALSA PCM \(configuration.device): its position stood still for \(EngineTimeouts.stall) s"))
        }
        core.retire(on: &timeline, playedUpTo: played, at: now)
    }

    /// An underrun or a suspend is recovered and the sounds play on; anything else (the device
    /// went away) fails every sound once and closes the PCM, which the next play opens again.
    private func recover(_ error: Int) {
        guard let pcm else { return }
        if error == -Int(EPIPE) || error == -Int(ESTRPIPE) {
            core.record { $0.underflows += 1 }
            position.reset()
            positionRunning = false
            let result = pcm.recover(error)
            if result == 0 { return }
            return closeDevice(failing: PlaybackError(ALSAError(code: Int32(-result), call: "snd_pcm_recover"), device: pcm.name, opening: false))
        }
        closeDevice(failing: PlaybackError(ALSAError(code: Int32(-error), call: "snd_pcm_writei"), device: pcm.name, opening: false))
    }

    private func checkIdle() {
        let idle = timeline.isEmpty && !core.requests.hasPendingWork
        if watch.idleTimeLeft(idle: idle, at: MonotonicClock.now) == 0 { closeDevice(failing: nil) }
    }

    /// Closes the PCM; with an error, every sound playing or waiting ends `.failed` with it.
    private func closeDevice(failing error: PlaybackError?) {
        pcm = nil
        held = false
        timeline.removeAll()
        watch.reset()
        core.closed(with: error)
    }
}

/// One PCM open (`ALSAPCM.init`: `snd_pcm_open` and the setup) on a detached thread of its own,
/// taken by the output's thread when done. A plugin may block `snd_pcm_open` with no time limit —
/// the pulse plugin, on `default`, waits in `pulse_connect` for a PulseAudio server that hangs
/// (SIGSTOPped) — and neither the output's thread nor `shutdown` may wait for that: a `prepare`
/// that timed out would then hang in the output's deinit, and with it the process's exit.
///
/// Thread safety: the opening thread puts its result in `state` once; the output's thread takes
/// it. An open the output abandoned (it shut down) closes its PCM on the opening thread.
private final class PCMOpening: Sendable {
    // Locking rule: the PCM in `state` belongs to the thread that takes it out, under the lock.
    private let state = Lock<(result: OpenResult?, abandoned: Bool)>((nil, false))

    /// The open's outcome, handed between threads whole.
    private final class OpenResult: @unchecked Sendable {
        // Made on the opening thread and not touched there again once stored.
        let value: Result<ALSAPCM, ALSAError>
        init(_ value: Result<ALSAPCM, ALSAError>) { self.value = value }
    }

    /// Starts opening `configuration.device`; `opened` is called on the opening thread when the
    /// open returned, unless the output abandoned it.
    init(_ configuration: ALSAOutput.Configuration, maximumWriteFrames: Int, opened: @escaping @Sendable () -> Void) {
        startDetachedThread(name: "fbs-alsa-open") { [self] in
            let result = OpenResult(
                Result { () throws(ALSAError) in
                    try ALSAPCM(
                        name: configuration.device, rate: configuration.sampleRate,
                        bufferDuration: configuration.bufferDuration, periodDuration: configuration.periodDuration,
                        maximumWriteFrames: maximumWriteFrames)
                })
            let kept = state.withLock { state -> Bool in
                guard !state.abandoned else { return false }
                state.result = result
                return true
            }
            // Abandoned: `result` goes here, and with it the PCM (its deinit closes it).
            if kept { opened() }
        }
    }

    /// The open's outcome once it returned; nil while it runs.
    func take() -> Result<ALSAPCM, ALSAError>? {
        state.withLock { state in
            defer { state.result = nil }
            return state.result
        }?.value
    }

    /// The output no longer wants the PCM: one already opened is closed now, one still opening
    /// when it opens.
    func abandon() {
        // Taken out under the lock and let go after it, so the PCM is closed outside the lock.
        let opened = state.withLock { state in
            state.abandoned = true
            defer { state.result = nil }
            return state.result
        }
        withExtendedLifetime(opened) {}
    }
}
