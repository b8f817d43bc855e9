/// A short named haptic effect, as phones name them (Android's composition primitives and
/// predefined effects, Core Haptics' transients): what a key click, a toggle or a slider's end
/// feels like. Each is a few steps a rumble motor plays as written (kernel-timed) and a
/// periodic-only device plays as a sine (`HapticEngine`), made with `VibrationPattern.primitive`.
///
/// Tuned for the motors Linux phones have (eccentric-mass rumble motors behind memless drivers):
/// an eccentric mass needs about 10 ms at full drive to be felt at all, so the clicks are 10–30 ms
/// of full drive rather than a 2 ms pulse a linear actuator would take, and a rise starts at 0.2,
/// below which such a motor does not turn. A memless driver steps an envelope every 50 ms, so
/// the rises are plain steps of 10–25 ms, not envelopes. A value; safe to share across threads.
public enum HapticPrimitive: String, Sendable, CaseIterable {
    /// A crisp tap: 20 ms at full strength.
    case click
    /// Two clicks 100 ms apart (20 ms, 80 ms pause, 20 ms).
    case doubleClick = "double-click"
    /// A stronger, longer tap: 30 ms at full strength.
    case heavyClick = "heavy-click"
    /// The lightest tap: 10 ms at half strength (a list's detent, a key's repeat).
    case tick
    /// A dull, heavy knock: 15 ms at full strength, then 45 ms at 0.35 as it settles.
    case thud
    /// A swell in 50 ms: 0.2 to 1 in five 10 ms steps.
    case quickRise = "quick-rise"
    /// A swell in 150 ms: 0.2 to 1 in six 25 ms steps.
    case slowRise = "slow-rise"
    /// A fade in 50 ms: 1 to 0.2 in five 10 ms steps.
    case quickFall = "quick-fall"

    /// Its steps at full intensity: (ms, strength 0…1; 0 is a pause).
    public var steps: [(duration: Int, intensity: Double)] {
        switch self {
        case .click: [(20, 1)]
        case .doubleClick: [(20, 1), (80, 0), (20, 1)]
        case .heavyClick: [(30, 1)]
        case .tick: [(10, 0.5)]
        case .thud: [(15, 1), (45, 0.35)]
        case .quickRise: [(10, 0.2), (10, 0.4), (10, 0.6), (10, 0.8), (10, 1)]
        case .slowRise: [(25, 0.2), (25, 0.36), (25, 0.52), (25, 0.68), (25, 0.84), (25, 1)]
        case .quickFall: [(10, 1), (10, 0.8), (10, 0.6), (10, 0.4), (10, 0.2)]
        }
    }
}

extension VibrationPattern {
    /// `primitive` with every step's strength scaled by `intensity` (0…1). The device's own cap
    /// (`HapticEngine.maximumStrength`, the service's `max-haptic-strength`) applies on top, as to
    /// every pattern.
    /// - Throws: `Invalid.intensityOutOfRange` for an intensity outside 0…1; `.empty` for 0.
    public static func primitive(_ primitive: HapticPrimitive, intensity: Double = 1) throws(Invalid) -> VibrationPattern {
        guard (0...1).contains(intensity) else { throw .intensityOutOfRange(intensity) }
        return try VibrationPattern(steps: primitive.steps.map { Step(duration: $0.duration, intensity: $0.intensity * intensity) })
    }
}
