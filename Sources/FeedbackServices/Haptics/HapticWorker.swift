import CFeedbackShims
import Glibc

/// The engine's thread: it owns every playing pattern and is the only code that touches them, so
/// they need no lock. It sleeps in `ppoll` until the next step is due, a command arrives, or the
/// device hangs up.
final class HapticWorker {
    private struct Playing {
        let id: UInt64
        let priority: HapticPriority
        let rendered: RenderedPattern
        let completion: @Sendable (HapticCompletion) -> Void
        let timing: StepTiming
        /// Kernel timing: one effect per step, phrase by phrase. User-space timing: the slots.
        var effects: [Int16]
        var phrase = 0
        var phraseStart: UInt64
        /// User-space timing: the next step of the phrase to start, whether it is uploaded, how many
        /// steps have started (to choose the slot) and when the last started one ends.
        var nextStep = 0
        var prepared: Bool
        var started = 0
        var lastEnd: UInt64
        /// Made ready but not started: waits for a release (`held`), or for its start time
        /// (kernel timing's first phrase, released for later).
        var held: Bool
        var kernelStartPending = false

        var currentPhrase: RenderedPattern.Phrase { rendered.phrases[phrase] }
    }

    private let engine: HapticEngine
    /// How long before a step's time the thread stops sleeping and spins (1 ms).
    private static let spinMargin: UInt64 = 1_000_000
    private var device: ForceFeedbackDevice { engine.device }
    private var playing: [Playing] = []
    /// Set once the device has gone: every later play fails with it.
    private var gone: HapticsError?

    init(engine: HapticEngine) {
        self.engine = engine
    }

    /// The thread's whole life: until the engine shuts down.
    func run() {
        _ = fbs_set_timer_slack(1)
        while true {
            let (commands, strength, shuttingDown) = engine.takeCommands()
            for command in commands { handle(command, maximumStrength: strength) }
            if shuttingDown {
                for index in playing.indices.reversed() { end(at: index, with: .stopped) }
                return
            }
            advance()
            wait(until: playing.map(deadline(of:)).filter { $0 != .max }.min())
        }
    }

    // MARK: Commands

    private func handle(_ command: HapticEngine.Command, maximumStrength: Double) {
        switch command {
        case .play(let id, let pattern, let priority, let held, let completion):
            if let gone { return completion(.failed(gone)) }
            let victims = PatternRenderer.preempted(by: priority, among: playing.map { ($0.id, $0.priority) })
            for victim in victims {
                if let index = playing.firstIndex(where: { $0.id == victim }) { end(at: index, with: .preempted) }
            }
            let rendered = PatternRenderer.render(pattern, capabilities: device.info.capabilities, maximumStrength: maximumStrength)
            start(id: id, priority: priority, rendered: rendered, held: held, completion: completion)
        case .release(let id, let time):
            guard let index = playing.firstIndex(where: { $0.id == id }), playing[index].held else { return }
            let start = max(time, MonotonicClock.nanoseconds)
            playing[index].held = false
            playing[index].phraseStart = start
            playing[index].lastEnd = start
            if playing[index].timing == .kernel { playing[index].kernelStartPending = true }
        case .stop(let id):
            if let index = playing.firstIndex(where: { $0.id == id }) { end(at: index, with: .stopped) }
        case .stopAll:
            for index in playing.indices.reversed() { end(at: index, with: .stopped) }
        }
    }

    private func start(
        id: UInt64, priority: HapticPriority, rendered: RenderedPattern, held: Bool,
        completion: @escaping @Sendable (HapticCompletion) -> Void
    ) {
        let used = playing.reduce(0) { $0 + $1.effects.count }
        let free = max(device.info.maximumEffects - used, 0)
        guard var timing = PatternRenderer.timing(for: rendered, freeSlots: free) else {
            return completion(.failed(HapticsError(.noFreeEffectSlot, source: device.path)))
        }
        var effects: [Int16] = []
        // Whether slot 0 already holds the first step without its delay, ready to start.
        var firstReady = false
        do {
            if timing == .kernel {
                for phrase in rendered.phrases {
                    for step in phrase.steps { effects.append(try device.upload(step.effect)) }
                }
            } else if case .userSpace(let slots) = timing {
                // Every slot starts out holding the first step, so it is ready to start at once.
                let first = rendered.phrases.flatMap(\.steps).first!.effect.startingAtOnce
                for _ in 0..<slots { effects.append(try device.upload(first)) }
                firstReady = true
            }
        } catch where error.reason == .noFreeEffectSlot && !effects.isEmpty {
            // Another program holds slots we counted as free: time the steps ourselves with what we got.
            let keep = min(2, effects.count)
            for id in effects[keep...] { try? device.erase(id) }
            effects.removeSubrange(keep...)
            timing = .userSpace(slots: keep)
            do {
                try device.upload(rendered.phrases.flatMap(\.steps).first!.effect.startingAtOnce, id: effects[0])
                firstReady = true
            } catch {
                for id in effects { try? device.erase(id) }
                return fail(error, completion: completion)
            }
        } catch {
            for id in effects { try? device.erase(id) }
            return fail(error, completion: completion)
        }
        let now = MonotonicClock.nanoseconds
        playing.append(
            Playing(
                id: id, priority: priority, rendered: rendered, completion: completion, timing: timing,
                effects: effects, phraseStart: now, prepared: firstReady, lastEnd: now, held: held))
        if timing == .kernel && !held { startKernelPhrase(at: playing.count - 1) }
    }

    // MARK: Timing

    /// User-space timing: the next step to start — in this phrase, or in the one that follows it
    /// (the same one again when it repeats) — and when its phrase starts. Nil when none is left.
    private func upcoming(_ entry: Playing) -> (phrase: Int, step: Int, phraseStart: UInt64)? {
        if entry.nextStep < entry.currentPhrase.steps.count { return (entry.phrase, entry.nextStep, entry.phraseStart) }
        var phrase = entry.phrase
        var start = entry.phraseStart
        // Two looks ahead reach the repeating phrase from the prefix; one without steps (all pauses) has none.
        for _ in 0..<2 {
            let current = entry.rendered.phrases[phrase]
            start += milliseconds(current.duration)
            if !current.repeats { phrase += 1 }
            guard phrase < entry.rendered.phrases.count else { return nil }
            if !entry.rendered.phrases[phrase].steps.isEmpty { return (phrase, 0, start) }
        }
        return nil
    }

    /// When the pattern next needs the thread.
    private func deadline(of entry: Playing) -> UInt64 {
        if entry.held { return .max }
        if entry.kernelStartPending { return entry.phraseStart }
        guard case .userSpace(let slots) = entry.timing, let next = upcoming(entry) else {
            return entry.phraseStart + milliseconds(entry.currentPhrase.duration)
        }
        let startTime = next.phraseStart + milliseconds(entry.rendered.phrases[next.phrase].steps[next.step].offset)
        if entry.prepared { return startTime }
        // With two slots the next step goes into the one whose step has already ended, so it is
        // uploaded at once, well before its time; with one, only once the step in it has ended.
        return slots >= 2 ? 0 : min(entry.lastEnd, startTime)
    }

    /// Does everything that is due, for every pattern, earliest first.
    private func advance() {
        while let index = playing.indices.min(by: { deadline(of: playing[$0]) < deadline(of: playing[$1]) }),
            deadline(of: playing[index]) <= MonotonicClock.nanoseconds
        {
            step(at: index)
        }
    }

    private func step(at index: Int) {
        let entry = playing[index]
        if entry.kernelStartPending {
            playing[index].kernelStartPending = false
            return startKernelPhrase(at: index)
        }
        if case .userSpace(let slots) = entry.timing, let next = upcoming(entry) {
            let step = entry.rendered.phrases[next.phrase].steps[next.step]
            let slot = entry.effects[entry.started % slots]
            do {
                if !entry.prepared {
                    try device.upload(step.effect.startingAtOnce, id: slot)
                    playing[index].prepared = true
                } else {
                    try device.play(slot)
                    playing[index].phrase = next.phrase
                    playing[index].phraseStart = next.phraseStart
                    playing[index].nextStep = next.step + 1
                    playing[index].prepared = false
                    playing[index].started += 1
                    playing[index].lastEnd = MonotonicClock.nanoseconds + milliseconds(step.effect.length)
                }
            } catch {
                failPlaying(at: index, error)
            }
            return
        }
        // The phrase is over: repeat it, go on to the next, or finish.
        let phrase = entry.currentPhrase
        let phraseEnd = entry.phraseStart + milliseconds(phrase.duration)
        if !phrase.repeats && entry.phrase + 1 >= entry.rendered.phrases.count {
            return end(at: index, with: .finished)
        }
        if !phrase.repeats { playing[index].phrase += 1 }
        playing[index].phraseStart = phraseEnd
        playing[index].nextStep = 0
        if entry.timing == .kernel { startKernelPhrase(at: index) }
    }

    /// Starts every step of the current phrase with one write; the effects' delays do the timing.
    private func startKernelPhrase(at index: Int) {
        let entry = playing[index]
        let before = entry.rendered.phrases[..<entry.phrase].reduce(0) { $0 + $1.steps.count }
        let ids = Array(entry.effects[before..<(before + entry.currentPhrase.steps.count)])
        guard !ids.isEmpty else { return }
        do {
            try device.play(ids)
        } catch {
            failPlaying(at: index, error)
        }
    }

    private func wait(until deadline: UInt64?) {
        // A removed evdev node polls as POLLHUP | POLLERR at once, every time: once the device is
        // gone, only the commands are waited for (poll skips a negative descriptor), or the thread
        // would spin until shutdown.
        var fds = [
            pollfd(fd: engine.wakeDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: gone == nil ? device.pollDescriptor : -1, events: Int16(POLLIN), revents: 0),
        ]
        var timeout: UInt64?
        if let deadline {
            let now = MonotonicClock.nanoseconds
            let remaining = deadline > now ? deadline - now : 0
            // A wake-up can come late by a scheduler tick under load; waking a little early and
            // spinning the rest keeps step starts within a millisecond or so of their time.
            guard remaining > Self.spinMargin else {
                while MonotonicClock.nanoseconds < deadline {}
                return
            }
            timeout = remaining - Self.spinMargin
        }
        guard let ready = try? System.poll(&fds, timeout: timeout), ready > 0 else { return }
        let hangUp = Int16(POLLHUP | POLLERR | POLLNVAL)
        if fds[1].revents & hangUp != 0, fds[1].fd >= 0 {
            deviceGone(HapticsError(.deviceGone, source: device.path))
        } else if fds[1].revents & Int16(POLLIN) != 0 {
            drainInput(fds[1].fd)
        }
    }

    /// Reads and drops input events the device reports, so they do not keep waking the thread;
    /// a read that says the device is gone is how a removal shows.
    private func drainInput(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 24 * 16)
        while true {
            do {
                if try System.read(fd, into: &buffer, count: buffer.count) > 0 { continue }
            } catch {
                if error == .noDevice || error == .ioError {
                    deviceGone(HapticsError(errno: error.rawValue, source: device.path))
                }
            }
            return
        }
    }

    // MARK: Ending

    private func failPlaying(at index: Int, _ error: HapticsError) {
        if error.reason == .deviceGone { return deviceGone(error) }
        end(at: index, with: .failed(error))
    }

    private func deviceGone(_ error: HapticsError) {
        gone = error
        let ended = playing
        playing.removeAll()
        for entry in ended { entry.completion(.failed(error)) }
    }

    /// Stops and erases the pattern's effects, removes it, and reports how it ended.
    private func end(at index: Int, with completion: HapticCompletion) {
        let entry = playing.remove(at: index)
        if completion != .finished { try? device.stop(entry.effects) }
        for id in entry.effects { try? device.erase(id) }
        entry.completion(completion)
    }

    private func fail(_ error: HapticsError, completion: @Sendable (HapticCompletion) -> Void) {
        if error.reason == .deviceGone { deviceGone(error) }
        completion(.failed(error))
    }

    private func milliseconds(_ value: Int) -> UInt64 { UInt64(max(value, 0)) * 1_000_000 }
}

extension ForceFeedbackEffect {
    /// The effect without its delay: user-space timing starts each step at its own time.
    fileprivate var startingAtOnce: ForceFeedbackEffect {
        var effect = self
        effect.delay = 0
        return effect
    }
}
