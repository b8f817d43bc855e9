import FeedbackServices

/// The exit codes of `feedbackctl`, from `sysexits.h`.
public enum ExitCode: Int32, Sendable {
    /// Success.
    case success = 0
    /// `EX_USAGE`: the command was used wrongly (unknown command or option, bad argument).
    case usage = 64
    /// `EX_DATAERR`: the input is not usable data (not a sound file, damaged, too long, …).
    case dataError = 65
    /// `EX_NOINPUT`: an input file does not exist or is not a readable regular file.
    case noInput = 66
    /// `EX_UNAVAILABLE`: a service or device that is needed is not there.
    case unavailable = 69
    /// `EX_SOFTWARE`: an internal error.
    case software = 70
    /// `EX_CANTCREAT`: an output file cannot be created.
    case cannotCreate = 73
    /// `EX_IOERR`: an input/output error.
    case ioError = 74
    /// `EX_TEMPFAIL`: try again later (another process holds the sound registry's lock).
    case temporaryFailure = 75
    /// `EX_NOPERM`: permission denied.
    case noPermission = 77
    /// Stopped by Ctrl-C (128 + SIGINT), after stopping the sound.
    case interrupted = 130
    /// Stopped by SIGTERM (128 + SIGTERM), after stopping the sound.
    case terminated = 143
}

/// A failure of a `feedbackctl` command: the message for stderr and the exit code.
struct CommandError: Error {
    var message: String
    var exitCode: ExitCode
    var showUsage = false

    static func usage(_ message: String) -> CommandError {
        CommandError(message: message, exitCode: .usage, showUsage: true)
    }

    init(message: String, exitCode: ExitCode, showUsage: Bool = false) {
        self.message = message
        self.exitCode = exitCode
        self.showUsage = showUsage
    }

    init(soundError error: SoundError) {
        message = error.description
        exitCode = Self.exitCode(for: error.reason)
    }

    static func exitCode(for reason: SoundError.Reason) -> ExitCode {
        switch reason {
        case .notFound, .isDirectory, .notARegularFile: .noInput
        case .permissionDenied: .noPermission
        case .ioError: .ioError
        case .writeFailed: .cannotCreate
        case .unknownSoundID: .noInput
        case .registryBusy: .temporaryFailure
        case .soundIDsExhausted: .software
        case .persistentSoundID: .usage
        case .notASoundFile, .malformed, .unsupportedEncoding, .empty, .exceedsMaximumDuration,
            .tooManyChannels, .invalidSampleRate, .invalidSamples, .loudnessUnmeasurable, .registryDamaged:
            .dataError
        }
    }
}

extension CommandError {
    /// A failure of an alert, with the exit code of the error beneath it.
    init(feedbackError error: FeedbackError) {
        switch error {
        case .sound(let error): self.init(soundError: error)
        case .haptics(let error): self.init(hapticsError: error)
        case .invalidName(let error): self = .usage(error.description)
        case .catalog, .theme: self.init(message: error.description, exitCode: .noInput)
        case .playback: self.init(message: error.description, exitCode: .unavailable)
        }
    }

    init(hapticsError error: HapticsError) {
        message = error.description
        exitCode =
            switch error.reason {
            case .permissionDenied: .noPermission
            case .ioError: .ioError
            case .noDevice, .deviceGone, .noFreeEffectSlot, .unsupported: .unavailable
            }
    }
}
