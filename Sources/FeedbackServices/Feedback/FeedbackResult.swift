/// What alert feedback consists of. A value; safe to share across threads.
public enum FeedbackType: String, Sendable, CaseIterable {
    /// The sound only (AudioServicesPlaySystemSound).
    case audioOnly
    /// The vibration only.
    case vibrateOnly
    /// Sound and vibration together (AudioServicesPlayAlertSound).
    case audioAndVibrate

    var wantsSound: Bool { self != .vibrateOnly }
    var wantsVibration: Bool { self != .audioOnly }
}

/// Why feedback could not be given: the underlying library's error. A value; safe to share across threads.
public enum FeedbackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A sound file (a theme's or one named by path) could not be read or decoded.
    case sound(SoundError)
    /// The registry could not give the registered sound the ID names: the ID is unknown, the
    /// persistent registry cannot be read, or the sound's file cannot be decoded.
    case registry(RegistryError)
    /// The ID is not a system sound AudioServices assigns.
    case catalog(SystemSoundCatalogError)
    /// The sound theme has no sound for the event (the lookup's explanation).
    case theme(String)
    /// The event or theme name was refused before any lookup: it could reach outside the theme
    /// directories, or the Sound Theme spec does not allow it.
    case invalidName(SoundThemeError)
    /// Playback failed.
    case playback(PlaybackError)
    /// The vibrator failed.
    case haptics(HapticsError)
    /// A haptic pattern (an AHAP file) could not be read, or passes a bound.
    case pattern(HapticPatternError)

    /// One line for logs.
    public var description: String {
        switch self {
        case .sound(let error): error.description
        case .registry(let error): error.description
        case .catalog(let error): error.description
        case .theme(let text): text
        case .invalidName(let error): error.description
        case .playback(let error): error.description
        case .haptics(let error): error.description
        case .pattern(let error): error.description
        }
    }
}

/// What happened to the sound part of one feedback play. A value; safe to share across threads.
public enum SoundOutcome: Sendable, Equatable {
    /// The sound played to its end.
    case played
    /// It was stopped (`FeedbackPlayback.stop()`, `stop(_:)`, a cancelled task) before its end.
    case stopped
    /// No sound was asked for: the feedback type is `.vibrateOnly`, or the ID only vibrates.
    case notRequested
    /// The profile does not allow sound.
    case silencedByProfile(FeedbackProfile)
    /// The sound theme disables this event on purpose (a `.disabled` file).
    case disabledByTheme
    /// No audio output could be used (no sound server).
    case noAudioOutput(PlaybackError)
    /// The sound could not be found, decoded or played.
    case failed(FeedbackError)

    /// Whether sound was heard (to its end or until stopped).
    public var didPlay: Bool { self == .played || self == .stopped }
}

/// What happened to the vibration part of one feedback play. A value; safe to share across threads.
public enum VibrationOutcome: Sendable, Equatable {
    /// The vibrator ran the pattern to its end.
    case vibrated
    /// It was stopped, or pre-empted by more important vibration, before its end.
    case stopped
    /// No vibration was asked for (`.audioOnly` with a sound ID that has a sound).
    case notRequested
    /// The profile does not allow vibration.
    case silencedByProfile(FeedbackProfile)
    /// There is no vibrator (or it may not be opened): the error says which.
    case noVibrator(HapticsError)
    /// The vibrator failed while playing.
    case failed(FeedbackError)

    /// Whether the vibrator ran (to its end or until stopped).
    public var didVibrate: Bool { self == .vibrated || self == .stopped }
}

/// What one feedback play actually did, reported once after both its sound and vibration ended.
/// A value; safe to share across threads.
public struct FeedbackResult: Sendable, Equatable {
    /// What was played.
    public let alert: AlertSound
    /// The feedback type asked for.
    public let feedbackType: FeedbackType
    /// The profile in force when the play started.
    public let profile: FeedbackProfile
    /// The sound part.
    public let sound: SoundOutcome
    /// The vibration part.
    public let vibration: VibrationOutcome

    /// The sound ID played, when the alert named one.
    public var soundID: SystemSoundID? { alert.soundID }

    /// Whether any sound played.
    public var playedSound: Bool { sound.didPlay }
    /// Whether the vibrator ran.
    public var vibrated: Bool { vibration.didVibrate }
    /// Whether nothing failed: every part played, was not asked for, or was withheld by the profile
    /// or the theme. A missing vibrator or audio output counts as a failure.
    public var succeeded: Bool {
        let soundOK: Bool =
            switch sound {
            case .played, .stopped, .notRequested, .silencedByProfile, .disabledByTheme: true
            case .noAudioOutput, .failed: false
            }
        let vibrationOK: Bool =
            switch vibration {
            case .vibrated, .stopped, .notRequested, .silencedByProfile: true
            case .noVibrator, .failed: false
            }
        return soundOK && vibrationOK
    }
}

/// The decision for one play, before anything starts: which parts run, and why the others do not.
/// A pure function of its inputs, so the whole profile matrix can be checked without a device.
struct FeedbackPlan: Equatable {
    /// Play the sound, or the outcome that replaces it.
    var sound: SoundOutcome?
    /// Vibrate, or the outcome that replaces it.
    var vibration: VibrationOutcome?

    /// - Parameters:
    ///   - hasSound: the ID has a sound (false for `kSystemSoundID_Vibrate` and the vibrate-only IDs,
    ///     which vibrate whatever the type, as on an iPhone).
    ///   - vibrator: nil when a vibrator is available, else why not.
    static func decide(
        type: FeedbackType, profile: FeedbackProfile, hasSound: Bool, vibrator: HapticsError?
    ) -> FeedbackPlan {
        var plan = FeedbackPlan()
        if !hasSound || !type.wantsSound {
            plan.sound = .notRequested
        } else if !profile.allowsSound {
            plan.sound = .silencedByProfile(profile)
        }
        if hasSound && !type.wantsVibration {
            plan.vibration = .notRequested
        } else if !profile.allowsVibration {
            plan.vibration = .silencedByProfile(profile)
        } else if let vibrator {
            plan.vibration = .noVibrator(vibrator)
        }
        return plan
    }
}
