/// A pattern rendered for one device: the effects to upload and when each starts.
///
/// A pattern becomes one or two phrases: the steps before the repeat index, played once, and the
/// steps from it, repeated until stopped (or just one phrase of all steps). Within a phrase each
/// vibrating step is one effect whose `delay` is its offset from the phrase start, so the kernel (or
/// the device) can time the whole phrase from a single write of play events.
struct RenderedPattern: Sendable, Equatable {
    struct Step: Sendable, Equatable {
        /// Start in ms from the phrase start; equal to `effect.delay`.
        var offset: Int
        var effect: ForceFeedbackEffect
    }

    struct Phrase: Sendable, Equatable {
        var steps: [Step]
        /// Length in ms, including trailing pauses: when the next phrase (or repetition) starts.
        var duration: Int
        var repeats: Bool
    }

    var phrases: [Phrase]

    /// How many effects kernel timing needs: one per vibrating step.
    var effectCount: Int { phrases.reduce(0) { $0 + $1.steps.count } }

    /// Whether every delay fits the kernel's 15-bit field, so the kernel can time the steps.
    var fitsKernelTiming: Bool {
        phrases.allSatisfy { $0.steps.allSatisfy { $0.offset <= ForceFeedbackEffect.maximumMilliseconds } }
    }
}

/// How a playing pattern's steps are timed.
enum StepTiming: Sendable, Equatable {
    /// Every step uploaded at once with its `replay.delay`; one write starts a whole phrase.
    case kernel
    /// Steps uploaded into `slots` (1 or 2) effects in turn and started by the engine at their time.
    case userSpace(slots: Int)
}

/// The pure decisions of haptics: rendering patterns onto a device, choosing the timing, choosing
/// whom a new pattern pre-empts.
enum PatternRenderer {
    /// Period of the sine that stands in for rumble on devices that only have `FF_PERIODIC`:
    /// fast enough to feel like a buzz, as feedbackd uses for its periodic feedback.
    static let periodicStandInPeriod = 10

    /// Renders `pattern` for a device with `capabilities`, every intensity scaled by `maximumStrength`.
    static func render(
        _ pattern: VibrationPattern, capabilities: ForceFeedbackCapabilities, maximumStrength: Double
    ) -> RenderedPattern {
        let strength = ForceFeedbackEffect.unit(maximumStrength)
        let split = pattern.repeatIndex ?? pattern.steps.count
        var phrases: [RenderedPattern.Phrase] = []
        for (range, repeats) in [(0..<split, false), (split..<pattern.steps.count, true)] where !range.isEmpty {
            var offset = 0
            var steps: [RenderedPattern.Step] = []
            for step in pattern.steps[range] {
                let intensity = step.intensity * strength
                var remaining = step.duration
                // The kernel's length field is 15 bits; a longer step becomes back-to-back effects.
                while remaining > 0 {
                    let length = min(remaining, ForceFeedbackEffect.maximumMilliseconds)
                    if intensity > 0 {
                        let kind = kind(for: step, intensity: intensity, capabilities: capabilities)
                        steps.append(.init(offset: offset, effect: ForceFeedbackEffect(kind, length: length, delay: offset)))
                    }
                    offset += length
                    remaining -= length
                }
            }
            phrases.append(.init(steps: steps, duration: offset, repeats: repeats))
        }
        return RenderedPattern(phrases: phrases)
    }

    /// The effect for a step on this device: rumble where the device rumbles, a periodic waveform where
    /// the step asks for one and the device has it, a sine stand-in where only `FF_PERIODIC` exists.
    static func kind(
        for step: VibrationPattern.Step, intensity: Double, capabilities: ForceFeedbackCapabilities
    ) -> ForceFeedbackEffect.Kind {
        let hasPeriodic = capabilities.contains(.periodic)
        if let periodic = step.periodic, hasPeriodic {
            let waveform = capabilities.contains(waveformCapability(periodic.waveform)) ? periodic.waveform : .sine
            return .periodic(waveform, magnitude: intensity, period: periodic.period, fadeIn: periodic.fadeIn)
        }
        if capabilities.contains(.rumble) || !hasPeriodic {
            return .rumble(strong: intensity, weak: intensity)
        }
        return .periodic(.sine, magnitude: intensity, period: periodicStandInPeriod, fadeIn: 0)
    }

    static func waveformCapability(_ waveform: ForceFeedbackEffect.Waveform) -> ForceFeedbackCapabilities {
        switch waveform {
        case .sine: .sine
        case .square: .square
        case .triangle: .triangle
        case .sawUp: .sawUp
        case .sawDown: .sawDown
        }
    }

    /// Kernel timing when every step gets its own slot; otherwise the engine times the steps with one
    /// slot, or two so the next step is uploaded while the current one plays. Nil: no slot at all.
    static func timing(for pattern: RenderedPattern, freeSlots: Int) -> StepTiming? {
        let needed = pattern.effectCount
        if needed <= freeSlots && pattern.fitsKernelTiming { return .kernel }
        guard freeSlots >= 1 else { return nil }
        return .userSpace(slots: min(2, freeSlots, needed))
    }

    /// The playing patterns a new one of `priority` pre-empts: those of strictly lower priority, so the
    /// motor is not shared with a less important pattern; equal priorities play together.
    static func preempted<ID>(by priority: HapticPriority, among playing: [(id: ID, priority: HapticPriority)]) -> [ID] {
        playing.filter { $0.priority < priority }.map(\.id)
    }
}
