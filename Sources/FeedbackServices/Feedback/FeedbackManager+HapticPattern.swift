public import Dispatch

extension FeedbackManager {
    /// Plays the haptic pattern (an AHAP file or one of our own form, `HapticPattern(fileAt:)`)
    /// at `path` as one alert: its sounds (IDs, events and files, looked up as `resolve(_:)`
    /// does) mixed once into one sound (each at its time, with its volume, pan and curves, at the
    /// registry decoder's rate), its haptic events as one motor's steps
    /// (`HapticPattern.vibrationPattern`) started when that sound is heard, and its lights (on
    /// the LEDs of `lights`) on the same clock. The profile applies as to any alert (quiet: the
    /// vibration and the lights; silent: the lights), and the completion runs once, after every
    /// part, with `alert` `.file(path)`. A pattern with only sounds (or only lights) plays as
    /// `.audioOnly`, one with only haptic events as `.vibrateOnly`. A light that cannot be shown
    /// (no LED of its colour) is skipped.
    ///
    /// The file is read and its sounds decoded on the calling thread, before this returns (at
    /// most 64 different sounds and 300 s of audio together).
    ///
    /// - Parameters:
    ///   - path: the pattern file; its sound files' paths are relative to its directory.
    ///   - profile: the profile this play obeys, over `profileOverride` and the settings; nil to
    ///     obey them.
    ///   - queue: where `completion` runs.
    ///   - completion: runs exactly once, with what was done; nil for none.
    /// - Returns: the play, to stop it.
    /// - Throws: `.pattern` when the file cannot be read, is not a pattern, has nothing to play or
    ///   passes a bound; what `resolve(_:)` throws for a sound that cannot be played.
    @discardableResult
    public func play(
        hapticPatternAt path: String, profile: FeedbackProfile? = nil, queue: DispatchQueue = .global(),
        completion: (@Sendable (FeedbackResult) -> Void)?
    ) throws(FeedbackError) -> FeedbackPlayback {
        let resolved = try resolve(hapticPatternAt: path, maximumDecodedSeconds: HapticPatternSounds.maximumDecodedSeconds)
        return play(resolved, profile: profile, delivery: .queue(queue), report: { _ in }, completion: completion)
    }

    /// The pattern file at `path` read and made ready, as `resolve(_:maximumDecodedSeconds:)`.
    /// - Throws: `.pattern` when the file cannot be read or is not a pattern; as
    ///   `resolve(_:maximumDecodedSeconds:)`.
    package func resolve(hapticPatternAt path: String, maximumDecodedSeconds: Double) throws(FeedbackError) -> ResolvedHapticPattern {
        let pattern: HapticPattern
        do {
            pattern = try HapticPattern(fileAt: path)
        } catch {
            throw .pattern(error)
        }
        return try resolve(pattern, maximumDecodedSeconds: maximumDecodedSeconds)
    }

    /// Plays `pattern` as `play(hapticPatternAt:profile:queue:completion:)` plays a file's; its
    /// sound files must be named by absolute paths.
    /// - Throws: as `play(hapticPatternAt:profile:queue:completion:)`.
    @discardableResult
    public func play(
        _ pattern: HapticPattern, profile: FeedbackProfile? = nil, queue: DispatchQueue = .global(),
        completion: (@Sendable (FeedbackResult) -> Void)?
    ) throws(FeedbackError) -> FeedbackPlayback {
        let resolved = try resolve(pattern, maximumDecodedSeconds: HapticPatternSounds.maximumDecodedSeconds)
        return play(resolved, profile: profile, delivery: .queue(queue), report: { _ in }, completion: completion)
    }

    /// `pattern` made ready to play: its sounds looked up, decoded and mixed (at most
    /// `maximumDecodedSeconds` of audio together; the service allows a play's 30 s), its
    /// vibration as one motor's steps, and the feedback type its lanes make.
    /// - Throws: `.pattern` when it has nothing to play or passes a bound; what `resolve(_:)`
    ///   throws for a sound that cannot be played.
    package func resolve(_ pattern: HapticPattern, maximumDecodedSeconds: Double) throws(FeedbackError) -> ResolvedHapticPattern {
        let name = pattern.path ?? "the pattern"
        let sounds = try sounds(of: pattern, maximumDecodedSeconds: maximumDecodedSeconds)
        let vibration = pattern.vibrationPattern
        let hasLights = pattern.events.contains(where: \.isLight)
        let type: FeedbackType
        switch (sounds.mix != nil, vibration != nil) {
        case (true, true): type = .audioAndVibrate
        case (true, false): type = .audioOnly
        case (false, false) where hasLights: type = .audioOnly
        case (false, true): type = .vibrateOnly
        case (false, false): throw .pattern(HapticPatternError(path: name, problem: "the pattern has no events to play"))
        }
        let content: ResolvedAlertSound.Content = sounds.mix.map { .sound($0) } ?? .vibrationOnly
        return ResolvedHapticPattern(
            pattern: pattern, sound: ResolvedAlertSound(alert: .file(name), event: nil, file: pattern.path, content: content),
            type: type, vibration: vibration ?? .systemVibrate, notes: pattern.notes + sounds.notes)
    }

    /// `pattern`'s sound lane: each sound looked up and decoded as `resolve(_:)` does (at the
    /// registry decoder's rate, the mix's), and mixed.
    /// - Throws: what `resolve(_:)` throws for a sound that cannot be played; `.pattern` for a
    ///   sound that has no samples (disabled by the theme, or an ID that only vibrates) or a
    ///   bound passed.
    package func sounds(of pattern: HapticPattern, maximumDecodedSeconds: Double) throws(FeedbackError) -> HapticPatternSounds {
        let name = pattern.path ?? "the pattern"
        do {
            return try HapticPatternSounds(
                pattern: pattern, sampleRate: registry.decoder.sampleRate, maximumDecodedSeconds: maximumDecodedSeconds
            ) { [self] sound in
                switch try resolve(sound).content {
                case .sound(let buffer): return buffer
                case .disabledByTheme:
                    throw FeedbackError.pattern(HapticPatternError(path: name, problem: "\(sound) is disabled by the sound theme"))
                case .vibrationOnly:
                    throw FeedbackError.pattern(HapticPatternError(path: name, problem: "\(sound) vibrates and has no sound"))
                }
            }
        } catch let error as FeedbackError {
            throw error
        } catch let error as HapticPatternError {
            throw .pattern(error)
        } catch let error as SoundError {
            throw .sound(error)
        } catch {
            throw .pattern(HapticPatternError(path: name, problem: "\(error)"))
        }
    }

    /// Plays a pattern `resolve(_:maximumDecodedSeconds:)` made ready: the sound, the vibration
    /// started when it is heard, and the lights (on `lights`) with it; `report` hears what of the
    /// lights cannot be shown.
    @discardableResult
    package func play(
        _ resolved: ResolvedHapticPattern, options: PlaybackOptions = PlaybackOptions(), profile: FeedbackProfile? = nil,
        delivery: Delivery, report: @escaping @Sendable (String) -> Void, completion: (@Sendable (FeedbackResult) -> Void)?
    ) -> FeedbackPlayback {
        let lights = LightLane(resolved.pattern, discovery: lights, report: report)
        return play(
            resolved.sound, type: resolved.type, options: options, vibration: resolved.vibration,
            lights: lights.isEmpty ? nil : lights, profile: profile, delivery: delivery, completion: completion)
    }
}

/// A haptic pattern ready to play (`FeedbackManager.resolve(_:maximumDecodedSeconds:)`).
package struct ResolvedHapticPattern: Sendable {
    /// The pattern.
    package let pattern: HapticPattern
    /// Its sounds mixed into one (`.vibrationOnly` content when it has none).
    package let sound: ResolvedAlertSound
    /// What its lanes make it: `.audioAndVibrate`, `.audioOnly` (sounds, or only lights) or `.vibrateOnly`.
    package let type: FeedbackType
    /// Its vibration (`systemVibrate`, unused, when it has none); a caller may cap it.
    package var vibration: VibrationPattern
    /// What does not play as written, said once.
    package let notes: [String]
}
