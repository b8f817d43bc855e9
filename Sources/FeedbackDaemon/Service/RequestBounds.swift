import FeedbackBus
import FeedbackServices

/// The bounds on what a client's request may carry, the same on every interface of the service:
/// names, and vibration patterns (`Haptic.Vibrate` and SystemSounds1's `Vibrate` take the same).
package enum RequestBounds {
    /// The longest app id, event name, sound name or detached group accepted, in bytes.
    package static let maximumNameLength = 255
    /// The most steps a vibration pattern may have.
    package static let maximumVibrateSteps = 64
    /// The longest step of a vibration pattern, in ms (feedbackd's bound too).
    package static let maximumVibrateStep = 10_000
    /// The largest sound file read for a client (a `sound-file` hint, `RegisterFD`), in bytes: a
    /// 30 s sound (the decoder's limit) of 48 kHz stereo 32-bit PCM is 11 MiB; this leaves room
    /// for higher rates and lossless containers.
    package static let maximumSoundFileBytes = 64 << 20

    /// A vibration pattern's (magnitude, ms) steps, checked: magnitudes 0…1, at most
    /// `maximumVibrateStep` ms a step and `FeedbackTheme.maximumDuration` ms in all (the step count
    /// is bounded as the pattern is read, with `maximumVibrateSteps`).
    /// - Throws: `InvalidArgs` naming what is out of bounds.
    static func vibrationSteps(_ steps: [(Double, UInt32)]) throws(BusError) -> [VibrationPattern.Step] {
        var pattern: [VibrationPattern.Step] = []
        for (magnitude, duration) in steps {
            guard magnitude.isFinite, (0...1).contains(magnitude) else {
                throw .invalidArgs("magnitude \(magnitude) is outside 0…1")
            }
            guard duration <= maximumVibrateStep else {
                throw .invalidArgs("a step of \(duration) ms is longer than \(maximumVibrateStep) ms")
            }
            pattern.append(VibrationPattern.Step(duration: Int(duration), intensity: magnitude))
        }
        let total = pattern.reduce(0) { $0 + $1.duration }
        guard total <= FeedbackTheme.maximumDuration else {
            throw .invalidArgs("the pattern lasts \(total) ms, more than \(FeedbackTheme.maximumDuration) ms")
        }
        return pattern
    }
}
