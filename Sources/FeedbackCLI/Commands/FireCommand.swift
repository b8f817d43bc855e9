import FeedbackServices

/// `feedbackctl fire ID|EVENT`: play a system sound, a registered sound or a theme event, as an
/// alert would: under the feedback profile, with vibration when asked.
enum FireCommand: Subcommand {
    static let name = "fire"
    static let abstract = "Play a system sound, a registered sound or a theme event now"
    static let help = """
        OVERVIEW: Play a system sound, a registered sound or a theme event now.

        A number is a sound ID: an AudioServices system sound (1000-1351; 1007 is the
        tri-tone; see 'feedbackctl list'), an ID that only vibrates (4095, 1011, 1102, 1311,
        1350, 1351), or an ID made by 'feedbackctl register' (4097 and up). Anything else is
        a sound theme event name such as message-new-instant. System sounds and events are
        looked up in the active sound theme (see 'feedbackctl theme'), decoded and played
        on the engine: a PulseAudio stream that starts the sound at once.

        As an alert, it obeys the feedback profile (see 'feedbackctl profile'): quiet plays
        no sound (only the vibration, if any), silent does nothing; the JSON result says
        "silenced" then. --output ignores the profile. The command returns when the sound
        and vibration have ended, unless --no-wait is given. Ctrl-C (or 'feedbackctl stop')
        stops them, then exits with 130 (143).

        USAGE: feedbackctl fire [OPTIONS] ID|EVENT

        ARGUMENTS:
          ID|EVENT         A sound ID (1000-1351, 4095, 4097 and up) or a theme event name

        OPTIONS:
          --volume X       Linear volume, 0 (silent) to 1 (as recorded); above 1 is louder
                           (default 1)
          --vibrate        Also vibrate (400 ms) on the first vibrator, as an alert sound
                           does; if it cannot, the sound plays and a warning says why
          --output FILE    Render into FILE (.wav, .flac, .ogg, …) instead of playing
          --canberra       Play through libcanberra instead of the engine
          --wait           Return when the sound has ended (the default)
          --no-wait        Return at once; a detached feedbackctl plays the sound (its errors
                           are not reported)
          --json           Print {"version", "id", "event", "file", "duration", "profile",
                           "result", "vibration"}; result is finished, stopped, started
                           (--no-wait), disabled (by the theme), silenced (by the profile),
                           or vibrated for an ID that only vibrates; vibration is null (not
                           asked for), vibrated, silenced, noVibrator or failed
        \(ThemeOptions.help)
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXIT STATUS:
          0 played (or the theme or profile silenced it); 64 bad argument; 65 the sound file
          is not usable, or the registry is damaged; 66 no sound for that ID or event; 69 no
          audio output (no PulseAudio server: the message says where it looked), or no
          vibrator for an ID that only vibrates; 77 the vibrator may not be opened;
          130/143 stopped by Ctrl-C or 'feedbackctl stop'.

        EXAMPLES:
          feedbackctl fire 1007
          feedbackctl fire 1007 --vibrate --no-wait
          feedbackctl fire message-new-instant --volume 0.5
          feedbackctl fire "$(feedbackctl register ding.oga)"
          feedbackctl fire 1007 --output tri-tone.wav

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let volume = try SoundArguments.volume(&parser)
        let vibrate = parser.flag("--vibrate")
        let destination = try Playback.destination(&parser)
        let wait = parser.flag("--wait")
        let noWait = parser.flag("--no-wait")
        let json = parser.flag("--json")
        let themeOptions = try ThemeOptions(&parser)
        let alert = try identify(try parser.finish(positionals: 1)[0])
        if wait && noWait { throw CommandError.usage("--wait and --no-wait exclude each other") }
        let manager = Playback.manager(
            for: destination, parser, vibrator: .discovery(VibratorDiscovery(directory: Vibration.inputDirectory)),
            themes: try themeOptions.resolver())
        defer { manager.vibrator = .none }
        let profile = manager.profile
        // Connect to the sound server while the sound is looked up and decoded.
        if !noWait && !destination.isFile && profile.allowsSound && !alert.vibratesOnly { manager.prepareAudioOutput() }
        let sound: ResolvedAlertSound
        do {
            sound = try manager.resolve(alert)
        } catch {
            throw failure(error, alert: alert, registry: manager.registry.persistentRegistry)
        }

        var report: [String: JSON] = [
            "version": .string(FeedbackCommand.version), "id": alert.soundID.map { .number(Double($0)) } ?? .null,
            "event": sound.event.map(JSON.string) ?? .null, "file": sound.file.map(JSON.string) ?? .null,
            "duration": sound.duration.map(JSON.number) ?? .null, "vibration": .null, "profile": .null,
        ]
        if case .disabledByTheme = sound.content { report["result"] = .string("disabled") }

        if case .file(let path) = destination {
            // A rendering, not an alert: the profile does not apply.
            if let buffer = sound.buffer {
                try Playback.render(buffer, options: PlaybackOptions(volume: volume), to: path)
                report["result"] = .string("finished")
            } else if alert.vibratesOnly {
                throw CommandError.usage("\(alert.soundID ?? 0) only vibrates; there is no sound to write to a file")
            }
            return finish(report, json: json, output: &output)
        }
        report["profile"] = .string(profile.rawValue)
        let vibrationOnly = alert.vibratesOnly
        let wantsVibration = vibrate || vibrationOnly
        if noWait {
            // Relaunch only for what will actually happen; report the rest as a waiting run would.
            let plays = sound.buffer != nil && profile.allowsSound
            let vibrates = wantsVibration && profile.allowsVibration
            if plays || vibrates { _ = try Detach.relaunch() }
            if report["result"] == nil { report["result"] = .string(plays || (vibrationOnly && vibrates) ? "started" : "silenced") }
            if wantsVibration { report["vibration"] = .string(vibrates ? "started" : "silenced") }
            return finish(report, json: json, output: &output)
        }

        let result = try Playback.play(
            sound, on: manager, type: vibrate ? .audioAndVibrate : .audioOnly, options: PlaybackOptions(volume: volume))
        let vibration = try vibrationName(result.vibration, vibrationOnly: vibrationOnly, parser: &parser)
        report["vibration"] = vibration.map(JSON.string) ?? .null
        if let name = try Playback.name(of: result.sound) { report["result"] = .string(name) }
        if vibrationOnly { report["result"] = report["vibration"] }
        finish(report, json: json, output: &output)
    }

    private static func finish(_ report: [String: JSON], json: Bool, output: inout String) {
        if json { output += JSON.object(report) + "\n" }
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
        case .processLocal:
            throw CommandError.usage(
                "\(number) is a process-local sound ID (\(SoundIDRange.processLocal)): only the program that "
                    + "registered it can play it; give a sound an ID every program can play with 'feedbackctl register FILE'")
        case .service:
            throw CommandError.usage("\(number) is in \(SoundIDRange.service), which feedbackctl cannot play")
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
        case (.theme(let explanation), .event(let name)):
            return CommandError(message: "no sound for '\(name)': not found: \(explanation)", exitCode: .noInput)
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
