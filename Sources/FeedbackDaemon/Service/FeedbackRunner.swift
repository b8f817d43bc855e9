import FeedbackBus
import FeedbackServices
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

/// The feedbacks of `org.sigxcpu.Feedback` as they run: what `FeedbackService`, its adapter,
/// decodes from the bus becomes a feedback here, and here each ends exactly once.
///
/// A trigger is admitted by a `ClientSessions` table (its client's caps and token bucket, the
/// service's total), looked up in the feedback theme at its level, and started: its sound or
/// theme pattern and vibration through the one `FeedbackManager`, its `Led` blinks, its `Dummy`,
/// its timeout. Its parts end in any order — the manager's result, the Dummy's duration, an
/// `EndFeedback`, its client leaving, expiry, the service stopping — and the last one ends the
/// feedback: `ended` gets its id and reason once, on the bus thread. `FeedbackService`'s
/// documentation says what each of these does as a client sees it.
///
/// Thread safety: the bus thread calls it; the state is behind a lock, and the manager's
/// completions are handed to the bus thread, so ends are reported in order there. Timers are the
/// bus loop's (`BusContext.after`): an idle service makes no wake-ups.
final class FeedbackRunner: Sendable {
    /// The largest `sound-file` accepted, in bytes.
    static let maximumSoundFileSize = RequestBounds.maximumSoundFileBytes
    /// How long a stop (SIGTERM, a lost name) waits for the feedbacks' sounds to end before it
    /// reports them ended anyway.
    static let shutdownGrace = 0.5
    /// How its refusals name triggers and feedbacks.
    static let sessionWording = SessionWording(request: "trigger", verb: "sent", running: "concurrent feedbacks")

    /// The most clients `hasTriggeredFeedback` remembers.
    static let maximumTriggerClients = 256

    /// Where every feedback plays.
    let manager: FeedbackManager
    /// The limits in force.
    let limits: FeedbackService.Limits
    /// The app ids whose `important` hint is honoured where feedbackd's schema is not installed
    /// (where it is, its `allow-important`).
    let importantApps: Set<String>
    /// Where `Led` feedbacks find their LED.
    let leds: LEDDiscovery
    private let log: @Sendable (String) -> Void
    /// Told that a feedback ended, and why: once per id, on the bus thread.
    private let ended: @Sendable (UInt32, FeedbackEndReason, BusContext) -> Void
    /// Told that the last feedback ended after `stop(bus:)`, once.
    private let stopped: @Sendable (BusContext) -> Void


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

    /// Feedbacks of `theme` played through `manager` within `limits`, under the desktop's sound
    /// settings `desktop`, blinking the LEDs `leds` finds; `log` receives one line at a time,
    /// `ended` each feedback's end and `stopped` the end of a stop.
    init(
        manager: FeedbackManager, theme: FeedbackTheme, desktop: DesktopSoundSettings, leds: LEDDiscovery,
        limits: FeedbackService.Limits, importantApps: Set<String>, log: @escaping @Sendable (String) -> Void,
        ended: @escaping @Sendable (UInt32, FeedbackEndReason, BusContext) -> Void,
        stopped: @escaping @Sendable (BusContext) -> Void
    ) {
        self.manager = manager
        self.leds = leds
        self.limits = limits
        self.importantApps = importantApps
        self.log = log
        self.ended = ended
        self.stopped = stopped
        state = Lock(
            State(
                theme: theme, desktop: desktop,
                feedbacks: ClientSessions(limits: limits.sessions, clientLeftPolicy: .endLooping),
                vibrations: ClientSessions(limits: limits.vibrationSessions, clientLeftPolicy: .endAll)))
    }

    /// Gives later feedbacks the desktop's `desktop` settings (a reload after SIGHUP, or a dconf
    /// change); feedbacks already running go on as they started.
    func replace(desktop: DesktopSoundSettings) {
        state.withLock { $0.desktop = desktop }
    }

    /// Gives later feedbacks `theme` (a reload after SIGHUP, or GSettings' `theme` changed);
    /// feedbacks already running go on as they started.
    func replace(theme: FeedbackTheme) {
        state.withLock { $0.theme = theme }
    }

    /// Gives later feedbacks feedbackd's GSettings `settings` (its `allow-important`,
    /// `max-haptic-strength` and `prefer-flash`; its `theme` is loaded by the daemon; the profile is `FeedbackSettings`', which the
    /// daemon keeps equal to its `profile`).
    func replace(feedbackd settings: FeedbackdSettings) {
        state.withLock { $0.feedbackd = settings }
    }

    /// feedbackd's GSettings as the service last read them.
    var feedbackdSettings: FeedbackdSettings {
        state.withLock { $0.feedbackd }
    }

    /// Whether event sounds are on in the desktop's settings (`event-sounds`).
    var eventSoundsOn: Bool {
        state.withLock { $0.desktop.eventSounds }
    }

    /// Whether the client `uniqueName` has called `TriggerFeedback` since it connected.
    func hasTriggeredFeedback(_ uniqueName: String) -> Bool {
        state.withLock { $0.triggerClients.contains(uniqueName) }
    }

    /// Takes a trigger's token from `client`'s bucket ahead of its trigger (`trigger(…tokenTaken:)`),
    /// so that a trigger waiting for its app's level waits within the client's budget.
    func takeToken(_ client: String) throws(BusError) {
        let now = MonotonicClock.now
        try state.withLock { state throws(BusError) in
            guard !state.feedbacks.isStopping else { throw sessionRefusal(.stopping, client: client) }
            do throws(SessionRefusal) {
                try state.feedbacks.takeToken(client, now: now)
            } catch {
                throw sessionRefusal(error, client: client)
            }
        }
    }

    // MARK: - Feedback

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
    static func capped(_ pattern: VibrationPattern, at strength: Double) -> VibrationPattern {
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
    static func vibration(in feedbacks: [ThemeFeedback], timeout: Int32) -> VibrationPattern? {
        let pattern = feedbacks.lazy.compactMap { feedback -> VibrationPattern? in
            if case .vibration(let pattern) = feedback { pattern } else { nil }
        }.first
        guard timeout != -1, let once = pattern else { return pattern }
        return (try? VibrationPattern(steps: once.steps, repeatIndex: 0)) ?? once
    }

    /// Starts `client`'s feedback for `event` (its hints and timeout as decoded from its call) at
    /// the lower of the service's profile and `appLevel`, and gives its id; its end comes to
    /// `ended`. `tokenTaken`: `takeToken` took the trigger's token already.
    /// - Throws: `BusError`: `InvalidArgs` for an empty or oversized app id or event,
    ///   `LimitsExceeded` over a limit, and a refused `sound-file`'s error.
    func trigger(
        appID: String, event: String, hints: FeedbackService.Hints, timeout: Int32, appLevel: FeedbackProfile, client: String,
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
            connection.perform { [self] bus in ended(id, .notFound, bus) }
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
    static func openSoundFile(_ path: String) throws(BusError) -> Int32 {
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
    func vibrate(appID: String, steps: [(Double, UInt32)], client: String, bus: BusContext) throws(BusError)
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

    /// `EndFeedback` from `client`: ends its feedback `id` (reason 2).
    /// - Throws: `BusError.accessDenied` when `id` is another client's.
    func endFeedback(_ id: UInt32, client: String, bus: BusContext) throws(BusError) {
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
    func clientLeft(_ name: String, bus: BusContext) {
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

    /// Feedback `id` has ended, all its parts: reported to `ended`, on the bus thread.
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
            self.ended(id, reason, bus)
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

    // MARK: - Stopping

    /// Ends every feedback (reason 2), reports each to `ended` once its sound stopped (or after
    /// `shutdownGrace`), then calls `stopped`. Later triggers are refused.
    func stop(bus: BusContext) {
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
                ended(id, reason, bus)
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
        stopped(bus)
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
