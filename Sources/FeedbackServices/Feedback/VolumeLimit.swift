/// The loudest a caller may ask a sound to play: 4 times its recorded level (+12 dB).
///
/// Why 4: alert sounds are mastered near full scale, so a gain of 4 already drives one 12 dB into
/// the output limiter, and lifts a quiet recording (peaks at −12 dBFS) to full scale. A larger gain
/// gives no more usable level, only a harder-working limiter and, on headphones, a hazard to
/// hearing. `feedbackctl` refuses a larger `--volume` (and `volume X`); the library clamps every
/// playback gain to it where the gain is applied (the timeline every mixing output drives).
///
/// A namespace of constants; safe from any thread.
public enum VolumeLimit {
    /// The largest gain: 4.0 (+12 dB).
    public static let maximum: Float = 4
    /// The gains a caller may give: silent to `maximum`.
    public static let range: ClosedRange<Float> = 0...maximum

    /// `volume` within `range`: values beyond it are clamped to its ends, and NaN is silence.
    public static func clamped(_ volume: Float) -> Float {
        volume.isNaN ? 0 : min(maximum, max(0, volume))
    }
}
