public import Dispatch

extension FeedbackManager {
    /// Plays the haptic pattern (an AHAP file, `HapticPattern(ahapFileAt:)`) at `path` as one
    /// alert: its sounds mixed once into one sound (each at its time, with its volume, pan and
    /// curves, at the registry decoder's rate), its haptic events as one motor's steps
    /// (`HapticPattern.vibrationPattern`) started when that sound is heard. The profile applies as
    /// to any alert (quiet: the vibration only; silent: nothing), and the completion runs once,
    /// after both parts, with `alert` `.file(path)`. A pattern with only sounds plays as
    /// `.audioOnly`, one with only haptic events as `.vibrateOnly`.
    ///
    /// The file is read and its sounds decoded on the calling thread, before this returns (at
    /// most 64 files and 300 s of audio together).
    ///
    /// - Parameters:
    ///   - path: the AHAP file; its sounds' paths are relative to its directory.
    ///   - profile: the profile this play obeys, over `profileOverride` and the settings; nil to
    ///     obey them.
    ///   - queue: where `completion` runs.
    ///   - completion: runs exactly once, with what was done; nil for none.
    /// - Returns: the play, to stop it.
    /// - Throws: `.pattern` when the file cannot be read, is not a pattern, has nothing to play or
    ///   passes a bound; `.sound` when one of its sound files cannot be decoded.
    @discardableResult
    public func play(
        hapticPatternAt path: String, profile: FeedbackProfile? = nil, queue: DispatchQueue = .global(),
        completion: (@Sendable (FeedbackResult) -> Void)?
    ) throws(FeedbackError) -> FeedbackPlayback {
        let (sound, type, vibration) = try resolve(hapticPatternAt: path, maximumDecodedSeconds: HapticPatternSounds.maximumDecodedSeconds)
        return play(sound, type: type, vibration: vibration, profile: profile, queue: queue, completion: completion)
    }

    /// The pattern at `path` as an alert: its mixed sounds (or `.vibrationOnly` content when it
    /// has none), the feedback type its lanes make, and its vibration (`systemVibrate`, unused,
    /// when it has none). `maximumDecodedSeconds` bounds the audio its files may hold together
    /// (the service allows a play's 30 s).
    package func resolve(hapticPatternAt path: String, maximumDecodedSeconds: Double) throws(FeedbackError)
        -> (sound: ResolvedAlertSound, type: FeedbackType, vibration: VibrationPattern)
    {
        let pattern: HapticPattern
        let sounds: HapticPatternSounds
        do {
            pattern = try HapticPattern(ahapFileAt: path)
            sounds = try HapticPatternSounds(
                pattern: pattern, decoder: registry.decoder, maximumDecodedSeconds: maximumDecodedSeconds)
        } catch let error as HapticPatternError {
            throw .pattern(error)
        } catch let error as SoundError {
            throw .sound(error)
        } catch {
            throw .pattern(HapticPatternError(path: path, problem: "\(error)"))
        }
        let vibration = pattern.vibrationPattern
        let type: FeedbackType
        switch (sounds.mix != nil, vibration != nil) {
        case (true, true): type = .audioAndVibrate
        case (true, false): type = .audioOnly
        case (false, true): type = .vibrateOnly
        case (false, false): throw .pattern(HapticPatternError(path: path, problem: "the pattern has no events to play"))
        }
        let content: ResolvedAlertSound.Content = sounds.mix.map { .sound($0) } ?? .vibrationOnly
        return (ResolvedAlertSound(alert: .file(path), event: nil, file: path, content: content), type, vibration ?? .systemVibrate)
    }
}
