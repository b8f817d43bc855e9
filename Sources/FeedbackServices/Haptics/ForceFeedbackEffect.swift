import CFeedbackShims

/// One force-feedback effect as the kernel takes it (`struct ff_effect`), in Swift terms.
///
/// Strengths are 0…1 and become the kernel's 16-bit magnitudes when uploaded. Times are in
/// milliseconds, as in `struct ff_replay`; the kernel's fields are 16 bits, so `length` and `delay`
/// are limited to `maximumMilliseconds`.
public struct ForceFeedbackEffect: Sendable, Equatable {
    /// The periodic waveforms of evdev (`FF_SINE`, `FF_SQUARE`, …).
    public enum Waveform: Sendable, Equatable, CaseIterable {
        /// `FF_SINE`.
        case sine
        /// `FF_SQUARE`.
        case square
        /// `FF_TRIANGLE`.
        case triangle
        /// `FF_SAW_UP`.
        case sawUp
        /// `FF_SAW_DOWN`.
        case sawDown
    }

    /// What the motor does.
    public enum Kind: Sendable, Equatable {
        /// `FF_RUMBLE`: a strong (low-frequency) and a weak (high-frequency) motor, each 0…1.
        case rumble(strong: Double, weak: Double)
        /// `FF_PERIODIC`: a waveform of `magnitude` 0…1 and `period` ms, ramping up from zero
        /// over `fadeIn` ms (`ff_envelope.attack_length`).
        case periodic(Waveform, magnitude: Double, period: Int, fadeIn: Int)
    }

    /// The longest `length` or `delay` the kernel accepts, in ms.
    public static let maximumMilliseconds = 0x7FFF

    /// What the motor does.
    public var kind: Kind
    /// How long it plays once started, in ms (`ff_replay.length`); 0 plays until stopped.
    public var length: Int
    /// How long after the play event it starts, in ms (`ff_replay.delay`).
    public var delay: Int

    /// Creates an effect.
    public init(_ kind: Kind, length: Int, delay: Int = 0) {
        self.kind = kind
        self.length = length
        self.delay = delay
    }

    /// The kernel's `struct ff_effect` for this effect under `id` (−1 asks the kernel for a new one).
    func encoded(id: Int16) -> ff_effect {
        var effect = ff_effect()
        effect.id = id
        effect.replay.length = UInt16(clamping: min(length, Self.maximumMilliseconds))
        effect.replay.delay = UInt16(clamping: min(delay, Self.maximumMilliseconds))
        switch kind {
        case .rumble(let strong, let weak):
            effect.type = UInt16(FF_RUMBLE)
            effect.u.rumble.strong_magnitude = Self.unsignedMagnitude(strong)
            effect.u.rumble.weak_magnitude = Self.unsignedMagnitude(weak)
        case .periodic(let waveform, let magnitude, let period, let fadeIn):
            effect.type = UInt16(FF_PERIODIC)
            effect.u.periodic.waveform = waveform.code
            effect.u.periodic.period = UInt16(clamping: period)
            effect.u.periodic.magnitude = Int16(clamping: Int((Self.unit(magnitude) * Double(Int16.max)).rounded()))
            effect.u.periodic.envelope.attack_length = UInt16(clamping: min(fadeIn, Self.maximumMilliseconds))
            // The envelope starts from silence only when fading in; otherwise full level at once.
            effect.u.periodic.envelope.attack_level = fadeIn > 0 ? 0 : 0x7FFF
            effect.u.periodic.envelope.fade_level = 0x7FFF
        }
        return effect
    }

    static func unsignedMagnitude(_ strength: Double) -> UInt16 {
        UInt16((unit(strength) * Double(UInt16.max)).rounded())
    }

    static func unit(_ value: Double) -> Double {
        value.isNaN ? 0 : min(max(value, 0), 1)
    }
}

extension ForceFeedbackEffect.Waveform {
    /// The evdev code (`FF_SINE`, …).
    var code: UInt16 {
        switch self {
        case .sine: UInt16(FF_SINE)
        case .square: UInt16(FF_SQUARE)
        case .triangle: UInt16(FF_TRIANGLE)
        case .sawUp: UInt16(FF_SAW_UP)
        case .sawDown: UInt16(FF_SAW_DOWN)
        }
    }
}
