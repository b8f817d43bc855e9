import FeedbackServices

/// `feedbackctl fire ID|EVENT`: play a system sound, a registered sound or a theme event, as an
/// alert would: under the feedback profile, with vibration when asked.
enum FireCommand: Subcommand {
    static let name = "fire"
    static let abstract = "Play a system sound, a registered sound or a theme event now"
    static let discussion: [Paragraph] = [
        """
        A number is a sound ID: an AudioServices system sound (1000-1351; 1007 is the
        tri-tone; see 'feedbackctl list'), an ID that only vibrates (4095, 1011, 1102, 1311,
        1350, 1351), or an ID made by 'feedbackctl register' (4097-999999). IDs from 1000000
        are process-local: a program's own AudioServicesCreateSystemSoundID sounds, which
        only it can play, so they are refused here. Anything else is a sound theme event
        name such as message-new-instant. System sounds and events are
        looked up in the active sound theme (see 'feedbackctl theme'), decoded and played
        on the engine: a PulseAudio stream that starts the sound at once.
        """,
        """
        As an alert, it obeys the feedback profile (see 'feedbackctl profile'): quiet plays
        no sound (only the vibration, if any), silent does nothing; the JSON result says
        "silenced" then. --output ignores the profile. The command returns when the sound
        and vibration have ended, unless --no-wait is given. Ctrl-C (or 'feedbackctl stop')
        stops them, then exits with 130 (143).
        """,
        """
        When feedbackservicesd runs, it plays the sound (not --vibrate, --output, --canberra,
        --pcm, the theme options, or FEEDBACKSERVICES_PROFILE, which stay in this process): it
        starts at once from the service's open stream, and --no-wait needs no background
        process. Output and exit status are the same either way; what the service cannot
        start is played here, and a sound that broke off there (its sound server went away
        mid-play) is reported, not played again. --no-daemon (or FEEDBACKCTL_NO_DAEMON=1)
        always plays here.
        """,
    ]

    static let target = Argument(
        "ID|EVENT", .systemSoundID, .event, help: "A sound ID (1000-1351, 4095, 4097-999999) or a theme event name")
    static let arguments = [target]

    static let vibrate = Option(
        "--vibrate",
        help: """
            Also vibrate (400 ms) on the first vibrator, as an alert sound
            does; if it cannot, the sound plays and a warning says why
            """)
    static let wait = Option("--wait", help: "Return when the sound has ended (the default)")
    static let json = Option.json(
        """
        Print {"version", "id", "event", "file", "duration", "profile",
        "result", "vibration"}; result is finished, stopped, started
        (--no-wait), disabled (by the theme), silenced (by the profile),
        or vibrated for an ID that only vibrates; vibration is null (not
        asked for), vibrated, silenced, noVibrator or failed
        """)
    static let options =
        [
            SoundArguments.volume, vibrate, SoundArguments.output, SoundArguments.canberra, SoundArguments.pcm, wait,
            SoundArguments.noWait, json,
        ]
        + ThemeOptions.all + [DaemonRoute.noDaemon]
    static let usage: [[UsageItem]] = [[.options, .arguments]]

    static let exitStatus: String? = """
        0 played (or the theme or profile silenced it); 64 bad argument; 65 the sound file
        is not usable, or the registry is damaged; 66 no sound for that ID or event; 69 no
        audio output (no PulseAudio server: the message says where it looked), or no
        vibrator for an ID that only vibrates; 77 the vibrator may not be opened;
        130/143 stopped by Ctrl-C or 'feedbackctl stop'.
        """

    static let examples = [
        "feedbackctl fire 1007",
        "feedbackctl fire 1007 --vibrate --no-wait",
        "feedbackctl fire message-new-instant --volume 0.5",
        #"feedbackctl fire "$(feedbackctl register ding.oga)""#,
        "feedbackctl fire 1007 --output tri-tone.wav",
    ]

    /// What `--json` prints: every member, null when it does not apply.
    struct Report: Encodable {
        @Nullable var id: SystemSoundID?
        @Nullable var event: String?
        @Nullable var file: String?
        @Nullable var duration: Double?
        @Nullable var profile: String?
        @Nullable var result: String?
        @Nullable var vibration: String?
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let volume = try SoundArguments.volume(parser)
        let vibrate = parser.flag(Self.vibrate)
        let destination = try Playback.destination(&parser)
        let wait = parser.flag(Self.wait)
        let noWait = parser.flag(SoundArguments.noWait)
        let json = parser.flag(Self.json)
        let themeOptions = ThemeOptions(parser)
        let alert = try identify(parser.positionals[0])
        if wait && noWait { throw CommandError.usage("--wait and --no-wait exclude each other") }
        // The service plays sounds alone, on its own stream, with its own theme settings.
        let serviceMayPlay =
            !vibrate && !alert.vibratesOnly && themeOptions.isDefault
            && DaemonRoute.mayUse(environment: parser.environment, forcedOff: parser.flag(DaemonRoute.noDaemon))
        var route = Route.decide(destination, serviceMayPlay: serviceMayPlay, environment: parser.environment)
        if case .service(let service) = route {
            if let play = service.play(alert, volume: volume, detached: noWait),
                try fire(alert, through: service, play: play, noWait: noWait, json: json, &parser, output: &output)
            {
                return
            }
            route = Route.fallBack
        }
        let manager = Playback.manager(
            for: destination, parser, vibrator: .discovery(VibratorDiscovery(directory: Vibration.inputDirectory)),
            themes: try themeOptions.resolver())
        defer { manager.vibrator = .none }
        let profile = manager.profile
        // Connect to the sound server while the sound is looked up and decoded.
        route.open(for: manager, plays: !noWait && profile.allowsSound && !alert.vibratesOnly, environment: parser.environment)
        let sound: ResolvedAlertSound
        do {
            sound = try manager.resolve(alert)
        } catch {
            throw failure(error, alert: alert, registry: manager.registry.persistentRegistry)
        }

        var report = Report(
            id: alert.soundID, event: sound.event, file: sound.file, duration: sound.duration.map(JSONOutput.seconds))
        if case .disabledByTheme = sound.content { report.result = "disabled" }

        if case .file(let path) = destination {
            // A rendering, not an alert: the profile does not apply.
            if let buffer = sound.buffer {
                try Playback.render(buffer, options: PlaybackOptions(volume: volume), to: path)
                report.result = "finished"
            } else if alert.vibratesOnly {
                throw CommandError.usage("\(alert.soundID ?? 0) only vibrates; there is no sound to write to a file")
            }
            return finish(report, json: json, output: &output)
        }
        report.profile = profile.rawValue
        let vibrationOnly = alert.vibratesOnly
        let wantsVibration = vibrate || vibrationOnly
        if noWait {
            // Relaunch only for what will actually happen; report the rest as a waiting run would.
            let plays = sound.buffer != nil && profile.allowsSound
            let vibrates = wantsVibration && profile.allowsVibration
            // A detached player's failures are not reported: a missing vibrator is found here.
            var vibration: String? = wantsVibration ? (vibrates ? "started" : "silenced") : nil
            if vibrates {
                do {
                    _ = try VibratorDiscovery(directory: Vibration.inputDirectory).vibrator()
                } catch {
                    vibration = try vibrationName(.noVibrator(error), vibrationOnly: vibrationOnly, parser: &parser)
                }
            }
            let vibrationStarts = vibration == "started"
            if plays || vibrationStarts { _ = try Detach.relaunch() }
            if report.result == nil { report.result = plays || (vibrationOnly && vibrationStarts) ? "started" : "silenced" }
            report.vibration = vibration
            noteProfile(report, profile: profile, &parser)
            return finish(report, json: json, output: &output)
        }

        let result = try Playback.play(
            sound, on: manager, type: vibrate ? .audioAndVibrate : .audioOnly, options: PlaybackOptions(volume: volume))
        report.vibration = try vibrationName(result.vibration, vibrationOnly: vibrationOnly, parser: &parser)
        if let name = try Playback.name(of: result.sound) { report.result = name }
        if vibrationOnly { report.result = report.vibration }
        noteProfile(report, profile: profile, &parser)
        finish(report, json: json, output: &output)
    }

    /// `fire` when feedbackservicesd plays `play`: the same report and exit code as in process.
    /// - Returns: false when the service did not start it: the command then plays it in process,
    ///   which reports why as it always has.
    /// - Throws: `CommandError` (69) when the play started there and broke off: it is not played
    ///   again.
    private static func fire(
        _ alert: AlertSound, through route: DaemonRoute, play: DaemonRoute.Play, noWait: Bool, json: Bool,
        _ parser: inout ArgumentParser, output: inout String
    ) throws(CommandError) -> Bool {
        let profile = FeedbackSettings(environment: parser.environment).profile
        var report = Report(id: alert.soundID)
        var hasSound = true
        // The report names the sound's event, file and length as the service found them (it asks
        // while the sound plays), only when it is printed.
        if json, let sound = route.describe(alert) {
            (report.event, report.file, report.duration) = (sound.event, sound.file, sound.duration.map(JSONOutput.seconds))
            if sound.content == "disabled" { report.result = "disabled" }
            hasSound = sound.content == "sound"
        }
        report.profile = profile.rawValue
        if noWait {
            if report.result == nil { report.result = hasSound && profile.allowsSound ? "started" : "silenced" }
            finish(report, json: json, output: &output)
            return true
        }
        switch try route.wait(for: play) {
        case .finished(let name): report.result = name
        case .stopped: report.result = "stopped"
        case .failed: return false
        case .brokeOff(let why): throw CommandError(message: "feedbackservicesd played it, then: \(why)", exitCode: .unavailable)
        }
        noteProfile(report, profile: profile, &parser)
        finish(report, json: json, output: &output)
        return true
    }

    /// A notice when the feedback profile kept the sound (or the vibration) from playing: with no
    /// output at all, a profile set and forgotten would look like a broken installation.
    private static func noteProfile(_ report: Report, profile: FeedbackProfile, _ parser: inout ArgumentParser) {
        guard report.result == "silenced" || report.vibration == "silenced" else { return }
        let variable = FeedbackSettings.environmentVariable
        let source = parser.environment[variable] != nil ? "\(variable)=\(profile.rawValue)" : "'feedbackctl profile \(profile.rawValue)'"
        let vibrated = report.vibration == "vibrated" || report.vibration == "started"
        let what = profile == .quiet && vibrated ? "it vibrated instead of playing the sound" : "no sound was played"
        parser.notify("the feedback profile is \(profile.rawValue) (set by \(source)): \(what); 'feedbackctl profile full' plays sounds again")
    }

    private static func finish(_ report: Report, json: Bool, output: inout String) {
        if json { output += JSONOutput.line(report) }
    }

    /// What the vibration did, as the JSON reports it. For an ID that only vibrates a missing or
    /// failing vibrator is the command's failure; beside a sound it is a warning.
    private static func vibrationName(
        _ outcome: VibrationOutcome, vibrationOnly: Bool, parser: inout ArgumentParser
    ) throws(CommandError) -> String? {
        switch outcome {
        case .notRequested: return nil
        case .vibrated, .stopped: return "vibrated"
        case .silencedByProfile: return "silenced"
        case .noVibrator(let error):
            let failure = CommandError(error)
            if vibrationOnly { throw failure }
            parser.warn("no vibration: \(failure.message)")
            return failure.exitCode == .unavailable ? "noVibrator" : "failed"
        case .failed(let error):
            let failure = CommandError(error)
            if vibrationOnly { throw failure }
            parser.warn("vibration failed: \(failure.message)")
            return "failed"
        }
    }

    /// What a command-line target names. Numbers outside the ranges `fire` can play are refused
    /// here, with what the number is.
    private static func identify(_ target: String) throws(CommandError) -> AlertSound {
        guard let number = UInt32(target) else {
            guard !target.isEmpty else { throw CommandError.usage("the event name is empty") }
            return .event(target)
        }
        switch SoundIDRange(number) {
        // Like an ID with no sound (999), not a usage error: the number is well formed, the sound
        // is just not one feedbackctl can reach.
        case .processLocal:
            throw CommandError(
                message: "\(number) is a process-local sound ID, in \(SoundIDRange.processLocal): only the program that "
                    + "registered it can play it; give a sound an ID every program can play with 'feedbackctl register FILE'",
                exitCode: .noInput)
        case .service:
            throw CommandError(
                message: "\(number) is a session service's sound ID, in \(SoundIDRange.service), which feedbackctl cannot play",
                exitCode: .noInput)
        case .system, .vibrate, .persistent, .unassigned:
            return .id(number)
        }
    }

    /// A failed lookup as `fire` reports it.
    private static func failure(_ error: FeedbackError, alert: AlertSound, registry: SoundRegistryFile?) -> CommandError {
        switch (error, alert) {
        case (.catalog(let error), _):
            var failure = CommandError(error)
            failure.message = "\(error.description); registered sounds have IDs from \(SoundIDRange.persistentIDs.lowerBound)"
            return failure
        case (.theme(let explanation), .event):
            // The explanation names the event and says what was tried.
            return CommandError(message: explanation, exitCode: .noInput)
        case (.registry(let error), .id(let id)) where SoundIDRange(id) == .persistent:
            guard let registry else {
                var failure = CommandError(error)
                failure.message = "\(error.description) (neither XDG_DATA_HOME nor HOME is set)"
                return failure
            }
            return RegistryArguments.failure(error, id: id, registry: registry)
        default:
            return CommandError(error)
        }
    }
}
