extension HapticPattern {
    /// What the sound lane does, and when: each sound's start (with the volume and pan controls
    /// at that instant applied), the changes of its level and pan while it plays, and where its
    /// `duration` cuts it; in time order (at one instant, in the order they were made).
    package struct SoundStep: Sendable, Equatable {
        /// Seconds from the pattern's start.
        package var time: Double
        /// Which sound of the pattern (its place among the sound events).
        package var sound: Int
        /// What happens to it.
        package var action: Action

        package enum Action: Sendable, Equatable {
            /// It starts.
            case start(sound: AlertSound, volume: Float, pan: Float)
            /// Its level moves to `volume` over `ramp` seconds (0: at once), linearly.
            case volume(Float, ramp: Double)
            /// Its pan moves to `pan` over `ramp` seconds, linearly.
            case pan(Float, ramp: Double)
            /// It is cut (its `duration` ended).
            case stop
        }
    }

    /// The most level and pan changes a pattern's sounds follow (`Limits.totalCurvePoints`): past
    /// it, a sound keeps the level it reached, and `soundSteps` says so.
    package static let maximumSoundChanges = Limits.totalCurvePoints

    /// The sound lane as steps (`SoundStep`). `length` says how long each sound plays (its decoded
    /// length; nil: unknown, the sound is taken to last to the pattern's end). The volume
    /// controls multiply and the pan controls add (as `levels(at:)` applies the haptic ones);
    /// along a curve a sound's level follows it as a linear ramp between the curve's points, and
    /// a curve starts acting at its first point as a step.
    /// - Returns: the steps, and a note when more changes were asked for than are followed.
    package func soundSteps(length: (AlertSound) -> Double?) -> (steps: [SoundStep], note: String?) {
        let volumeCurves = curves.filter { $0.control == .audioVolume }
        let panCurves = curves.filter { $0.control == .audioPan }
        /// The controls' combined value at `time`; `before` asks for it just before `time` (a
        /// curve whose first point is at `time` does not act yet).
        func combined(_ curves: [Curve], at time: Double, before: Bool, neutral: Double, _ join: (Double, Double) -> Double)
            -> Double
        {
            curves.reduce(neutral) { value, curve in
                guard let first = curve.points.first, before ? time > first.time : time >= first.time else { return value }
                return join(value, curve.value(at: time) ?? neutral)
            }
        }
        func volume(_ time: Double, before: Bool = false) -> Float {
            Float(min(max(combined(volumeCurves, at: time, before: before, neutral: 1, *), 0), 1))
        }
        func pan(_ time: Double, before: Bool = false) -> Double { combined(panCurves, at: time, before: before, neutral: 0, +) }
        let volumeTimes = Set(volumeCurves.flatMap { $0.points.map(\.time) }).sorted()
        let panTimes = Set(panCurves.flatMap { $0.points.map(\.time) }).sorted()
        let patternEnd = duration

        var steps: [SoundStep] = []
        var changes = 0
        var dropped = 0
        var number = 0
        for event in events {
            guard case .sound(let start, let sound, let eventVolume, let eventPan, let cut) = event else { continue }
            defer { number += 1 }
            let natural = length(sound).map { start + $0 } ?? max(patternEnd, start)
            let end = cut.map { min(start + $0, natural) } ?? natural
            let baseVolume = Float(eventVolume)
            /// This sound's pan at `time`: its own plus the controls', within −1…1.
            func soundPan(_ time: Double, before: Bool = false) -> Float {
                Float(min(max(eventPan + pan(time, before: before), -1), 1))
            }
            steps.append(
                SoundStep(
                    time: start, sound: number, action: .start(sound: sound, volume: baseVolume * volume(start), pan: soundPan(start))))
            /// From each breakpoint inside the sound to the next: a ramp to the value just before
            /// the next, and a step where a curve starts there.
            func follow(_ times: [Double], _ value: (Double, Bool) -> Float, _ make: (Float, Double) -> SoundStep.Action) {
                let inside = times.filter { $0 > start && $0 < end }
                var from = start
                for time in inside {
                    guard changes < Self.maximumSoundChanges else {
                        dropped += 1
                        continue
                    }
                    let reached = value(time, true)
                    let now = value(time, false)
                    if reached != value(from, false) {
                        steps.append(SoundStep(time: from, sound: number, action: make(reached, time - from)))
                        changes += 1
                    }
                    if now != reached {
                        steps.append(SoundStep(time: time, sound: number, action: make(now, 0)))
                        changes += 1
                    }
                    from = time
                }
            }
            follow(volumeTimes, { time, before in baseVolume * volume(time, before: before) }) { .volume($0, ramp: $1) }
            follow(panTimes, { time, before in soundPan(time, before: before) }) { .pan($0, ramp: $1) }
            if let cut, start + cut < natural { steps.append(SoundStep(time: start + cut, sound: number, action: .stop)) }
        }
        let ordered = steps.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        let note =
            dropped == 0
            ? nil
            : "the sounds' volume and pan curves ask for \(changes + dropped) changes; the first "
                + "\(Self.maximumSoundChanges) are followed, and a sound keeps the level it reached after them"
        return (ordered, note)
    }
}

/// A pattern's sound lane, mixed once into one buffer: each sound at its frame, with its volume
/// and pan, the volume and pan curves followed, the cuts made, all through the engine's timeline
/// and mixer, sample-exactly. Played as one sound, the lane keeps its timing on any output (its
/// sounds cannot drift apart on a busy machine), and it is what a file of it holds.
///
/// Bounded: at most `maximumSounds` different sounds, each a system sound's length at most
/// (`SoundDecoder.systemSoundDurationLimit`), together at most `maximumDecodedSeconds` of audio;
/// the mix lasts at most the pattern's 60 s plus its last sound's 30 s (35 MB at 48 kHz).
package struct HapticPatternSounds: Sendable {
    /// The most different sounds (IDs, events, files) one pattern plays.
    package static let maximumSounds = 64
    /// The most audio, in seconds summed over the sounds, one pattern decodes.
    package static let maximumDecodedSeconds = 300.0

    /// What the lane does, in time order.
    package let steps: [HapticPattern.SoundStep]
    /// The lane, stereo at `sampleRate`; nil when the pattern has no sounds.
    package let mix: PCMBuffer?
    /// What is not played as written (too many level changes), said once.
    package let notes: [String]

    /// Loads every sound `pattern` plays with `load` (each once; `load` gives it at `sampleRate`,
    /// the mix's rate) and mixes the lane; the sounds may hold `maximumDecodedSeconds` of audio
    /// together.
    /// - Throws: what `load` throws for a sound that cannot be played (naming it), or a
    ///   `HapticPatternError` naming the bound passed.
    package init(
        pattern: HapticPattern, sampleRate: Int, maximumDecodedSeconds: Double = Self.maximumDecodedSeconds,
        load: (AlertSound) throws -> PCMBuffer
    ) throws {
        var buffers: [AlertSound: PCMBuffer] = [:]
        var seconds = 0.0
        let name = pattern.path ?? "the pattern"
        for event in pattern.events {
            guard case .sound(_, let sound, _, _, _) = event, buffers[sound] == nil else { continue }
            guard buffers.count < Self.maximumSounds else {
                throw HapticPatternError(path: name, problem: "a pattern plays at most \(Self.maximumSounds) different sounds")
            }
            let buffer = try load(sound)
            seconds += buffer.duration
            guard seconds <= maximumDecodedSeconds else {
                throw HapticPatternError(
                    path: name, problem: "a pattern's sounds hold at most \(Int(maximumDecodedSeconds)) s of audio together here (\(sound) passes it)")
            }
            buffers[sound] = buffer
        }
        let (steps, note) = pattern.soundSteps { buffers[$0]?.duration }
        self.steps = steps
        notes = note.map { [$0] } ?? []
        mix = steps.isEmpty ? nil : Self.mix(steps, buffers: buffers, sampleRate: sampleRate)
    }

    /// `init(pattern:sampleRate:maximumDecodedSeconds:load:)` for a pattern whose sounds are all
    /// files, decoded with `decoder` (at its rate); an ID or event is refused (it needs a sound
    /// theme: `FeedbackManager` plays those).
    package init(pattern: HapticPattern, decoder: SoundDecoder = SoundDecoder()) throws {
        try self.init(pattern: pattern, sampleRate: decoder.sampleRate) { sound in
            guard case .file(let path) = sound else {
                throw HapticPatternError(path: pattern.path ?? "the pattern", problem: "\(sound) needs a sound theme to be found")
            }
            return try decoder.decode(fileAt: path).buffer
        }
    }

    /// The steps on a timeline of their own, each at its frame (rounded from its time), rendered.
    private static func mix(_ steps: [HapticPattern.SoundStep], buffers: [AlertSound: PCMBuffer], sampleRate: Int) -> PCMBuffer {
        var timeline = Timeline(sampleRate: sampleRate, history: nil)
        for step in steps {
            let frame = Int64((step.time * Double(sampleRate)).rounded())
            let id = UInt64(step.sound)
            switch step.action {
            case .start(let sound, let volume, let pan):
                guard let buffer = buffers[sound] else { continue }
                timeline.apply(
                    .start(id: id, samples: .buffer(buffer), offset: 0, options: PlaybackOptions(volume: volume, pan: pan)), at: frame)
            case .volume(let volume, let ramp): timeline.apply(.volume(id: id, volume, ramp: ramp, curve: .linear), at: frame)
            case .pan(let pan, let ramp): timeline.apply(.pan(id: id, pan, ramp: ramp), at: frame)
            case .stop: timeline.apply(.stop(id: id), at: frame)
            }
        }
        let frames = Int(timeline.voices.map(\.end).max() ?? 0)
        var samples = [Float](repeating: 0, count: frames * 2)
        samples.withUnsafeMutableBufferPointer { output in
            if let base = output.baseAddress, frames > 0 { timeline.render(from: 0, frames: frames, into: base) }
        }
        return PCMBuffer(validSamples: samples, channelCount: 2, sampleRate: sampleRate)
    }
}
