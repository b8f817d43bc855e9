import FeedbackServices

/// The exit codes of `feedbackctl`, from `sysexits.h`.
public enum ExitCode: Int32, Sendable {
    /// Success.
    case success = 0
    /// What was checked is not valid: `feedback-theme check`'s answer, 1 as feedbackd's
    /// `fbd-theme-validate` gives it (scripts compare the two), not a `sysexits.h` code.
    case invalid = 1
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

    /// The failure a library error is: its message, and its exit code from the table below.
    /// A usage error also points to `feedbackctl help`.
    init(_ error: some ReportedError) {
        message = error.description
        exitCode = error.exitCode
        showUsage = exitCode == .usage
    }
}

/// An error of one of the library's domains, which a command reports as it is.
protocol ReportedError: Error, CustomStringConvertible {
    /// The code `feedbackctl` exits with for it.
    var exitCode: ExitCode { get }
}

// MARK: - The exit-code table
//
// Every case of every error domain a command reports, and the code it exits with. Each switch is
// exhaustive: a new case does not compile until it has its code here.

extension SoundError: ReportedError {
    /// Reading and decoding a sound.
    var exitCode: ExitCode {
        switch reason {
        case .notFound, .isDirectory, .notARegularFile: .noInput
        case .permissionDenied: .noPermission
        case .ioError: .ioError
        case .notASoundFile, .malformed, .unsupportedEncoding, .empty, .exceedsMaximumDuration, .tooManyChannels,
            .invalidSampleRate, .invalidSamples:
            .dataError
        case .libraryUnavailable: .unavailable
        }
    }
}

extension RegistryError: ReportedError {
    /// What a registry refuses; what failed beneath it keeps its own code.
    var exitCode: ExitCode {
        switch reason {
        case .unknownSoundID: .noInput
        case .persistentSoundID: .usage
        case .soundIDsExhausted: .software
        case .registryDamaged, .loudnessUnmeasurable: .dataError
        case .registryBusy: .temporaryFailure
        case .noDefaultLocation: .unavailable
        case .sound(let error): error.exitCode
        case .file(let error): error.exitCode
        }
    }
}

extension FileError: ReportedError {
    /// Our own files and the sound files we write.
    var exitCode: ExitCode {
        switch reason {
        case .notFound, .notARegularFile: .noInput
        case .permissionDenied: .noPermission
        case .tooLarge, .tooLong: .dataError
        case .ioError: .ioError
        case .cannotCreate, .cannotWrite: .cannotCreate
        }
    }
}

extension HapticPatternError: ReportedError {
    /// A haptic pattern file: the file's own error, else missing or not a pattern.
    var exitCode: ExitCode { fileError?.exitCode ?? (problem == "no such file" ? .noInput : .dataError) }
}

extension HapticsError: ReportedError {
    /// Vibrators.
    var exitCode: ExitCode {
        switch reason {
        case .permissionDenied: .noPermission
        case .ioError: .ioError
        case .noDevice, .deviceGone, .noFreeEffectSlot, .unsupported: .unavailable
        }
    }
}

extension LEDError: ReportedError {
    /// LEDs.
    var exitCode: ExitCode {
        switch reason {
        case .permissionDenied: .noPermission
        case .invalidArgument: .usage
        case .ioError: .ioError
        case .noDevice, .deviceGone, .unsupportedColor: .unavailable
        }
    }
}

extension PlaybackError: ReportedError {
    /// Audio outputs.
    var exitCode: ExitCode {
        switch reason {
        case .noAudioOutput, .serverUnavailable, .connectionLost, .serverStalled, .canberra, .outputClosed,
            .unsupportedSound, .deviceBusy, .deviceUnavailable, .deviceLost, .libraryUnavailable:
            .unavailable
        }
    }
}

extension SoundServerError: ReportedError {
    /// Asking the sound server about itself.
    var exitCode: ExitCode {
        switch reason {
        case .unavailable, .timedOut, .queryFailed: .unavailable
        }
    }
}

extension SoundThemeError: ReportedError {
    /// Names refused before a theme lookup: they came from the command line.
    var exitCode: ExitCode {
        switch reason {
        case .invalidEventName, .invalidThemeName: .usage
        }
    }
}

extension SystemSoundCatalogError: ReportedError {
    /// System sound IDs.
    var exitCode: ExitCode {
        switch reason {
        case .unassigned, .notASystemSound, .vibrationOnly: .noInput
        }
    }
}

extension FeedbackError: ReportedError {
    /// An alert: the code of the error beneath it.
    var exitCode: ExitCode {
        switch self {
        case .sound(let error): error.exitCode
        case .registry(let error): error.exitCode
        case .catalog(let error): error.exitCode
        case .theme: .noInput
        case .invalidName(let error): error.exitCode
        case .playback(let error): error.exitCode
        case .haptics(let error): error.exitCode
        case .pattern(let error): error.exitCode
        }
    }
}
