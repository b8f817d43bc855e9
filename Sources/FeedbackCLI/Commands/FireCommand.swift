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
        1350, 1351), or an ID made by 'feedbackctl register' (4097 and up). Anything else is
        a sound theme event name such as message-new-instant. System sounds and events are
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
    ]

    static let target = Argument(
        "ID|EVENT", .systemSoundID, .event, help: "A sound ID (1000-1351, 4095, 4097 and up) or a theme event name")
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
        [SoundArguments.volume, vibrate, SoundArguments.output, SoundArguments.canberra, wait, SoundArguments.noWait, json]
        + ThemeOptions.all
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

    /// What a target names.
    private enum Target {
        case system(SystemSoundID, event: String)
        case event(String)
        case vibrationOnly(SystemSoundID)
        case registered(SystemSoundID)
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let volume = try SoundArguments.volume(parser)
        let vibrate = parser.flag(Self.vibrate)
        let destination = try Playback.destination(&parser)
        let wait = parser.flag(Self.wait)
        let noWait = parser.flag(SoundArguments.noWait)
        let json = parser.flag(Self.json)
        let themeOptions = ThemeOptions(parser)
        let target = try identify(parser.positionals[0])
        if wait && noWait { throw CommandError.usage("--wait and --no-wait exclude each other") }
        let profile = FeedbackSettings(environment: parser.environment).profile
        // Connect to the sound server while the sound is looked up and decoded.
        var pending: PendingOutput?
        if !noWait && profile.allowsSound {
            if case .vibrationOnly = target {} else { pending = PendingOutput.opening(destination) }
        }
        let resolver = try themeOptions.resolver()

        var report: [String: JSON] = [
            "version": .string(FeedbackCommand.version), "event": .null, "id": .null, "file": .null,
            "duration": .null, "vibration": .null, "profile": .null,
        ]
        // What to play: a decoded sound, or nothing (the theme disables it, or it only vibrates).
        var sound: PCMBuffer?
        switch target {
        case .system(_, let event), .event(let event):
            if case .system(let id, _) = target { report["id"] = .number(Double(id)) }
            report["event"] = .string(event)
            let result: SoundLookupResult
            do {
                result = try resolver.resolve(event)
            } catch {
                throw CommandError.usage(error.description)
            }
            switch result {
            case .notFound:
                throw CommandError(message: "no sound for '\(event)': \(ThemeOptions.describe(result))", exitCode: .noInput)
            case .disabled(let file):
                report["result"] = .string("disabled")
                report["file"] = .string(file.path)
            case .resolved(let file):
                sound = try SoundArguments.decode(file.path)
                report["file"] = .string(file.path)
            }
        case .registered(let id):
            report["id"] = .number(Double(id))
            let (entry, buffer) = try RegistryArguments.decode(id, parser)
            sound = buffer
            report["file"] = .string(entry.path)
        case .vibrationOnly(let id):
            report["id"] = .number(Double(id))
            if destination.isFile {
                throw CommandError.usage("\(id) only vibrates; there is no sound to write to a file")
            }
        }
        report["duration"] = sound.map { .number($0.duration) } ?? .null
        let vibrationOnly = if case .vibrationOnly = target { true } else { false }

        if destination.isFile {
            if let sound {
                _ = try Playback.play(sound, options: PlaybackOptions(volume: volume), to: destination, wait: true)
                report["result"] = .string("finished")
            }
            return finish(report, json: json, output: &output)
        }
        report["profile"] = .string(profile.rawValue)
        let wantsVibration = vibrate || vibrationOnly
        if noWait {
            // Relaunch only for what will actually happen; report the rest as a waiting run would.
            let plays = sound != nil && report["result"] == nil && profile.allowsSound
            let vibrates = wantsVibration && profile.allowsVibration
            if plays || vibrates { _ = try Detach.relaunch() }
            if report["result"] == nil { report["result"] = .string(plays || (vibrationOnly && vibrates) ? "started" : "silenced") }
            if wantsVibration { report["vibration"] = .string(vibrates ? "started" : "silenced") }
            return finish(report, json: json, output: &output)
        }

        var vibration: Vibration?
        if wantsVibration {
            if !profile.allowsVibration {
                report["vibration"] = .string("silenced")
            } else {
                do {
                    vibration = try Vibration.start(.systemVibrate)
                    report["vibration"] = .string("vibrated")
                } catch where !vibrationOnly {
                    report["vibration"] = .string(error.exitCode == .unavailable ? "noVibrator" : "failed")
                    parser.warn("no vibration: \(error.message)")
                }
            }
        }
        if let sound, report["result"] == nil {
            if profile.allowsSound {
                do {
                    let end = try Playback.play(
                        sound, options: PlaybackOptions(volume: volume), to: destination, wait: true, pending: pending)
                    report["result"] = .string(Playback.name(of: end))
                } catch {
                    // Interrupted: stop everything. The sound failed: the vibration still ends as
                    // asked, and the sound's error is the one reported.
                    if error.exitCode == .interrupted || error.exitCode == .terminated {
                        vibration?.stop()
                    } else {
                        try? vibration?.wait()
                    }
                    throw error
                }
            } else {
                report["result"] = .string("silenced")
            }
        }
        if let vibration {
            do {
                try vibration.wait()
            } catch where !vibrationOnly && error.exitCode != .interrupted && error.exitCode != .terminated {
                // The sound played; a vibrator that failed on the way is a warning, as at the start.
                report["vibration"] = .string("failed")
                parser.warn("vibration failed: \(error.message)")
            }
        }
        if vibrationOnly { report["result"] = report["vibration"] }
        finish(report, json: json, output: &output)
    }

    private static func finish(_ report: [String: JSON], json: Bool, output: inout String) {
        if json { output += JSON.object(report) + "\n" }
    }

    /// What a command-line target names.
    private static func identify(_ target: String) throws(CommandError) -> Target {
        guard let number = UInt32(target) else {
            guard !target.isEmpty else { throw CommandError.usage("the event name is empty") }
            return .event(target)
        }
        if number >= SoundRegistry.firstCustomSoundID { return .registered(number) }
        do {
            switch try SystemSoundCatalog.action(for: number) {
            case .play(let sound): return .system(number, event: sound.event)
            case .vibrate: return .vibrationOnly(number)
            }
        } catch {
            throw CommandError(
                message: "\(error.description); registered sounds have IDs from \(SoundRegistry.firstCustomSoundID)",
                exitCode: .noInput)
        }
    }
}
