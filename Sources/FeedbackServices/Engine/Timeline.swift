/// The voices an output plays and the one set of rules by which commands change them: fade-in, a
/// `replacing` crossfade aligned to the frame, the click-free stop ramp, fade-out, volume and pan
/// ramps, and when and how each voice ends. Every output that mixes (the PulseAudio engine, the
/// file output) keeps its voices here, so the rules cannot drift apart.
///
/// It is a pure function of the commands and the frames they were applied at: rendering a range
/// gives the same samples however often it is asked, which lets the engine re-render audio the
/// server has queued and lets a file output render everything at the end. A push output (the
/// PulseAudio engine) and a pull output (a process callback, a period loop) drive it alike:
/// `apply` commands at the frame where they take effect (the read position, or a file's cursor),
/// `render` ranges, and `retire` voices once the frames they end at have been played.
///
/// Rules for a voice that is gone or already stopping:
/// - A command for a voice that is gone (never started here, retired, or past its last frame)
///   does nothing: the voice ends as it would have.
/// - A stop or fade-out of a voice already stopping takes over only if it ends the voice sooner;
///   one that ends later would cut the first fade off before it reached silence.
/// - A volume change on a stopping voice is ignored: it would undo the fade and leave a cut where
///   the voice ends. A pan change still applies.
/// - A voice that a stop, fade-out or `replacing` start reached ends `.stopped`; every other voice
///   ends `.finished` at its last frame. Each voice is reported exactly once, by `retire` or
///   `removeAll`.
/// - `.finished` promises that the last sample was played, and a device plays no faster than real
///   time: a live output stamps each start with the time it was applied, and `retire` holds a
///   voice back, whatever position it is told, until its length (less `finishSlack(length:)`) has
///   passed since then. A position that ran ahead of real time (a server catching up on the
///   cycles it missed while its thread did not run, a misreported read index) then delays a
///   finish instead of reporting one for a sound still playing; such holds are counted
///   (`heldFinishes`).
///
/// Real-time contract: `render` allocates nothing, locks nothing and never throws. `apply` and
/// `retire` run on the same thread as `render` in a live output; with the capacity reserved up
/// front they allocate nothing in the steady state (`retire` reuses its result's storage once the
/// caller has let go of the last one), except where a change needs more envelope points or voices
/// than reserved. `retire` frees the envelopes of the voices it takes out.
///
/// Thread safety: a value with no locks; whoever holds it keeps it on one thread (the engine's
/// audio thread) or under one lock (the file output's mutex).
struct Timeline {
    /// A change to the timeline, applied at a frame.
    enum Command: Sendable {
        /// A new voice `id` (unique on this timeline) plays `samples` from their frame `offset`.
        /// With `options.replacing`, that voice fades out over the frames this one fades in over.
        case start(id: UInt64, samples: VoiceSamples, offset: Int64, options: PlaybackOptions)
        /// Stops with the click-free ramp (`stopRamp` seconds).
        case stop(id: UInt64)
        /// Ramps to silence over `duration` seconds along `curve`, ending the voice where it arrives.
        case fadeOut(id: UInt64, duration: Double, curve: Envelope.Curve)
        /// Moves the gain to a level over `ramp` seconds along `curve`.
        case volume(id: UInt64, Float, ramp: Double, curve: Envelope.Curve)
        /// Moves the balance (−1…1) over `ramp` seconds.
        case pan(id: UInt64, Float, ramp: Double)

        /// Lets go of a command that will never be applied: a streamed voice's feeder stops.
        func discard() {
            if case .start(_, let samples, _, _) = self { samples.cancel() }
        }
    }

    /// Seconds a stop ramps over: short enough to sound immediate, long enough not to click.
    static let stopRamp = 0.0025

    /// Frames per second; command durations are converted at this rate.
    let sampleRate: Int
    /// Frames before a command's frame that may still be rendered again (a live output's queue):
    /// envelope points that only shape earlier frames are dropped, so envelopes stay short however
    /// often they change. Nil keeps every point, for an output that renders the whole timeline at
    /// the end.
    let history: Int64?
    /// The voices, in the order they started.
    private(set) var voices: [Voice] = []
    /// When (CLOCK_MONOTONIC seconds) a live output put each voice on the timeline, index for
    /// index with `voices` (kept apart so that the mixer's voices stay as small as they were);
    /// NaN where no time is known (an output that renders faster than real time).
    private var startTimes: [Double] = []
    /// Voices a stop, fade-out or crossfade reached: they end `.stopped`.
    private var stopping: Set<UInt64> = []
    /// `retire`'s result, kept to reuse its storage.
    private var ended: [(id: UInt64, end: PlaybackEnd)] = []
    /// Voices `retire` was told had been played before their length had passed since they
    /// started, and held back, counted once per call: each a position that ran ahead of the device.
    private(set) var heldFinishes = 0

    /// An empty timeline at `sampleRate`, with room for `capacity` voices before it allocates.
    init(sampleRate: Int, history: Int64?, capacity: Int = 64) {
        self.sampleRate = sampleRate
        self.history = history
        voices.reserveCapacity(capacity)
        startTimes.reserveCapacity(capacity)
        stopping.reserveCapacity(capacity)
        ended.reserveCapacity(capacity)
    }

    /// Whether no voice is on the timeline.
    var isEmpty: Bool { voices.isEmpty }

    /// The frame the first voice to end ends at; nil when there is none.
    var earliestEnd: Int64? {
        var earliest: Int64?
        for voice in voices where voice.end < earliest ?? .max { earliest = voice.end }
        return earliest
    }

    /// Applies `commands` in order, all at frame `now`, at `time` (see `apply(_:at:time:)`).
    mutating func apply(_ commands: some Sequence<Command>, at now: Int64, time: Double = .nan) {
        for command in commands { apply(command, at: now, time: time) }
    }

    /// Applies `command` at frame `now`: what it changes is heard from `now` on. A live output
    /// passes the CLOCK_MONOTONIC `time` it applies it at (a start is stamped with it, for
    /// `retire`); NaN, for an output that renders faster than real time, stamps nothing.
    mutating func apply(_ command: Command, at now: Int64, time: Double = .nan) {
        switch command {
        case .start(let id, let samples, let offset, let options):
            start(id, samples, offset: offset, options: options, at: now, time: time)
        case .stop(let id):
            stop(id, at: now, ramp: frames(Self.stopRamp), curve: .linear)
        case .fadeOut(let id, let duration, let curve):
            stop(id, at: now, ramp: frames(duration), curve: curve)
        case .volume(let id, let volume, let ramp, let curve):
            guard !stopping.contains(id) else { return }
            let length = frames(ramp)
            modify(id, at: now) { $0.gain.ramp(at: now, to: VolumeLimit.clamped(volume), over: length, curve: curve) }
        case .pan(let id, let pan, let ramp):
            let length = frames(ramp)
            modify(id, at: now) { $0.pan.ramp(at: now, to: pan, over: length) }
        }
    }

    /// Renders `frames` frames from timeline frame `start` into `output` (`2 × frames`
    /// interleaved floats), overwriting what was there.
    func render(from start: Int64, frames: Int, into output: UnsafeMutablePointer<Float>) {
        voices.withUnsafeBufferPointer { Mixer.render($0, from: start, frameCount: frames, into: output) }
    }

    /// Takes out every voice whose last frame lies before `frame` (all of it has been played);
    /// their streams stop. At `time` (CLOCK_MONOTONIC seconds; a live output passes the time of
    /// its call), a voice that would end `.finished` stays until its length has passed since its
    /// start was applied (`finishSlack`): a device plays no faster than real time, so a
    /// position beyond that ran ahead of it (counted in `heldFinishes`). A later call retires it.
    /// NaN, or a voice stamped with no time, holds nothing back.
    /// - Returns: each voice taken out and how it ended, in the order they ended (by last frame;
    ///   among equals, in the order they were started).
    mutating func retire(playedUpTo frame: Int64, time: Double = .nan) -> [(id: UInt64, end: PlaybackEnd)] {
        ended.removeAll(keepingCapacity: true)
        while let index = firstToEnd(by: frame, time: time) {
            let voice = voices.remove(at: index)
            startTimes.remove(at: index)
            voice.source.cancel()
            ended.append((voice.id, stopping.remove(voice.id) != nil ? .stopped : .finished))
        }
        for voice in voices where voice.end <= frame { heldFinishes += 1 }
        return ended
    }

    /// Takes out every voice, whatever it was doing (a disconnection, or the end of a file); their
    /// streams stop.
    /// - Returns: their ids, in the order they started.
    @discardableResult
    mutating func removeAll() -> [UInt64] {
        for voice in voices { voice.source.cancel() }
        defer {
            voices.removeAll(keepingCapacity: true)
            startTimes.removeAll(keepingCapacity: true)
            stopping.removeAll(keepingCapacity: true)
        }
        return voices.map(\.id)
    }

    // MARK: -

    /// A duration in frames, saturating at 2⁴⁸ frames (186 years at 48 kHz): a fade of `.infinity`
    /// or NaN seconds must not trap on the audio thread, nor overflow where envelopes add it to a
    /// frame or divide it into segments.
    private func frames(_ seconds: Double) -> Int64 {
        let frames = seconds * Double(sampleRate)
        return frames.isNaN ? 0 : Int64(min(max(0, frames), Double(Int64(1) << 48)))
    }

    private mutating func start(
        _ id: UInt64, _ samples: VoiceSamples, offset: Int64, options: PlaybackOptions, at now: Int64, time: Double
    ) {
        let fade = frames(options.fadeIn)
        // Every output applies gains here: the one place the hearing-safety cap is enforced.
        let volume = VolumeLimit.clamped(options.volume)
        var gain = Envelope(options.fadeIn > 0 ? 0 : volume)
        if options.fadeIn > 0 { gain.ramp(at: now, to: volume, over: fade, curve: options.fadeCurve) }
        if let replaced = options.replacing {
            // One command carries both ramps, so they start on the same frame and last as long.
            stop(replaced, at: now, ramp: options.fadeIn > 0 ? fade : frames(Self.stopRamp), curve: options.fadeCurve)
        }
        voices.append(
            Voice(id: id, source: samples, start: now, offset: offset, playCount: options.playCount, gain: gain,
                  pan: Envelope(min(1, max(-1, options.pan)))))
        startTimes.append(time)
    }

    private mutating func stop(_ id: UInt64, at now: Int64, ramp: Int64, curve: Envelope.Curve) {
        guard let index = index(of: id, at: now) else { return }
        if stopping.contains(id) && now + max(1, ramp) >= voices[index].end { return }
        modify(at: index, now) { $0.stop(at: now, ramp: ramp, curve: curve) }
        stopping.insert(id)
    }

    /// The voice `id` if it still sounds at `now`.
    private func index(of id: UInt64, at now: Int64) -> Int? {
        guard let index = voices.firstIndex(where: { $0.id == id }), voices[index].end > now else { return nil }
        return index
    }

    private mutating func modify(_ id: UInt64, at now: Int64, _ change: (inout Voice) -> Void) {
        guard let index = index(of: id, at: now) else { return }
        modify(at: index, now, change)
    }

    /// Changes a voice from `now` on, then forgets what only shaped frames before the history.
    private mutating func modify(at index: Int, _ now: Int64, _ change: (inout Voice) -> Void) {
        change(&voices[index])
        guard let history else { return }
        voices[index].gain.forget(before: now - history)
        voices[index].pan.forget(before: now - history)
    }

    /// The voice that ended first (the first started among equals), if any ended by `frame` and
    /// may be retired at `time`.
    private func firstToEnd(by frame: Int64, time: Double) -> Int? {
        var first: Int?
        for index in voices.indices where voices[index].end <= frame && mayFinish(at: index, time) {
            if let earliest = first, voices[earliest].end <= voices[index].end { continue }
            first = index
        }
        return first
    }

    /// Seconds a finish may come before `length` seconds have passed since its start: 1 ms of
    /// rounding, and 200 µs a second (twice the 100 ppm by which a sound card's crystal and
    /// CLOCK_MONOTONIC commonly disagree), so that a long sound on a device whose clock runs fast
    /// is not held back. The race tests hold every end to the same slack (`endViolation`).
    static func finishSlack(length: Double) -> Double { 0.001 + 0.0002 * max(0, length) }

    /// Whether the end of the voice at `index` may be reported at `time`: a stopped voice's at
    /// once (its ramp's last frame), a finishing one's once its length, less
    /// `finishSlack(length:)`, has passed since it started.
    private func mayFinish(at index: Int, _ time: Double) -> Bool {
        let voice = voices[index], started = startTimes[index]
        guard !time.isNaN, !started.isNaN, !stopping.contains(voice.id) else { return true }
        let length = Double(voice.end - voice.start) / Double(sampleRate)
        return time >= started + length - Self.finishSlack(length: length)
    }
}

/// An output whose voices are on a `Timeline`: what a handle asks for becomes a timeline command,
/// applied where the output applies commands (the read position, a file's cursor).
protocol TimelineControl: PlaybackControl {
    /// Applies `command` now, or queues it for the thread that owns the timeline.
    func send(_ command: Timeline.Command)
}

extension TimelineControl {
    /// Starts a voice `offset` seconds into `source` at `sampleRate`: what every timeline output's
    /// `play` does. The voice's start command goes to `enqueue` with its id and handle; when that
    /// refuses it (the output is closed), the stream's feeder stops and the play ends
    /// `.failed(.outputClosed)`. A source that cannot be read ends the play `.failed` at once.
    func startVoice(
        _ source: VoiceSource, from offset: Double, sampleRate: Int, options: PlaybackOptions, delivery: Delivery,
        completion: (@Sendable (PlaybackEnd) -> Void)?, reportsOnset: Bool = false,
        enqueue: (_ id: UInt64, _ handle: PlaybackHandle, _ start: Timeline.Command) -> Bool
    ) -> PlaybackHandle {
        let voice: (samples: VoiceSamples, offset: Int64)
        do {
            voice = try source.samples(at: sampleRate, from: offset, looping: options.playCount != 1, streaming: true)
        } catch {
            return PlaybackHandle.failed(error, delivery: delivery, completion: completion)
        }
        let id = nextPlaybackID()
        let handle = PlaybackHandle(id: id, control: self, delivery: delivery, completion: completion, reportsOnset: reportsOnset)
        let start = Timeline.Command.start(id: id, samples: voice.samples, offset: voice.offset, options: options)
        if !enqueue(id, handle, start) {
            voice.samples.cancel()
            handle.end(.failed(PlaybackError(.outputClosed)))
        }
        return handle
    }

    func stop(_ id: UInt64) {
        send(.stop(id: id))
    }

    func setVolume(_ id: UInt64, _ volume: Float, ramp: Double, curve: Envelope.Curve) {
        send(.volume(id: id, volume, ramp: ramp, curve: curve))
    }

    func fadeOut(_ id: UInt64, duration: Double, curve: Envelope.Curve) {
        send(.fadeOut(id: id, duration: duration, curve: curve))
    }

    func setPan(_ id: UInt64, _ pan: Float, ramp: Double) {
        send(.pan(id: id, pan, ramp: ramp))
    }
}
