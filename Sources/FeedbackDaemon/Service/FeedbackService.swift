package import FeedbackBus
package import FeedbackServices
import Glibc
import Synchronization

/// feedbackd's `org.sigxcpu.Feedback` on our engine: events become feedback through a
/// `FeedbackTheme` and play through the one `FeedbackManager`.
///
/// `TriggerFeedback(s app_id, s event, a{sv} hints, i timeout) → u id` looks the event up at the
/// current profile, starts its sound (a sound theme event) and vibration, and returns at once;
/// timeout −1 plays once (as does any timeout below −1, as in feedbackd), 0 loops until ended,
/// N > 0 repeats for N seconds. An empty `app_id` or `event` is `InvalidArgs`, as feedbackd
/// answers it (`fbd_feedback_manager_handle_trigger_feedback`). `FeedbackEnded(u id,
/// u reason)` follows the reply exactly once per id (`FeedbackEndReason`), also for an event with
/// no feedback, which ends at once. `EndFeedback(u id)` ends a feedback of the caller's own
/// (another client's: `AccessDenied`; an id that already ended: nothing). When a client leaves the
/// bus its looping and timed feedbacks (timeout 0 or N) end at once, reason 2, and their sound
/// stops (feedbackd lets them run on); a play-once feedback (−1) still plays to its end, so that a
/// fire-and-forget caller such as `gdbus call` is heard. `app_id` is the client's own claim: it is
/// used in logs, never for permission. `Profile` is `FeedbackSettings`' profile, the one
/// `feedbackctl profile` sets; writing it stores it there and emits `PropertiesChanged`.
///
/// Hints (unknown ones are ignored; a known one of the wrong type is `InvalidArgs`), with
/// feedbackd's meaning:
/// - `profile` (s: full, quiet, silent): the level for this feedback only; it can only lower the
///   level the `Profile` property sets, never raise it (feedbackd's rule) — unless `important`.
/// - `important` (b): the feedback plays at the `profile` hint's level (full without one) even when
///   the `Profile` property or the desktop's `event-sounds` switch would silence it (an alarm
///   clock). As in feedbackd, only the app ids in `importantApps` may do this (feedbackd's
///   `allow-important` list by default). That is a per-app setting, not a permission: `app_id` is
///   self-declared, so it keeps well-behaved apps from overriding the user, and no more.
/// - `sound-file` (s): an absolute path played instead of the event's sound, when the level
///   plays sound (full); it plays even for an event the theme does not list. The file is opened
///   at once with `O_NOFOLLOW | O_NONBLOCK` and checked on the open descriptor (`fstat`), which
///   then is what is decoded (through `/proc/self/fd`), so there is no window between check and
///   use: a path with a `..` component, a symbolic link, a FIFO, a device, a directory, a socket,
///   an unreadable file, a missing one or one over `maximumSoundFileSize` is refused with a D-Bus
///   error (`FileNotFound`, `AccessDenied`, `InvalidArgs`) and one log line; one that does not
///   decode (not a sound, over 30 s) ends not-found, also with a log line.
///
/// `org.sigxcpu.Feedback.Haptic` at the same path: `Vibrate(s app_id, a(du) pattern) → b` plays the
/// caller's pattern (magnitude 0…1, duration in ms), replacing the caller's previous one; an empty
/// pattern (or one of pauses only) stops it. At most `RequestBounds.maximumVibrateSteps` steps,
/// each at most `RequestBounds.maximumVibrateStep` ms, `FeedbackTheme.maximumDuration` ms in all
/// (more: `InvalidArgs`; feedbackd cuts such patterns short silently). It returns false when there is no vibrator or the profile is
/// silent, as feedbackd's does, and the vibration stops when its client leaves the bus.
///
/// An `Led` feedback blinks an LED found when the feedback starts (so an LED plugged in later is
/// found without a watch, and an idle service makes no wake-ups for LEDs): as feedbackd, one that
/// udev tagged `FEEDBACKD_TYPE=led` showing the colour, else the first tagged one in its own colour;
/// where no LED is tagged at all (feedbackd's udev rules are not installed; feedbackd then blinks
/// nothing), an LED whose name or channels show the colour (`LEDSelector.color`), never one without
/// a colour such as a keyboard's caps lock. The blink runs until the feedback is ended — by
/// `EndFeedback`, by its client leaving the bus, by the service stopping, or for timeout N by
/// expiry — and then the LED gets back its trigger and brightness. It does not end by itself: as
/// in feedbackd, a feedback with an LED and timeout −1 lasts until ended (its sound plays once),
/// and its client leaving ends the blink even of a play-once feedback (feedbackd ends every
/// feedback of a client that left). feedbackd lets a timed feedback's LED blink on after the
/// timeout (it only stops restarting feedbacks then); here expiry ends it. LED feedback plays at
/// every profile: themes list it under silent, which every level plays. Of two feedbacks that want
/// one LED, the later takes it over when its theme `priority` is at least the running one's (all
/// are 0 in Debian's theme, so the later wins, as in feedbackd, which leaves priority unhandled);
/// a lower one does not blink (a log line). A feedback whose LED was taken over still runs until
/// ended, as in feedbackd, and ending it leaves the LED to the newer one. An LED that cannot blink
/// (none found: said once a run; a file that may not be written; an LED gone) gives one log line,
/// and the rest of the feedback plays; a feedback with nothing else ends not-found.
///
/// A theme `Dummy` (feedbackd's `fbd-feedback-dummy.c`, which its own tests use) plays nothing
/// and lasts: for timeout −1 its `duration`, then the feedback ends (reason 0) once its other
/// parts have; for a looping or timed feedback, which feedbackd restarts, until it is ended
/// (reason 2) or expires (reason 1). One of 0 ms ends at once, whatever the timeout. A feedback
/// with a Dummy is found, so an event whose only feedback is a Dummy is not `notFound`. A theme
/// `Sound` with a `file-name` plays that file.
///
/// The event's vibration is the theme's own pattern (`VibraRumble`, `VibraPeriodic`,
/// `VibraPattern`), played once for timeout −1 and repeated for as long as a looping or timed
/// feedback lasts (as feedbackd restarts it). The theme is looked up at the feedback's level and the
/// manager plays exactly what it gave (feedbackd's meaning of profiles: the theme lists what each
/// level plays); the desktop's `event-sounds` switch (`DesktopSoundSettings`) removes the sound.
/// `replace(theme:)` and `replace(desktop:)` swap the theme and the desktop settings (SIGHUP); `settingsChanged`
/// announces a `Profile` another process wrote.
///
/// Clients are not trusted, so each is bounded (`Limits`): feedbacks running at once, and
/// triggers (and `Vibrate` calls) a second (a token bucket). A trigger over a limit is refused with
/// `org.freedesktop.DBus.Error.LimitsExceeded`, whose message names the limit; so is one over the
/// service's total, so that the service never grows without bound whatever the number of clients.
///
/// One line goes to the log for every feedback that did not play as asked: the event, the client,
/// the app id and why.
///
/// This type is the interface's adapter: it decodes the calls, waits for an app's level where it
/// is not known yet, keeps the `Profile` property, and encodes the replies and `FeedbackEnded`.
/// The feedbacks themselves run in a `FeedbackRunner`, which admits, plays and ends them.
///
/// Thread safety: the bus thread calls the handler methods; the state is behind a lock, and the
/// manager's completions are handed to the bus thread, so signals go out in order there. Nothing
/// here starts a Dispatch worker (timers are the bus loop's, `BusContext.after`): with a manager
/// scheduled on threads (`FeedbackManager.Scheduling.threads`), an idle service makes no wake-ups.
package final class FeedbackService: BusObjectHandler, Sendable {
    /// The bus name feedbackd's clients call.
    package static let busName = "org.sigxcpu.Feedback"
    /// The object they call.
    package static let objectPath = "/org/sigxcpu/Feedback"
    /// The interface, as `/usr/share/dbus-1/interfaces/org.sigxcpu.Feedback.xml` defines it.
    package static let interface = "org.sigxcpu.Feedback"
    /// feedbackd's haptic interface, at the same path.
    package static let hapticInterface = "org.sigxcpu.Feedback.Haptic"
    /// Its member, as `/usr/share/dbus-1/interfaces/org.sigxcpu.Feedback.Haptic.xml` defines it.
    package static let hapticMembers: [BusMember] = [
        .method("Vibrate", signature: "sa(du)", result: "b", names: ["app_id", "pattern", "success"])
    ]
    /// Its members.
    package static let members: [BusMember] = [
        .method(
            "TriggerFeedback", signature: "ssa{sv}i", result: "u", names: ["app_id", "event", "hints", "timeout", "id"]),
        .method("EndFeedback", signature: "u", result: "", names: ["id"]),
        .signal("FeedbackEnded", signature: "uu", names: ["id", "reason"]),
        .property("Profile", signature: "s", writable: true, emitsChange: true),
    ]

    /// The most hints a call may carry.
    package static let maximumHints = 32
    /// The hints read, with their types.
    static let hintTypes = ["profile": "s", "important": "b", "sound-file": "s"]
    /// The app ids whose `important` hint is honoured by default: feedbackd's `allow-important`
    /// default.
    package static let defaultImportantApps: Set<String> = [
        "mobi.phosh.Stevia", "org.sigxcpu.FbdAlertSlider", "org.gnome.clocks", "sm.puri.OSK0",
    ]

    /// How much one client, and all of them together, may ask for. A value; safe to share across threads.
    package struct Limits: Sendable, Equatable {
        /// Feedbacks one client may have running at once.
        package var feedbacksPerClient = 16
        /// Feedbacks running at once, all clients together.
        package var feedbacks = 256
        /// Triggers a second one client may send, sustained.
        package var triggersPerSecond = 20.0
        /// Triggers one client may send at once after a quiet spell (the bucket's size).
        package var triggerBurst = 40.0

        /// The defaults.
        package init() {}

        /// The limits its `ClientSessions` table of feedbacks keeps.
        var sessions: SessionLimits {
            SessionLimits(
                perClient: feedbacksPerClient, total: feedbacks, perSecond: triggersPerSecond, burst: triggerBurst)
        }

        /// The limits its table of `Haptic.Vibrate` patterns keeps: one a client, as many clients as
        /// feedbacks may run.
        var vibrationSessions: SessionLimits {
            SessionLimits(perClient: 1, total: feedbacks, perSecond: triggersPerSecond, burst: triggerBurst)
        }
    }

    /// Where every feedback plays.
    package let manager: FeedbackManager
    /// The per-app levels, where feedbackd's schema is installed; nil: none.
    package let appLevels: AppLevels?
    /// The feedbacks, as they run.
    private let runner: FeedbackRunner
    /// The profile last announced with `PropertiesChanged`.
    private let announcedProfile: Lock<FeedbackProfile>
    private let log: @Sendable (String) -> Void

    /// A service giving `theme`'s feedback through `manager` within `limits`, under the desktop's
    /// sound settings `desktop`, blinking the LEDs `leds` finds; `log` receives one line at a time.
    package init(
        manager: FeedbackManager, theme: FeedbackTheme, desktop: DesktopSoundSettings = DesktopSoundSettings(),
        leds: LEDDiscovery = LEDDiscovery(), limits: Limits = Limits(),
        importantApps: Set<String> = FeedbackService.defaultImportantApps, appLevels: AppLevels? = nil,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.manager = manager
        self.appLevels = appLevels
        self.log = log
        announcedProfile = Lock(manager.profile)
        runner = FeedbackRunner(
            manager: manager, theme: theme, desktop: desktop, leds: leds, limits: limits, importantApps: importantApps,
            log: log, ended: { id, reason, bus in Self.emitEnded(id, reason, bus: bus, log: log) },
            stopped: { bus in
                bus.releaseName(Self.busName)
                bus.exit()
            })
    }

    /// Serves both interfaces on `bus` and follows clients leaving the bus.
    package func export(on bus: BusContext) throws(BusError) {
        try bus.export(path: Self.objectPath, interface: Self.interface, members: Self.members, handler: self)
        try bus.export(
            path: Self.objectPath, interface: Self.hapticInterface, members: Self.hapticMembers, handler: self)
        try bus.onClientLeft { [runner] name, bus in runner.clientLeft(name, bus: bus) }
    }

    // MARK: - BusObjectHandler

    /// `TriggerFeedback`, `EndFeedback` and `Haptic.Vibrate`.
    package func call(_ message: BusMessage, bus: BusContext) throws(BusError) -> [BusValue] {
        switch message.member {
        case "TriggerFeedback":
            let appID = try message.readString()
            let event = try message.readString()
            let hints = try Hints(message.readVariantDictionary(limit: Self.maximumHints, types: Self.hintTypes))
            let timeout = try message.readInt32()
            let client = message.sender
            // Looked up only for an app id of a size `trigger` accepts: one of megabytes, refused
            // there, is not munged first (seconds of the bus thread, for a 4 MiB one in a debug
            // build under load: the bad-input flood test's call that timed out).
            let knownLevel =
                appID.utf8.count <= RequestBounds.maximumNameLength && runner.feedbackdSettings.installed
                ? appLevels?.levelNow(of: appID) : nil
            // An app whose per-app level is not known yet: its feedback waits for the level's read.
            if knownLevel == nil, let appLevels, !appID.isEmpty, !event.isEmpty,
                appID.utf8.count <= RequestBounds.maximumNameLength, runner.feedbackdSettings.installed
            {
                // The trigger's token first, so that waiting is within the client's budget.
                try runner.takeToken(client)
                let reply = bus.answerLater(message)
                let connection = bus.connection
                let waits = appLevels.whenRead(appID) { [self] level in
                    connection.perform { [self] bus in
                        let result: Result<[BusValue], BusError>
                        do throws(BusError) {
                            let id = try runner.trigger(
                                appID: appID, event: event, hints: hints, timeout: timeout, appLevel: level, client: client,
                                tokenTaken: true, bus: bus)
                            result = .success([.uint32(id)])
                        } catch {
                            result = .failure(error)
                        }
                        // Now, before the FeedbackEnded the trigger may have queued.
                        reply.send(result, bus: bus)
                    }
                }
                if !waits {
                    reply.send(
                        .failure(
                            .limitsExceeded(
                                "app levels: \(AppLevels.maximumWaiting) feedbacks already wait for their app's settings to be read")),
                        bus: bus)
                }
                return []
            }
            let appLevel = knownLevel ?? .full
            return [
                .uint32(
                    try runner.trigger(
                        appID: appID, event: event, hints: hints, timeout: timeout, appLevel: appLevel, client: client,
                        bus: bus))
            ]
        case "EndFeedback":
            try runner.endFeedback(try message.readUInt32(), client: message.sender, bus: bus)
            return []
        case "Vibrate":
            let appID = try message.readString()
            let steps = try message.readDoubleUInt32Pairs(limit: RequestBounds.maximumVibrateSteps)
            return [.boolean(try runner.vibrate(appID: appID, steps: steps, client: message.sender, bus: bus))]
        default:
            throw .failed("no method \(message.member)")
        }
    }

    /// `Profile`: the profile the next feedback obeys.
    package func get(_ name: String, bus: BusContext) throws(BusError) -> BusValue {
        guard name == "Profile" else { throw .invalidArgs("no property \(name)") }
        return .string(manager.profile.rawValue)
    }

    /// `Profile`: stored in the settings file, then announced with `PropertiesChanged` after the
    /// reply.
    package func set(_ name: String, to value: BusValue, bus: BusContext) throws(BusError) {
        guard name == "Profile" else { throw .invalidArgs("no property \(name)") }
        guard let text = value.string, let profile = FeedbackProfile(rawValue: text) else {
            throw .invalidArgs("'\(value.string?.prefix(RequestBounds.maximumNameLength) ?? "")' is not a profile: full, quiet or silent")
        }
        if let fixed = manager.settings.environmentProfile {
            throw .failed("the profile is fixed at \(fixed.rawValue) by \(FeedbackSettings.environmentVariable) in the service's environment")
        }
        do {
            try manager.settings.store(profile)
        } catch {
            throw .failed("cannot store the profile: \(error)")
        }
        // After the Set's reply, which the bus thread sends when this handler returns: as from
        // feedbackd (GDBus emits the change from an idle), so that a client waiting for the change
        // (libfeedback's test of `lfb_set_feedback_profile`) has its Set answered first, and
        // leaving on the change does not leave the Set unanswered.
        bus.connection.perform { [self] bus in announceProfile(bus: bus) }
    }

    /// Sends `PropertiesChanged` for `Profile` if it differs from the one last announced: after a
    /// `Set`, and when the settings file changed on disk (`feedbackctl profile` in another process).
    package func settingsChanged(bus: BusContext) {
        announceProfile(bus: bus)
    }

    private func announceProfile(bus: BusContext) {
        let profile = manager.profile
        guard announcedProfile.withLock({ announced in
            defer { announced = profile }
            return announced != profile
        }) else { return }
        do {
            try bus.emitPropertiesChanged(path: Self.objectPath, interface: Self.interface, properties: ["Profile"])
        } catch {
            log("cannot announce the profile \(profile.rawValue): \(error)")
        }
    }

    /// Gives later feedbacks the desktop's `desktop` settings (a reload after SIGHUP, or a dconf
    /// Gives later feedbacks the desktop's `desktop` settings (a reload after SIGHUP, or a dconf
    /// change); feedbacks already running go on as they started.
    package func replace(desktop: DesktopSoundSettings) {
        runner.replace(desktop: desktop)
    }

    /// Gives later feedbacks `theme` (a reload after SIGHUP, or GSettings' `theme` changed);
    /// feedbacks already running go on as they started.
    package func replace(theme: FeedbackTheme) {
        runner.replace(theme: theme)
    }

    /// Gives later feedbacks feedbackd's GSettings `settings` (its `allow-important`,
    /// `max-haptic-strength` and `prefer-flash`; its `theme` is loaded by the daemon; the profile
    /// is `FeedbackSettings`', which the daemon keeps equal to its `profile`).
    package func replace(feedbackd settings: FeedbackdSettings) {
        runner.replace(feedbackd: settings)
    }

    /// feedbackd's GSettings as the service last read them.
    package var feedbackdSettings: FeedbackdSettings {
        runner.feedbackdSettings
    }

    /// Whether event sounds are on in the desktop's settings (`event-sounds`).
    package var eventSoundsOn: Bool {
        runner.eventSoundsOn
    }

    /// Whether the client `uniqueName` has called `TriggerFeedback` since it connected.
    package func hasTriggeredFeedback(_ uniqueName: String) -> Bool {
        runner.hasTriggeredFeedback(uniqueName)
    }

    /// Ends every feedback (reason 2), sends their `FeedbackEnded` once their sound stopped (or
    /// after a grace of half a second), gives the name back and ends the loop. Later triggers are
    /// refused.
    package func stop(bus: BusContext) {
        runner.stop(bus: bus)
    }

    // MARK: - Decoding and encoding

    /// `TriggerFeedback`'s hints, read and checked.
    struct Hints {
        var profile: FeedbackProfile?
        var important = false
        var soundFile: String?

        init(_ values: [String: BusValue]) throws(BusError) {
            if case .string(let name)? = values["profile"] {
                guard let level = FeedbackProfile(rawValue: name) else {
                    throw .invalidArgs("the hint 'profile' is '\(name.prefix(64))': full, quiet or silent")
                }
                profile = level
            }
            if case .boolean(let flag)? = values["important"] { important = flag }
            if case .string(let path)? = values["sound-file"] {
                guard path.utf8.count < PATH_MAX, path.hasPrefix("/"), !path.split(separator: "/").contains("..")
                else {
                    throw .invalidArgs(
                        "the hint 'sound-file' must be an absolute path of less than \(PATH_MAX) bytes without '..'")
                }
                soundFile = path
            }
        }
    }

    /// The level a feedback plays at: the `profile` hint (full without one), lowered to the
    /// service's profile and to the app's own level unless the feedback is important and its app

    /// Sends `FeedbackEnded(id, reason)`; a failure to send is logged.
    private static func emitEnded(
        _ id: UInt32, _ reason: FeedbackEndReason, bus: BusContext, log: @Sendable (String) -> Void
    ) {
        do {
            try bus.emitSignal(
                path: objectPath, interface: interface, member: "FeedbackEnded", [.uint32(id), .uint32(reason.rawValue)])
        } catch {
            log("cannot send FeedbackEnded for feedback \(id): \(error)")
        }
    }
}
