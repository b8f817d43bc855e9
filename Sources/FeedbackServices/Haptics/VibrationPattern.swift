/// What to vibrate: a sequence of steps, each a duration with an intensity (0 is a pause), played once
/// or with its tail repeated until stopped.
///
/// Patterns say nothing about the device: `HapticEngine` renders them onto what the device has —
/// rumble, or a periodic sine where only `FF_PERIODIC` exists.
public struct VibrationPattern: Sendable, Equatable {
    /// One step: the motor at `intensity` for `duration` ms.
    public struct Step: Sendable, Equatable {
        /// How long, in ms.
        public var duration: Int
        /// How strong, 0…1; 0 is a pause.
        public var intensity: Double
        /// A waveform for this step (feedbackd's periodic feedback); nil is a plain rumble.
        public var periodic: Periodic?

        /// Creates a step.
        public init(duration: Int, intensity: Double, periodic: Periodic? = nil) {
            self.duration = duration
            self.intensity = intensity
            self.periodic = periodic
        }
    }

    /// A periodic waveform with a fade-in, as feedbackd's `VibraPeriodic`.
    public struct Periodic: Sendable, Equatable {
        /// The waveform.
        public var waveform: ForceFeedbackEffect.Waveform
        /// Its period, in ms.
        public var period: Int
        /// How long it ramps up from silence, in ms.
        public var fadeIn: Int

        /// Creates a waveform description.
        public init(waveform: ForceFeedbackEffect.Waveform = .sine, period: Int = 10, fadeIn: Int = 0) {
            self.waveform = waveform
            self.period = period
            self.fadeIn = fadeIn
        }
    }

    /// Why a pattern could not be made.
    public enum Invalid: Error, Sendable, Equatable {
        /// No timings, or every step is a pause.
        case empty
        /// A negative duration.
        case negativeDuration(Int)
        /// Timings and amplitudes of different lengths.
        case amplitudeCountMismatch(timings: Int, amplitudes: Int)
        /// An intensity outside 0…1 or not a number.
        case intensityOutOfRange(Double)
        /// A repeat index outside the timings.
        case repeatIndexOutOfRange(Int)
    }

    /// The steps, in order.
    public let steps: [Step]
    /// The step the pattern repeats from, forever, once it reaches the end; nil plays once.
    public let repeatIndex: Int?

    /// Creates a pattern from steps.
    /// - Throws: `Invalid` for negative durations, intensities outside 0…1, a repeat index outside
    ///   the steps, or a pattern that never vibrates.
    public init(steps: [Step], repeatIndex: Int? = nil) throws(Invalid) {
        for step in steps {
            guard step.duration >= 0 else { throw .negativeDuration(step.duration) }
            guard (0...1).contains(step.intensity) else { throw .intensityOutOfRange(step.intensity) }
        }
        if let repeatIndex, !steps.indices.contains(repeatIndex) { throw .repeatIndexOutOfRange(repeatIndex) }
        guard steps.contains(where: { $0.intensity > 0 && $0.duration > 0 }) else { throw .empty }
        if let repeatIndex, !steps[repeatIndex...].contains(where: { $0.duration > 0 }) {
            throw .repeatIndexOutOfRange(repeatIndex)
        }
        self.steps = steps
        self.repeatIndex = repeatIndex
    }

    /// A single vibration of `duration` ms at `intensity` 0…1 (Android's `createOneShot`).
    public static func oneShot(duration: Int, intensity: Double = 1) throws(Invalid) -> VibrationPattern {
        try VibrationPattern(steps: [Step(duration: duration, intensity: intensity)])
    }

    /// A waveform as Android's `VibrationEffect.createWaveform`.
    ///
    /// Without amplitudes, timings alternate off and on, starting with off: `[0, 200, 100, 200]`
    /// buzzes 200 ms, pauses 100 ms, buzzes 200 ms. With amplitudes (0…1, one per timing), each
    /// timing plays at its amplitude and 0 is a pause. `repeatIndex` is the timing to repeat from.
    public static func waveform(
        timings: [Int], amplitudes: [Double]? = nil, repeatIndex: Int? = nil
    ) throws(Invalid) -> VibrationPattern {
        let levels = amplitudes ?? timings.indices.map { $0 % 2 == 0 ? 0 : 1 }
        guard levels.count == timings.count else {
            throw .amplitudeCountMismatch(timings: timings.count, amplitudes: levels.count)
        }
        return try VibrationPattern(
            steps: zip(timings, levels).map { Step(duration: $0, intensity: $1) }, repeatIndex: repeatIndex)
    }

    /// feedbackd's rumble: `count` pulses spread over `duration` ms, each followed by `pause` ms, at
    /// `magnitude` 0…1. Each pulse lasts `duration / count − pause`.
    public static func rumble(duration: Int, count: Int = 1, pause: Int = 0, magnitude: Double = 1) throws(Invalid)
        -> VibrationPattern
    {
        let pulses = max(count, 1)
        let period = duration / pulses
        guard period - pause > 0 else { throw .empty }
        var steps: [Step] = []
        for _ in 0..<pulses {
            steps.append(Step(duration: period - pause, intensity: magnitude))
            if pause > 0 { steps.append(Step(duration: pause, intensity: 0)) }
        }
        return try VibrationPattern(steps: steps)
    }

    /// feedbackd's periodic: a `waveform` of `magnitude` 0…1 for `duration` ms, fading in over `fadeIn` ms.
    public static func periodic(
        duration: Int, magnitude: Double = 1, waveform: ForceFeedbackEffect.Waveform = .sine, period: Int = 10,
        fadeIn: Int = 0
    ) throws(Invalid) -> VibrationPattern {
        try VibrationPattern(steps: [
            Step(duration: duration, intensity: magnitude, periodic: Periodic(waveform: waveform, period: period, fadeIn: fadeIn))
        ])
    }

    /// The buzz of `kSystemSoundID_Vibrate`: 400 ms at full strength, as the iPhone's.
    public static let systemVibrate = try! VibrationPattern.oneShot(duration: 400)

    /// The length of one pass through the steps, in ms.
    public var duration: Int { steps.reduce(0) { $0 + $1.duration } }
}
