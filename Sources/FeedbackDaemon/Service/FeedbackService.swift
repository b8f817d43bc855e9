package import FeedbackBus
package import FeedbackServices
import Glibc
import Synchronization

/// Why a feedback ended, as `FeedbackEnded` reports it: libfeedback's `LfbEventEndReason`.
package enum FeedbackEndReason: UInt32, Sendable {
    /// It ran its course: the sound played once (timeout −1), or it could not play (the log says
    /// why: no sound server, a sound the sound theme lacks, the sound server went away mid-play —
    /// a looping feedback then ends with this reason and the next trigger plays on the server once
    /// it is back). A failure ends this way because it is the reason feedbackd gives one and
    /// libfeedback's clients expect nothing else.
    case natural = 0
    /// Its timeout (N > 0 seconds) ran out.
    case expired = 1
    /// It was ended: `EndFeedback`, its client left the bus, or the service stopped.
    case explicit = 2
    /// The theme has no feedback for the event at this profile (libfeedback's −1, sent as `u`), or
    /// the `sound-file` hint named a file that could not be decoded (not a sound, longer than 30 s)
    /// and nothing else played, or its only feedback is an LED's and no LED could blink.
    case notFound = 0xFFFF_FFFF
}

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
/// Clients are not trusted, so each is bounded (`Limits`, kept by a `ClientSessions` table, which
/// also numbers the feedbacks): feedbacks running at once, and triggers (and `Vibrate` calls) a
/// second (a token bucket). A trigger over a limit is refused with
/// `org.freedesktop.DBus.Error.LimitsExceeded`, whose message names the limit; so is one over the
/// service's total, so that the service never grows without bound whatever the number of clients.
///
/// One line goes to the log for every feedback that did not play as asked: the event, the client,
/// the app id and why.
///
/// Thread safety: the bus thread calls the handler methods; the state is behind a Mutex, and the
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
    /// The largest `sound-file` accepted, in bytes.
    package static let maximumSoundFileSize = RequestBounds.maximumSoundFileBytes
    /// The app ids whose `important` hint is honoured by default: feedbackd's `allow-important`
    /// default.
    package static let defaultImportantApps: Set<String> = [
        "mobi.phosh.Stevia", "org.sigxcpu.FbdAlertSlider", "org.gnome.clocks", "sm.puri.OSK0",
    ]
    /// How long a stop (SIGTERM, a lost name) waits for the feedbacks' sounds to end before it
    /// reports them ended anyway.
    static let shutdownGrace = 0.5

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

    /// How its refusals name triggers and feedbacks.
    static let sessionWording = SessionWording(request: "trigger", verb: "sent", running: "concurrent feedbacks")

    /// Where every feedback plays.
    package let manager: FeedbackManager
    /// The limits in force.
    package let limits: Limits
    /// The app ids whose `important` hint is honoured where feedbackd's schema is not installed
    /// (where it is, its `allow-important`).
    package let importantApps: Set<String>
    /// The per-app levels, where feedbackd's schema is installed; nil: none.
    package let appLevels: AppLevels?
    /// Where `Led` feedbacks find their LED.
    package let leds: LEDDiscovery
    private let log: @Sendable (String) -> Void

    /// What the service keeps of a feedback; its client, and whether it ends by itself (timeout −1),
    /// are its session's.
    private struct Ongoing {
        var appID: String
        var event: String
        var playback: FeedbackPlayback?
        /// Why it is being ended, once something asked; nil while it runs its course.
        var reason: FeedbackEndReason?
        /// The `sound-file` hint's open descriptor, closed when the feedback ends.
        var soundFile: Int32?
        /// Whether its sound or vibration still plays through the manager.
        var playing = false
        /// Whether a theme `Dummy` of it still runs: until its duration is over (timeout −1), else
        /// until the feedback is ended.
        var dummy = false
        /// The manager's result, kept from the end of the sound and vibration while a blink runs on.
        var result: FeedbackResult?
        /// The blinks of its `Led` feedbacks, until the feedback (or, for a play-once feedback, its
        /// client) ends them.
        var blinks: [LEDBlink] = []
        /// A looping or timed feedback's theme pattern, played again each time it ends until the
        /// feedback is ended: the pattern, the profile its lanes obey, when its last play started.
        var loop: (pattern: ResolvedHapticPattern, profile: FeedbackProfile, started: Double)?
    }

    /// The feedback blinking an LED, and its theme priority.
    private struct LEDOwner {
        var id: UInt32
        var priority: UInt8
    }

    private struct State {
        var theme: FeedbackTheme
        var desktop: DesktopSoundSettings
        /// feedbackd's GSettings; not `installed` where its schema is not.
        var feedbackd = FeedbackdSettings()
        /// The clients on the bus that called `TriggerFeedback` (at most `maximumTriggerClients`):
        /// a notification server among them gives its notifications their sound (Phosh).
        var triggerClients: Set<String> = []
        /// The profile last announced with `PropertiesChanged`.
        var announcedProfile: FeedbackProfile
        /// The feedbacks, their caps, and every client's trigger budget, which `Haptic.Vibrate`
        /// draws on too.
        var feedbacks: ClientSessions<Ongoing>
        /// The `Haptic.Vibrate` patterns playing, one a client, which take their tokens from
        /// `feedbacks` (their own buckets go unused).
        var vibrations: ClientSessions<FeedbackPlayback>
        var stopped = false
        var reportedNoVibrator = false
        var reportedNoLED = false
        /// By LED sysfs path; an entry goes when its feedback ends the blink.
        var ledOwners: [String: LEDOwner] = [:]
    }
    private let state: Lock<State>

    /// A service giving `theme`'s feedback through `manager` within `limits`, under the desktop's
    /// sound settings `desktop`, blinking the LEDs `leds` finds; `log` receives one line at a time.
    package init(
        manager: FeedbackManager, theme: FeedbackTheme, desktop: DesktopSoundSettings = DesktopSoundSettings(),
        leds: LEDDiscovery = LEDDiscovery(), limits: Limits = Limits(),
        importantApps: Set<String> = FeedbackService.defaultImportantApps, appLevels: AppLevels? = nil,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.manager = manager
        self.leds = leds
        self.limits = limits
        self.importantApps = importantApps
        self.appLevels = appLevels
        self.log = log
        state = Lock(
            State(
                theme: theme, desktop: desktop, announcedProfile: manager.profile,
                feedbacks: ClientSessions(limits: limits.sessions, clientLeftPolicy: .endLooping),
                vibrations: ClientSessions(limits: limits.vibrationSessions, clientLeftPolicy: .endAll)))
    }

    /// Serves both interfaces on `bus` and follows clients leaving the bus.
    package func export(on bus: BusContext) throws(BusError) {
        try bus.export(path: Self.objectPath, interface: Self.interface, members: Self.members, handler: self)
        try bus.export(
            path: Self.objectPath, interface: Self.hapticInterface, members: Self.hapticMembers, handler: self)
        try bus.onClientLeft { [self] name, bus in clientLeft(name, bus: bus) }
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
                appID.utf8.count <= RequestBounds.maximumNameLength && state.withLock({ $0.feedbackd.installed })
                ? appLevels?.levelNow(of: appID) : nil
            // An app whose per-app level is not known yet: its feedback waits for the level's read.
            if knownLevel == nil, let appLevels, !appID.isEmpty, !event.isEmpty,
                appID.utf8.count <= RequestBounds.maximumNameLength, state.withLock({ $0.feedbackd.installed })
            {
                // The trigger's token first, so that waiting is within the client's budget.
                let now = MonotonicClock.now
                try state.withLock { state throws(BusError) in
                    guard !state.feedbacks.isStopping else { throw sessionRefusal(.stopping, client: client) }
                    do throws(SessionRefusal) {
                        try state.feedbacks.takeToken(client, now: now)
                    } catch {
                        throw sessionRefusal(error, client: client)
                    }
                }
                let reply = bus.answerLater(message)
                let connection = bus.connection
                let waits = appLevels.whenRead(appID) { [self] level in
                    connection.perform { [self] bus in
                        let result: Result<[BusValue], BusError>
                        do throws(BusError) {
                            let id = try trigger(
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
                    try trigger(
                        appID: appID, event: event, hints: hints, timeout: timeout, appLevel: appLevel, client: client,
                        bus: bus))
            ]
        case "EndFeedback":
            try endFeedback(try message.readUInt32(), client: message.sender, bus: bus)
            return []
        case "Vibrate":
            let appID = try message.readString()
            let steps = try message.readDoubleUInt32Pairs(limit: RequestBounds.maximumVibrateSteps)
            return [.boolean(try vibrate(appID: appID, steps: steps, client: message.sender, bus: bus))]
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
        guard state.withLock({ state in
            defer { state.announcedProfile = profile }
            return state.announcedProfile != profile
        }) else { return }
        do {
            try bus.emitPropertiesChanged(path: Self.objectPath, interface: Self.interface, properties: ["Profile"])
        } catch {
            log("cannot announce the profile \(profile.rawValue): \(error)")
        }
    }

    /// Gives later feedbacks the desktop's `desktop` settings (a reload after SIGHUP, or a dconf
    /// change); feedbacks already running go on as they started.
    package func replace(desktop: DesktopSoundSettings) {
        state.withLock { $0.desktop = desktop }
    }

    /// Gives later feedbacks `theme` (a reload after SIGHUP, or GSettings' `theme` changed);
    /// feedbacks already running go on as they started.
    package func replace(theme: FeedbackTheme) {
        state.withLock { $0.theme = theme }
    }

    /// Gives later feedbacks feedbackd's GSettings `settings` (its `allow-important`,
    /// `max-haptic-strength` and `prefer-flash`; its `theme` is loaded by the daemon; the profile is `FeedbackSettings`', which the
    /// daemon keeps equal to its `profile`).
    package func replace(feedbackd settings: FeedbackdSettings) {
        state.withLock { $0.feedbackd = settings }
    }

    /// feedbackd's GSettings as the service last read them.
    package var feedbackdSettings: FeedbackdSettings {
        state.withLock { $0.feedbackd }
    }

    /// Whether event sounds are on in the desktop's settings (`event-sounds`).
    package var eventSoundsOn: Bool {
        state.withLock { $0.desktop.eventSounds }
    }

    /// Whether the client `uniqueName` has called `TriggerFeedback` since it connected.
    package func hasTriggeredFeedback(_ uniqueName: String) -> Bool {
        state.withLock { $0.triggerClients.contains(uniqueName) }
    }

    /// The most clients `hasTriggeredFeedback` remembers.
    static let maximumTriggerClients = 256

    // MARK: - Feedback

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
    /// may say so (feedbackd's `get_max_level` and `fbd_feedback_manager_handle_trigger_feedback`).
    static func level(
        profile: FeedbackProfile, app: FeedbackProfile = .full, hint: FeedbackProfile?, important: Bool
    ) -> FeedbackProfile {
        let wanted = hint ?? .full
        if important { return wanted }
        let order: [FeedbackProfile] = [.silent, .quiet, .full]
        return order[[profile, app, wanted].map { order.firstIndex(of: $0)! }.min()!]
    }

    /// `pattern` with no step stronger than `strength` (feedbackd's `max-haptic-strength`: each
    /// step's magnitude is the lower of the two).
    package static func capped(_ pattern: VibrationPattern, at strength: Double) -> VibrationPattern {
        guard strength < 1, pattern.steps.contains(where: { $0.intensity > strength }) else { return pattern }
        let steps = pattern.steps.map { step in
            var step = step
            step.intensity = min(step.intensity, strength)
            return step
        }
        return (try? VibrationPattern(steps: steps, repeatIndex: pattern.repeatIndex)) ?? pattern
    }

    /// The vibration a feedback plays: the theme's first pattern for it, once for timeout −1, and
    /// repeated until the feedback ends for a looping or timed one (as feedbackd restarts it).
    package static func vibration(in feedbacks: [ThemeFeedback], timeout: Int32) -> VibrationPattern? {
        let pattern = feedbacks.lazy.compactMap { feedback -> VibrationPattern? in
            if case .vibration(let pattern) = feedback { pattern } else { nil }
        }.first
        guard timeout != -1, let once = pattern else { return pattern }
        return (try? VibrationPattern(steps: once.steps, repeatIndex: 0)) ?? once
    }

    private func trigger(
        appID: String, event: String, hints: Hints, timeout: Int32, appLevel: FeedbackProfile, client: String,
        tokenTaken: Bool = false, bus: BusContext
    ) throws(BusError) -> UInt32 {
        // feedbackd refuses an empty app id or event (fbd_feedback_manager_handle_trigger_feedback).
        guard !appID.isEmpty else { throw .invalidArgs("Invalid app id: it is empty") }
        guard !event.isEmpty else { throw .invalidArgs("Invalid event: it is empty") }
        guard appID.utf8.count <= RequestBounds.maximumNameLength, event.utf8.count <= RequestBounds.maximumNameLength
        else {
            throw .invalidArgs("app_id and event may have at most \(RequestBounds.maximumNameLength) bytes")
        }
        // As feedbackd: a timeout below −1 plays once.
        let timeout = max(timeout, -1)
        let feedbackd = state.withLock { $0.feedbackd }
        let important = hints.important && (feedbackd.installed ? feedbackd.allowImportant : importantApps).contains(appID)
        let level = Self.level(profile: manager.profile, app: appLevel, hint: hints.profile, important: important)
        let now = MonotonicClock.now
        let lookup = state.withLock {
            state -> Result<(id: UInt32, feedbacks: [ThemeFeedback], desktop: DesktopSoundSettings), BusError> in
            let id: UInt32
            do throws(SessionRefusal) {
                id = try state.feedbacks.admit(client, token: tokenTaken ? .alreadyTaken : .take(now: now))
            } catch {
                return .failure(sessionRefusal(error, client: client))
            }
            if state.triggerClients.count < Self.maximumTriggerClients { state.triggerClients.insert(client) }
            return .success((id, state.theme.feedbacks(for: event, profile: level), state.desktop))
        }
        let (id, themed, desktop) = try lookup.get()
        let who = "client \(client), app id '\(appID)'"
        let sounds = desktop.eventSounds || important
        let (feedbacks, patternPlay) = resolvePattern(
            in: themed, cappedAt: feedbackd.maxHapticStrength, feedback: id, event: event, who: who)
        let themeSound = feedbacks.lazy.compactMap { feedback -> (alert: AlertSound, role: String?)? in
            switch feedback {
            case .sound(let effect, let role): (.event(effect), role)
            case .soundFile(let path, let role): (.file(path), role)
            default: nil
            }
        }.first
        var sound = themeSound?.alert
        let mediaRole = themeSound?.role
        if !sounds { sound = nil }
        let dummy = feedbacks.lazy.compactMap { feedback -> Int? in
            if case .dummy(let milliseconds) = feedback { milliseconds } else { nil }
        }.max()
        let pattern = Self.vibration(in: feedbacks, timeout: timeout).map {
            Self.capped($0, at: feedbackd.maxHapticStrength)
        }
        var soundFile: Int32?
        if let path = hints.soundFile, level == .full, sounds, patternPlay == nil {
            soundFile = try openSoundFile(path, feedback: id, event: event, who: who)
        }
        let wantsLED = feedbacks.contains { if case .led = $0 { true } else { false } }
        let blinks = startBlinks(feedbacks, feedback: id, event: event, who: who)
        guard sound != nil || soundFile != nil || pattern != nil || patternPlay != nil || !blinks.isEmpty || dummy != nil else {
            let why =
                !sounds && feedbacks.contains(where: \.isSound)
                ? "event sounds are off in the desktop's settings (\(DesktopSoundSettings.schema) event-sounds)"
                : wantsLED ? "its LED feedback found no LED to blink (see the LED log line)"
                : appLevel != .full && level == appLevel && !important
                ? "the theme has no feedback for it at profile \(level.rawValue), the app's own level (\(FeedbackdSettings.appSchema))"
                : "the theme has no feedback for it at profile \(level.rawValue)"
            let unheard =
                hints.important && !important
                ? "; its important hint is not honoured: app id '\(appID)' is not among those allowed to override"
                : ""
            log("feedback \(id) for event '\(event)' (\(who)): \(why)\(unheard)")
            let connection = bus.connection
            // After the reply, which the bus thread sends when this handler returns.
            connection.perform { [self] bus in emitEnded(id, .notFound, bus: bus) }
            return id
        }
        let hasSound = sound != nil || soundFile != nil
        let plays = hasSound || pattern != nil || patternPlay != nil
        // A Dummy runs for its duration once (timeout −1); a looping or timed feedback restarts it,
        // as feedbackd does, so it runs until ended. One of 0 ms ends at once whatever the timeout:
        // feedbackd would restart it without end.
        let dummyRuns = (dummy ?? 0) > 0
        state.withLock {
            $0.feedbacks.insert(
                Ongoing(
                    appID: appID, event: event, soundFile: soundFile, playing: plays, dummy: dummyRuns, blinks: blinks),
                id: id, client: client, endsByItself: timeout == -1)
        }
        let connection = bus.connection
        if let dummy, dummyRuns, timeout == -1 {
            do {
                try bus.after(Double(dummy) / 1000) { [self] bus in dummyEnded(id, bus: bus) }
            } catch {
                log("feedback \(id) for event '\(event)' (\(who)): its Dummy of \(dummy) ms ends at once: \(error)")
                state.withLock { $0.feedbacks[id]?.dummy = false }
            }
        }
        if !plays && !dummyRuns && blinks.isEmpty {
            // Only a Dummy of 0 ms: it ran its course, after the reply.
            connection.perform { [self] bus in complete(id, bus: bus) }
        }
        if let patternPlay {
            // The pattern's lanes as the level allows; its sound not where the desktop has event sounds off.
            let profile = level == .full && !sounds ? .quiet : level
            let looping = timeout != -1
            state.withLock { $0.feedbacks[id]?.loop = looping ? (patternPlay, profile, MonotonicClock.now) : nil }
            startPattern(patternPlay, profile: profile, feedback: id, event: event, who: who, bus: bus)
        } else if plays {
            let type: FeedbackType = !hasSound ? .vibrateOnly : pattern != nil ? .audioAndVibrate : .audioOnly
            let alert: AlertSound = soundFile.map { .file("/proc/self/fd/\($0)") } ?? sound ?? .event(event)
            let options = PlaybackOptions(playCount: timeout == -1 ? 1 : PlaybackOptions.forever, mediaRole: mediaRole)
            // The theme was read at the feedback's level: the manager plays what it gave, as full.
            let playback = manager.play(
                alert, type: type, options: options, vibration: pattern ?? .systemVibrate, profile: .full,
                delivery: .immediate
            ) { [self] result in
                connection.perform { [self] bus in finished(id, result: result, bus: bus) }
            }
            state.withLock { $0.feedbacks[id]?.playback = playback }
        }
        if timeout > 0 {
            do {
                try bus.after(Double(timeout)) { [self] bus in end(id, reason: .expired, bus: bus) }
            } catch {
                log("feedback \(id) for event '\(event)' (\(who)) plays until ended: its \(timeout) s timeout cannot be set: \(error)")
            }
        }
        return id
    }

    /// The shortest time between two starts of a looping theme pattern, in seconds.
    static let minimumLoopPeriod = 0.25

    /// The theme's pattern among `feedbacks`, made ready (its vibration capped at `strength`,
    /// feedbackd's `max-haptic-strength`), and the feedbacks that still play beside it (the `Led`s
    /// and `Dummy`s, a pattern's own included; the `Sound` and `Vibra*` ones are what it replaces).
    /// A pattern that cannot be made ready (a sound not found) is logged, and the feedbacks play as
    /// written.
    private func resolvePattern(
        in feedbacks: [ThemeFeedback], cappedAt strength: Double, feedback id: UInt32, event: String, who: String
    ) -> (feedbacks: [ThemeFeedback], pattern: ResolvedHapticPattern?) {
        let asWritten = feedbacks.map { feedback in
            if case .pattern(_, let instead) = feedback { instead } else { feedback }
        }
        guard let pattern = feedbacks.lazy.compactMap({ feedback -> HapticPattern? in
            if case .pattern(let pattern, _) = feedback { pattern } else { nil }
        }).first else { return (feedbacks, nil) }
        do {
            var resolved = try manager.resolve(pattern, maximumDecodedSeconds: SoundDecoder.systemSoundDurationLimit)
            resolved.vibration = Self.capped(resolved.vibration, at: strength)
            let beside = asWritten.filter { feedback in
                switch feedback {
                case .led, .dummy: true
                case .sound, .soundFile, .vibration, .pattern: false
                }
            }
            return (beside, resolved)
        } catch {
            log("feedback \(id) for event '\(event)' (\(who)): its pattern \(pattern.path ?? "") plays as written instead: \(error)")
            return (asWritten, nil)
        }
    }

    /// Plays feedback `id`'s theme pattern once, under `profile`; its end comes to `finished`.
    private func startPattern(
        _ pattern: ResolvedHapticPattern, profile: FeedbackProfile, feedback id: UInt32, event: String, who: String,
        bus: BusContext
    ) {
        let connection = bus.connection
        let playback = manager.play(
            pattern, profile: profile, delivery: .immediate,
            report: { [self] problem in log("feedback \(id) for event '\(event)' (\(who)): \(problem)") }
        ) { [self] result in
            connection.perform { [self] bus in finished(id, result: result, bus: bus) }
        }
        state.withLock { state in
            state.feedbacks[id]?.playback = playback
            state.feedbacks[id]?.playing = true
        }
    }

    /// Starts a blink for each `Led` among `feedbacks` on the LED `chooseLED` finds, unless a
    /// feedback of higher priority blinks it; one log line for each that cannot blink.
    private func startBlinks(_ feedbacks: [ThemeFeedback], feedback id: UInt32, event: String, who: String)
        -> [LEDBlink]
    {
        var blinks: [LEDBlink] = []
        for case .led(let text, let millihertz, let percent, let priority) in feedbacks {
            let color = FeedbackTheme.ledColor(text).color
            do throws(LEDError) {
                let led = try chooseLED(color)
                if let holder = state.withLock({ $0.ledOwners[led.path] }), holder.id != id, holder.priority > priority {
                    log(
                        "feedback \(id) for event '\(event)' (\(who)): LED \(led.name) stays with feedback \(holder.id), "
                            + "of priority \(holder.priority), above this one's \(priority)")
                    continue
                }
                let pattern = try LEDBlinkPattern(millihertz: millihertz, brightnessPercent: percent)
                let blink = try LEDBlink(led: led, pattern: pattern, color: led.colors.contains(color) ? color : nil)
                state.withLock { $0.ledOwners[led.path] = LEDOwner(id: id, priority: priority) }
                blinks.append(blink)
            } catch {
                let first = state.withLock { state in
                    defer { if error.reason == .noDevice { state.reportedNoLED = true } }
                    return !state.reportedNoLED
                }
                if error.reason != .noDevice {
                    log("feedback \(id) for event '\(event)' (\(who)): its LED does not blink: \(error)")
                } else if first {
                    log("no LED, so feedbacks give no LED blink (said once): \(error)")
                }
            }
        }
        return blinks
    }

    /// The LED for `color`: as feedbackd, a udev-tagged one showing it, else the first tagged one;
    /// where none is tagged, one whose name or channels show the colour.
    private func chooseLED(_ color: LEDColor) throws(LEDError) -> LEDInfo {
        // feedbackd's prefer-flash: the camera's flash LED (one with `flash_strobe` and
        // `flash_brightness`, as fbd-dev-led-flash.c probes it) where there is one.
        if state.withLock({ $0.feedbackd.preferFlash }),
            let flash = try? leds.leds().first(where: { led in
                access(led.path + "/flash_strobe", F_OK) == 0 && access(led.path + "/flash_brightness", F_OK) == 0
            })
        {
            return flash
        }
        do {
            return try leds.led(.feedback(color))
        } catch {
            guard error.reason == .noDevice else { throw error }
        }
        if let tagged = try leds.leds().first(where: \.isFeedbackLED) { return tagged }
        return try leds.led(.color(color))
    }

    /// Ends `blinks` of feedback `id`, which puts their LEDs back, and gives the LEDs up.
    private func endBlinks(_ blinks: [LEDBlink], feedback id: UInt32) {
        for blink in blinks {
            state.withLock { state in
                if state.ledOwners[blink.led.path]?.id == id { state.ledOwners[blink.led.path] = nil }
            }
            do {
                try blink.end()
            } catch {
                log("feedback \(id): LED \(blink.led.name) is not put back as it was: \(error)")
            }
        }
    }

    /// Opens the `sound-file` hint's file for feedback `id` (`openSoundFile(_:)`), with a log
    /// line when it is refused.
    private func openSoundFile(_ path: String, feedback id: UInt32, event: String, who: String) throws(BusError)
        -> Int32
    {
        do {
            return try Self.openSoundFile(path)
        } catch {
            log("feedback \(id) for event '\(event)' (\(who)): sound-file refused: \(error.message)")
            throw error
        }
    }

    /// Opens a client's sound file at `path`: a regular, readable file of at most
    /// `maximumSoundFileSize` bytes, not reached through a symbolic link as its last component.
    /// The check is made on the open descriptor, which is what plays; the caller closes it.
    /// - Throws: `BusError`: `FileNotFound`, `AccessDenied`, or `InvalidArgs` saying why.
    package static func openSoundFile(_ path: String) throws(BusError) -> Int32 {
        let fd: Int32
        do {
            fd = try System.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY)
        } catch {
            switch error.rawValue {
            case ENOENT, ENOTDIR: throw BusError.fileNotFound("\(path): \(error)")
            case EACCES, EPERM: throw .accessDenied("\(path): \(error)")
            case ELOOP: throw .invalidArgs("\(path) is a symbolic link")
            default: throw .invalidArgs("\(path): \(error)")
            }
        }
        let size: Int?
        do {
            size = try System.regularFileSize(fd)
        } catch {
            close(fd)
            throw .invalidArgs("\(path): \(error)")
        }
        guard let size else {
            close(fd)
            throw .invalidArgs("\(path) is not a regular file")
        }
        guard size <= maximumSoundFileSize else {
            close(fd)
            throw .invalidArgs("\(path) has \(size) bytes, more than \(maximumSoundFileSize)")
        }
        return fd
    }

    /// `Haptic.Vibrate`: plays `steps` (magnitude, ms) for `client` in place of its previous
    /// pattern; no steps, or pauses only, stop it. False when there is no vibrator or the profile
    /// is silent.
    private func vibrate(appID: String, steps: [(Double, UInt32)], client: String, bus: BusContext) throws(BusError)
        -> Bool
    {
        guard appID.utf8.count <= RequestBounds.maximumNameLength else {
            throw .invalidArgs("app_id may have at most \(RequestBounds.maximumNameLength) bytes")
        }
        let pattern = try RequestBounds.vibrationSteps(steps)
        let now = MonotonicClock.now
        let (id, previous) = try state.withLock { state throws(BusError) -> (UInt32, FeedbackPlayback?) in
            guard !state.feedbacks.isStopping else { throw sessionRefusal(.stopping, client: client) }
            do throws(SessionRefusal) {
                try state.feedbacks.takeToken(client, now: now)
            } catch {
                throw sessionRefusal(error, client: client)
            }
            // The new pattern takes the place of the client's previous one.
            let previous = state.vibrations.plays(of: client).first.flatMap { state.vibrations.remove($0.id)?.play }
            do throws(SessionRefusal) {
                return (try state.vibrations.admit(client, token: .alreadyTaken), previous)
            } catch {
                guard error == .total else { throw sessionRefusal(error, client: client) }
                throw .limitsExceeded("concurrent vibrations: \(limits.feedbacks) clients are vibrating, the most the service runs")
            }
        }
        let who = "client \(client), app id '\(appID)'"
        guard manager.profile != .silent else {
            previous?.stop()
            log("Vibrate (\(who)): the profile is silent")
            return false
        }
        do {
            try manager.prepareVibrator()
        } catch {
            log("Vibrate (\(who)): no vibrator: \(error)")
            return false
        }
        previous?.stop()
        guard let made = try? VibrationPattern(steps: pattern) else { return true }
        let capped = Self.capped(made, at: state.withLock { $0.feedbackd.maxHapticStrength })
        let connection = bus.connection
        let playback = manager.play(
            .id(kSystemSoundID_Vibrate), type: .vibrateOnly, vibration: capped, delivery: .immediate
        ) { [self] result in
            // On the bus thread, after this handler has put the pattern in the table.
            connection.perform { [self] _ in
                _ = state.withLock { $0.vibrations.remove(id) }
                if let problem = Self.problem(result) { log("Vibrate (\(who)) did not play as asked: \(problem)") }
            }
        }
        state.withLock { $0.vibrations.insert(playback, id: id, client: client, endsByItself: true) }
        return true
    }

    /// A refusal of `client`'s trigger or `Vibrate` call as the reply says it.
    private func sessionRefusal(_ refusal: SessionRefusal, client: String) -> BusError {
        refusal.busError(client: client, limits: limits.sessions, wording: Self.sessionWording)
    }

    private func endFeedback(_ id: UInt32, client: String, bus: BusContext) throws(BusError) {
        // An id that already ended is not an error: a client's EndFeedback may cross its FeedbackEnded.
        guard let owner = state.withLock({ $0.feedbacks.client(of: id) }) else { return }
        guard owner == client else { throw .accessDenied("feedback \(id) belongs to another client") }
        end(id, reason: .explicit, bus: bus)
    }

    /// Stops feedback `id` if it still runs; `FeedbackEnded` follows when its parts have ended:
    /// at once for its blinks, when the manager reports for its sound and vibration. With
    /// `blinksOnly` (a play-once feedback whose client left), its sound and vibration play on.
    private func end(_ id: UInt32, reason: FeedbackEndReason, bus: BusContext, blinksOnly: Bool = false) {
        let (playback, blinks, done) = state.withLock { state -> (FeedbackPlayback?, [LEDBlink], Bool) in
            guard var ongoing = state.feedbacks[id], ongoing.reason == nil else { return (nil, [], false) }
            let blinks = ongoing.blinks
            ongoing.blinks = []
            // A Dummy ends when asked; a play-once feedback's runs on, as its sound does.
            if !blinksOnly { ongoing.dummy = false }
            let runsOn = ongoing.playing || ongoing.dummy
            if !blinksOnly || !runsOn { ongoing.reason = reason }
            state.feedbacks[id] = ongoing
            return (blinksOnly || !ongoing.playing ? nil : ongoing.playback, blinks, !runsOn)
        }
        endBlinks(blinks, feedback: id)
        if done { complete(id, bus: bus) }
        playback?.stop()
    }

    /// A client left: its looping and timed feedbacks end (`ClientLeftPolicy.endLooping`), and its
    /// `Haptic.Vibrate` pattern stops (`ClientLeftPolicy.endAll`).
    private func clientLeft(_ name: String, bus: BusContext) {
        let (departure, vibrations) = state.withLock { state in
            state.triggerClients.remove(name)
            let vibrations = state.vibrations.clientLeft(name).ending.compactMap { state.vibrations.remove($0)?.play }
            return (state.feedbacks.clientLeft(name), vibrations)
        }
        for id in departure.ending { end(id, reason: .explicit, bus: bus) }
        // A play-once feedback's sound plays on; its blink, which nobody would end, does not.
        for id in departure.runningOn { end(id, reason: .explicit, bus: bus, blinksOnly: true) }
        for vibration in vibrations { vibration.stop() }
    }

    /// The manager's result for `id`, on the bus thread: the feedback ends, unless it still blinks
    /// or its Dummy still runs.
    private func finished(_ id: UInt32, result: FeedbackResult, bus: BusContext) {
        // A looping pattern that ended by itself, having been heard or felt, starts again, no
        // sooner than `minimumLoopPeriod` after its last start. One that played nothing (silenced,
        // no output, no vibrator) ends: played again it would do nothing again, four times a second.
        let again = state.withLock { state -> (ResolvedHapticPattern, FeedbackProfile, Double, String)? in
            guard let ongoing = state.feedbacks[id], ongoing.reason == nil, let loop = ongoing.loop,
                result.sound == .played || result.vibration == .vibrated
            else { return nil }
            return (loop.pattern, loop.profile, loop.started, ongoing.event)
        }
        if let (pattern, profile, started, event) = again {
            let delay = max(0, started + Self.minimumLoopPeriod - MonotonicClock.now)
            do {
                try bus.after(delay) { [self] bus in
                    let still = state.withLock { state -> Bool in
                        guard state.feedbacks[id]?.reason == nil, state.feedbacks[id]?.loop != nil else { return false }
                        state.feedbacks[id]?.loop?.started = MonotonicClock.now
                        return true
                    }
                    if still {
                        startPattern(pattern, profile: profile, feedback: id, event: event, who: "a loop", bus: bus)
                    } else {
                        finished(id, result: result, bus: bus)
                    }
                }
                return
            } catch {
                log("feedback \(id) for event '\(event)': its pattern is not played again: \(error)")
            }
        }
        let runsOn = state.withLock { state in
            state.feedbacks[id]?.playing = false
            state.feedbacks[id]?.result = result
            return state.feedbacks[id].map { !$0.blinks.isEmpty || $0.dummy } ?? false
        }
        if !runsOn { complete(id, bus: bus) }
    }

    /// The Dummy of play-once feedback `id` ran its duration, on the bus thread: the feedback ends,
    /// unless its sound or vibration still plays or it still blinks.
    private func dummyEnded(_ id: UInt32, bus: BusContext) {
        let done = state.withLock { state in
            guard var ongoing = state.feedbacks[id], ongoing.dummy else { return false }
            ongoing.dummy = false
            state.feedbacks[id] = ongoing
            return !ongoing.playing && ongoing.blinks.isEmpty
        }
        if done { complete(id, bus: bus) }
    }

    /// Feedback `id` has ended, all its parts: `FeedbackEnded`, on the bus thread.
    private func complete(_ id: UInt32, bus: BusContext) {
        let (ended, firstNoVibrator, lastToStop) = state.withLock { state in
            let ended = state.feedbacks.remove(id)
            var firstNoVibrator = false
            if case .noVibrator = ended?.play.result?.vibration, !state.reportedNoVibrator {
                state.reportedNoVibrator = true
                firstNoVibrator = true
            }
            return (ended, firstNoVibrator, state.feedbacks.isStopping && state.feedbacks.isEmpty)
        }
        // Nil: a stop that could not wait any longer has reported it already.
        if let session = ended {
            let ended = session.play
            if let fd = ended.soundFile { close(fd) }
            let who = "event '\(ended.event)' (client \(session.client), app id '\(ended.appID)')"
            if let problem = ended.result.flatMap(Self.problem) {
                log("feedback \(id) for \(who) did not play as asked: \(problem)")
            }
            if firstNoVibrator, case .noVibrator(let error)? = ended.result?.vibration {
                log("no vibrator, so feedbacks give no vibration (said once): \(error)")
            }
            var reason = ended.reason ?? .natural
            // A sound-file that does not decode, with nothing else played: as an unknown event.
            if ended.reason == nil, ended.soundFile != nil, let result = ended.result, case .failed = result.sound,
                result.vibration != .vibrated
            {
                reason = .notFound
            }
            emitEnded(id, reason, bus: bus)
        }
        if lastToStop { finishStopping(bus: bus) }
    }

    /// What went wrong, if the sound or the vibration failed. A missing vibrator is said once per
    /// run, not per feedback: most desktops have none.
    private static func problem(_ result: FeedbackResult) -> String? {
        var problems: [String] = []
        switch result.sound {
        case .failed(let error): problems.append("its sound failed: \(error)")
        case .noAudioOutput(let error): problems.append("no audio output: \(error)")
        default: break
        }
        if case .failed(let error) = result.vibration { problems.append("its vibration failed: \(error)") }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    private func emitEnded(_ id: UInt32, _ reason: FeedbackEndReason, bus: BusContext) {
        do {
            try bus.emitSignal(
                path: Self.objectPath, interface: Self.interface, member: "FeedbackEnded",
                [.uint32(id), .uint32(reason.rawValue)])
        } catch {
            log("cannot send FeedbackEnded for feedback \(id): \(error)")
        }
    }

    // MARK: - Stopping

    /// Ends every feedback (reason 2), sends their `FeedbackEnded` once their sound stopped (or
    /// after `shutdownGrace`), gives the name back and ends the loop. Later triggers are refused.
    package func stop(bus: BusContext) {
        guard let ids = state.withLock({ $0.feedbacks.beginStopping() }) else { return }
        let vibrations = state.withLock { state in
            (state.vibrations.beginStopping() ?? []).compactMap { state.vibrations[$0] }
        }
        for vibration in vibrations { vibration.stop() }
        for id in ids { end(id, reason: .explicit, bus: bus) }
        if ids.isEmpty { return finishStopping(bus: bus) }
        let reportLate: (BusContext) -> Void = { [self] bus in
            let late = state.withLock { state in
                state.feedbacks.removeAll().map { ($0.id, $0.session.play.reason ?? .explicit) }
            }
            // Their sound files stay open: a decode may still read them, and the process ends.
            for (id, reason) in late {
                log("feedback \(id) did not stop within \(Self.shutdownGrace) s; reported ended")
                emitEnded(id, reason, bus: bus)
            }
            finishStopping(bus: bus)
        }
        do {
            try bus.after(Self.shutdownGrace, reportLate)
        } catch {
            log("cannot wait for the feedbacks to stop (\(error)); reporting them ended now")
            reportLate(bus)
        }
    }

    private func finishStopping(bus: BusContext) {
        guard state.withLock({ state in
            defer { state.stopped = true }
            return !state.stopped
        }) else { return }
        bus.releaseName(Self.busName)
        bus.exit()
    }
}

extension ThemeFeedback {
    /// Whether it is a `Sound`, of either kind.
    fileprivate var isSound: Bool {
        switch self {
        case .sound, .soundFile: true
        default: false
        }
    }
}
