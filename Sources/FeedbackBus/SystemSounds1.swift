/// The names of `org.feedbackservices.SystemSounds1`, feedbackservicesd's own interface, for the
/// service that serves it and the clients that call it (feedbackctl).
/// `share/dbus-1/interfaces/org.feedbackservices.SystemSounds1.xml` documents its members.
package enum SystemSounds1 {
    /// The well-known name, owned beside `org.sigxcpu.Feedback`: a client that finds it knows it
    /// talks to feedbackservicesd, not feedbackd.
    package static let busName = "org.feedbackservices.SystemSounds1"
    /// The object.
    package static let objectPath = "/org/feedbackservices/SystemSounds1"
    /// The interface.
    package static let interface = "org.feedbackservices.SystemSounds1"

    /// Where the running service writes its process ID (`$XDG_RUNTIME_DIR/feedbackservicesd.pid`),
    /// so that a client can tell it is not running without connecting to the bus; nil without an
    /// absolute `XDG_RUNTIME_DIR`.
    package static func pidFile(environment: [String: String]) -> String? {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return "\(runtime)/feedbackservicesd.pid"
    }

    /// The interface's own errors (the others are the standard `org.freedesktop.DBus.Error.*`).
    package enum ErrorName {
        /// No sound has this ID, or the theme has no sound for the event.
        package static let noSuchSound = "org.feedbackservices.SystemSounds1.Error.NoSuchSound"
        /// The sound's file cannot be read or decoded, or the registry is damaged.
        package static let badSound = "org.feedbackservices.SystemSounds1.Error.BadSound"
        /// `Vibrate`: the service has no vibrator it can open.
        package static let noVibrator = "org.feedbackservices.SystemSounds1.Error.NoVibrator"
    }

    /// `PlayEnded`'s `how`.
    package enum How: String, Sendable {
        /// It ran its course (played, or the profile or theme allowed nothing: `why` says).
        case finished
        /// `Stop`, `StopAll`, `StopDetached` or the service stopping ended it early.
        case stopped
        /// It could not play.
        case failed
    }

    /// The first word of `PlayEnded`'s `why`.
    package enum Why {
        /// finished: the sound (and vibration) played to the end.
        package static let played = "played"
        /// finished: the profile allowed no part of it.
        package static let silenced = "silenced"
        /// finished: the sound theme disables the event on purpose.
        package static let disabled = "disabled"
        /// finished: an ID that only vibrates vibrated.
        package static let vibrated = "vibrated"
        /// stopped: `Stop`, `StopAll` or `StopDetached`.
        package static let stopCalled = "stop"
        /// stopped: the service is stopping (SIGTERM, replaced).
        package static let serviceStopping = "service-stopping"
        /// failed: no sound server could be used.
        package static let noAudioOutput = "no-audio-output"
        /// failed: no vibrator for an ID that only vibrates.
        package static let noVibrator = "no-vibrator"
        /// failed: playing had started and broke off (the sound server went away or hung, the
        /// device was lost): part of it may have been heard, so a client must not play it again.
        package static let brokeOff = "broke-off"
        /// failed: anything else (the explanation says what).
        package static let error = "error"
    }
}
