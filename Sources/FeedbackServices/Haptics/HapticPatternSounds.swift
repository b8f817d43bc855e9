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
            case start(path: String, volume: Float, pan: Float)
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

    /// The sound lane as steps (`SoundStep`). `length` says how long each file plays (its decoded
    /// length; nil: unknown, the sound is taken to last to the pattern's end). The volume
    /// controls multiply and the pan controls add (as `levels(at:)` applies the haptic ones);
    /// along a curve a sound's level follows it as a linear ramp between the curve's points, and
    /// a curve starts acting at its first point as a step.
    /// - Returns: the steps, and a note when more changes were asked for than are followed.
    package func soundSteps(length: (String) -> Double?) -> (steps: [SoundStep], note: String?) {
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
            guard case .sound(let start, let path, let eventVolume, let eventPan, let cut) = event else { continue }
            defer { number += 1 }
            let natural = length(path).map { start + $0 } ?? max(patternEnd, start)
            let end = cut.map { min(start + $0, natural) } ?? natural
            let baseVolume = Float(eventVolume)
            /// This sound's pan at `time`: its own plus the controls', within −1…1.
            func soundPan(_ time: Double, before: Bool = false) -> Float {
                Float(min(max(eventPan + pan(time, before: before), -1), 1))
            }
            steps.append(
                SoundStep(
                    time: start, sound: number, action: .start(path: path, volume: baseVolume * volume(start), pan: soundPan(start))))
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
/// Bounded: at most `maximumFiles` different files, each a system sound's length at most
/// (`SoundDecoder.systemSoundDurationLimit`), together at most `maximumDecodedSeconds` of audio;
/// the mix lasts at most the pattern's 60 s plus its last sound's 30 s (35 MB at 48 kHz).
package struct HapticPatternSounds: Sendable {
    /// The most different sound files one pattern plays.
    package static let maximumFiles = 64
    /// The most audio, in seconds summed over the files, one pattern decodes.
    package static let maximumDecodedSeconds = 300.0

    /// What the lane does, in time order.
    package let steps: [HapticPattern.SoundStep]
    /// The lane, stereo at the decoder's rate; nil when the pattern has no sounds.
    package let mix: PCMBuffer?
    /// What is not played as written (too many level changes), said once.
    package let notes: [String]

    /// Decodes every sound `pattern` plays with `decoder` (its rate is the mix's), each file once,
    /// and mixes the lane; the files may hold `maximumDecodedSeconds` of audio together.
    /// - Throws: the `SoundError` of a file that cannot be played (it names the file), or a
    ///   `HapticPatternError` naming the bound passed.
    package init(
        pattern: HapticPattern, decoder: SoundDecoder = SoundDecoder(), maximumDecodedSeconds: Double = Self.maximumDecodedSeconds
    ) throws {
        var buffers: [String: PCMBuffer] = [:]
        var seconds = 0.0
        for event in pattern.events {
            guard case .sound(_, let path, _, _, _) = event, buffers[path] == nil else { continue }
            guard buffers.count < Self.maximumFiles else {
                throw HapticPatternError(path: path, problem: "a pattern plays at most \(Self.maximumFiles) different sound files")
            }
            let buffer = try decoder.decode(fileAt: path).buffer
            seconds += buffer.duration
            guard seconds <= maximumDecodedSeconds else {
                throw HapticPatternError(
                    path: path, problem: "a pattern's sound files hold at most \(Int(maximumDecodedSeconds)) s of audio together here")
            }
            buffers[path] = buffer
        }
        let (steps, note) = pattern.soundSteps { buffers[$0]?.duration }
        self.steps = steps
        notes = note.map { [$0] } ?? []
        mix = steps.isEmpty ? nil : Self.mix(steps, buffers: buffers, sampleRate: decoder.sampleRate)
    }

    /// The steps on a timeline of their own, each at its frame (rounded from its time), rendered.
    private static func mix(_ steps: [HapticPattern.SoundStep], buffers: [String: PCMBuffer], sampleRate: Int) -> PCMBuffer {
        var timeline = Timeline(sampleRate: sampleRate, history: nil)
        for step in steps {
            let frame = Int64((step.time * Double(sampleRate)).rounded())
            let id = UInt64(step.sound)
            switch step.action {
            case .start(let path, let volume, let pan):
                guard let buffer = buffers[path] else { continue }
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
