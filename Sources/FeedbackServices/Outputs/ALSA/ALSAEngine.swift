import Dispatch
import Glibc
import Synchronization

/// The machinery behind `ALSAOutput`: its thread, which owns the PCM and the timeline, and the
/// commands and handles API threads share with it. The thread works on this object only, never on
/// the facade users hold; the facade's deinit shuts this engine down (joining the thread).
final class ALSAEngine: TimelineControl, @unchecked Sendable {
    // Locking rule: `pcm`, `timeline`, `writeIndex`, `drained`, `scratch`, `descriptors` and the
    // fields below them are touched only on the output's thread (`run`), or after it was joined
    // (`shutdown`). API threads reach it only through `shared` (a Mutex) and the eventfd. That is
    // what makes this class `@unchecked Sendable`.

    let configuration: ALSAOutput.Configuration

    private struct Shared {
        var commands: [Timeline.Command] = []
        var handles: [UInt64: PlaybackHandle] = [:]
        var isOpen = false
        var statistics = ALSAOutput.Statistics()
        var readyWaiters: [DispatchSemaphore] = []
        var lastError: PlaybackError?
        /// Set by shutdown: the thread ends, nothing may be queued.
        var closed = false
    }

    private let shared = Mutex(Shared())
    private let wake: EventFD
    private var thread: Thread?

    private var pcm: ALSAPCM?
    private var timeline: Timeline
    /// Our timeline frame that the next write starts at.
    private var writeIndex: Int64 = 0
    /// Frames kept queued in the ring.
    private var queueFrames = 0
    private var rewritesEnabled = false
    private var drained: [Timeline.Command] = []
    private let scratchFrames = 4_096
    private let scratch: UnsafeMutablePointer<Float>
    /// The eventfd, then the PCM's descriptors.
    private let descriptorCapacity = 16
    private let descriptors: UnsafeMutablePointer<pollfd>
    private var idleSince: Double?
    /// The device's last played frame, and when it last moved (or sound began on an idle timeline).
    private var lastPlayed: Int64?
    private var progressTime = 0.0
    /// Frames kept between the device's position and a rewound write: what it may already have
    /// taken in (a DMA burst, a FIFO), 1 ms.
    private var rewindSafety: Int { configuration.sampleRate / 1_000 }

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
        shared.withLock { $0.closed = true }
        wake.signal()
        thread?.join()
        thread = nil
        let (handles, waiters) = shared.withLock { shared in
            for command in shared.commands { command.discard() }
            shared.commands.removeAll()
            defer {
                shared.handles.removeAll()
                shared.readyWaiters.removeAll()
            }
            return (Array(shared.handles.values), shared.readyWaiters)
        }
        for handle in handles { handle.end(.failed(PlaybackError(.outputClosed))) }
        waiters.forEach { $0.signal() }
    }

    var statistics: ALSAOutput.Statistics { shared.withLock { $0.statistics } }

    func prepare(timeout: Double) throws(PlaybackError) {
        let semaphore = DispatchSemaphore(value: 0)
        let open = shared.withLock { shared -> Bool in
            if shared.isOpen { return true }
            shared.lastError = nil
            shared.readyWaiters.append(semaphore)
            return false
        }
        if open { return }
        wake.signal()
        if semaphore.wait(timeout: .now() + timeout) == .timedOut {
            shared.withLock { $0.readyWaiters.removeAll { $0 === semaphore } }
            throw PlaybackError(.deviceUnavailable, detail: "ALSA PCM \(configuration.device) not open after \(timeout) s")
        }
        let error = shared.withLock { $0.isOpen ? nil : ($0.lastError ?? PlaybackError(.outputClosed)) }
        if let error { throw error }
    }

    func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        let voice: (samples: VoiceSamples, offset: Int64)
        do {
            voice = try source.samples(
                at: configuration.sampleRate, from: offset, looping: options.playCount != 1, streaming: true)
        } catch {
            return PlaybackHandle.failed(error, queue: queue, completion: completion)
        }
        let id = nextPlaybackID()
        let handle = PlaybackHandle(id: id, control: self, queue: queue, completion: completion)
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

    func send(_ command: Timeline.Command) {
        let open = shared.withLock { shared in
            guard !shared.closed else { return false }
            shared.commands.append(command)
            return true
        }
        if open { wake.signal() } else { command.discard() }
    }

    // MARK: The output's thread

    private func run() {
        while !shared.withLock({ $0.closed }) {
            descriptors[0] = pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)
            let pcmCount = pcm?.pollDescriptors(descriptors + 1, capacity: descriptorCapacity - 1) ?? 0
            let ready = poll(descriptors, nfds_t(1 + pcmCount), pollTimeout())
            if ready < 0 && errno != EINTR { preconditionFailure("poll failed: \(Errno.current)") }
            if descriptors[0].revents != 0 { wake.drain() }
            if pcm == nil {
                openIfWanted()
            } else {
                applyCommands()
            }
            if pcm != nil { pump() }
            if pcm != nil { checkIdle() }
        }
        if pcm != nil { closeDevice(failing: PlaybackError(.outputClosed)) }
    }

    /// Milliseconds to wait: closed, until woken; open, at most 50 ms (to notice idleness and a
    /// stalled device), and no longer than until the first voice's last frame is due, so that its
    /// completion does not wait for the device's next wake-up.
    private func pollTimeout() -> Int32 {
        guard pcm != nil else { return -1 }
        guard let end = timeline.earliestEnd, let lastPlayed else { return 50 }
        let due = (end - lastPlayed) * 1_000 / Int64(configuration.sampleRate) + 1
        return Int32(min(50, max(1, due)))
    }

    /// Opens the PCM when a play or `prepare` waits for it; fails them all when it cannot be.
    private func openIfWanted() {
        guard shared.withLock({ !$0.commands.isEmpty || !$0.readyWaiters.isEmpty }) else { return }
        let device: ALSAPCM
        do {
            device = try ALSAPCM(
                name: configuration.device, rate: configuration.sampleRate, bufferDuration: configuration.bufferDuration,
                periodDuration: configuration.periodDuration, maximumWriteFrames: scratchFrames)
        } catch {
            return failAll(PlaybackError(error, device: configuration.device, opening: true))
        }
        pcm = device
        writeIndex = 0
        lastPlayed = nil
        idleSince = nil
        rewritesEnabled = false
        queueFrames = min(device.bufferFrames, max(device.periodFrames, Int(configuration.shortQueueDuration * Double(device.rate))))
        // The first sounds start at frame 0, before anything is queued: heard at once either way.
        applyCommands()
        pump()
        // Whether the device lets written frames be taken back shows only once some are queued.
        let rewindable = device.rewindable()
        if configuration.rewinds && rewindable > rewindSafety {
            rewritesEnabled = true
            queueFrames = device.bufferFrames
        } else {
            // Wake only when the short queue has drained by a period, not every period of the ring.
            try? device.setWakeThreshold(device.bufferFrames - queueFrames + device.periodFrames)
        }
        pump()
        let waiters = shared.withLock { shared -> [DispatchSemaphore] in
            shared.isOpen = true
            shared.statistics.opens += 1
            shared.statistics.rewritesEnabled = rewritesEnabled
            shared.statistics.rewindableFrames = max(0, rewindable)
            shared.statistics.bufferFrames = device.bufferFrames
            shared.statistics.periodFrames = device.periodFrames
            shared.statistics.sampleFormat = device.format.rawValue
            shared.statistics.queuedFrames = queueFrames
            shared.statistics.readyTime = MonotonicClock.now
            defer { shared.readyWaiters.removeAll() }
            return shared.readyWaiters
        }
        waiters.forEach { $0.signal() }
    }

    /// Takes the queued commands and applies them where they are heard soonest: just ahead of the
    /// device's position after a rewind, or at the end of the short queue.
    private func applyCommands() {
        guard let pcm else { return }
        shared.withLock { swap(&$0.commands, &drained) }
        defer { drained.removeAll(keepingCapacity: true) }
        guard !drained.isEmpty else { return }
        if rewritesEnabled {
            let back = pcm.rewindable() - rewindSafety
            if back > 0 {
                let rewound = pcm.rewind(back)
                if rewound > 0 {
                    writeIndex -= Int64(rewound)
                    shared.withLock { $0.statistics.rewrites += 1 }
                }
            }
        }
        let wasIdle = timeline.isEmpty
        for command in drained {
            // Only plays still waiting for their voice start (a failure or a shutdown ended the others).
            if case .start(let id, _, _, _) = command, !shared.withLock({ $0.handles[id] != nil }) {
                command.discard()
                continue
            }
            timeline.apply(command, at: writeIndex)
        }
        // The stall clock starts no earlier than the sound.
        if wasIdle && !timeline.isEmpty { progressTime = MonotonicClock.now }
    }

    /// Fills the queue, then retires the voices the device has played.
    private func pump() {
        guard let pcm else { return }
        let free = pcm.available()
        if free < 0 { return recover(free) }
        var missing = queueFrames - (pcm.bufferFrames - free)
        while missing > 0 {
            let frames = min(missing, scratchFrames)
            timeline.render(from: writeIndex, frames: frames, into: scratch)
            let written = pcm.write(scratch, frames: frames)
            if written == -Int(EAGAIN) { break }
            if written < 0 { return recover(written) }
            writeIndex += Int64(written)
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
        if played != lastPlayed {
            lastPlayed = played
            progressTime = now
        } else if now - progressTime > ALSAOutput.stallTimeout {
            return closeDevice(
                failing: PlaybackError(
                    .serverStalled,
                    detail: "ALSA PCM \(configuration.device): its position stood still for \(ALSAOutput.stallTimeout) s"))
        }
        for (id, end) in timeline.retire(playedUpTo: played) { voiceEnded(id, end) }
    }

    /// An underrun or a suspend is recovered and the sounds play on; anything else (the device
    /// went away) fails every sound once and closes the PCM, which the next play opens again.
    private func recover(_ error: Int) {
        guard let pcm else { return }
        if error == -Int(EPIPE) || error == -Int(ESTRPIPE) {
            shared.withLock { $0.statistics.underflows += 1 }
            let result = pcm.recover(error)
            if result == 0 { return }
            return closeDevice(failing: PlaybackError(ALSAError(code: Int32(-result), call: "snd_pcm_recover"), device: pcm.name, opening: false))
        }
        closeDevice(failing: PlaybackError(ALSAError(code: Int32(-error), call: "snd_pcm_writei"), device: pcm.name, opening: false))
    }

    private func checkIdle() {
        guard timeline.isEmpty, shared.withLock({ $0.commands.isEmpty && $0.handles.isEmpty }) else {
            idleSince = nil
            return
        }
        let now = MonotonicClock.now
        guard let idleSince else {
            idleSince = now
            return
        }
        if now - idleSince >= configuration.idleTimeout { closeDevice(failing: nil) }
    }

    /// Closes the PCM; with an error, every sound playing or waiting ends `.failed` with it.
    private func closeDevice(failing error: PlaybackError?) {
        pcm = nil
        timeline.removeAll()
        idleSince = nil
        shared.withLock { $0.isOpen = false }
        if let error { failAll(error) }
    }

    /// Ends every play and `prepare` waiting with `error`.
    private func failAll(_ error: PlaybackError) {
        let (handles, waiters) = shared.withLock { shared in
            // Streams that will now never start would keep their feeders waiting forever.
            for command in shared.commands { command.discard() }
            shared.commands.removeAll()
            shared.lastError = error
            defer {
                shared.handles.removeAll()
                shared.readyWaiters.removeAll()
            }
            return (Array(shared.handles.values), shared.readyWaiters)
        }
        for handle in handles { handle.end(.failed(error), stoppingVoice: false) }
        waiters.forEach { $0.signal() }
    }

    private func voiceEnded(_ id: UInt64, _ end: PlaybackEnd) {
        let handle = shared.withLock { $0.handles.removeValue(forKey: id) }
        // The voice is gone already: asking the output to stop it would only queue a command.
        handle?.end(end, stoppingVoice: false)
    }
}
