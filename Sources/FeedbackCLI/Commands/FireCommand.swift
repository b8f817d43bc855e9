import FeedbackServices

/// `feedbackctl fire ID|EVENT`: play a system sound or a theme event, as an alert would.
enum FireCommand: Subcommand {
    static let name = "fire"
    static let abstract = "Play a system sound (1000-1351) or a theme event now"
    static let help = """
        OVERVIEW: Play a system sound (1000-1351) or a theme event now.

        A number is an AudioServices system sound ID (1007 is the tri-tone; see
        'feedbackctl list'); anything else is a sound theme event name such as
        message-new-instant. The sound is looked up in the active sound theme (see
        'feedbackctl theme'), decoded, and played on the engine: a PulseAudio stream that
        starts the sound at once. The command returns when the sound has been played,
        unless --no-wait is given. Ctrl-C stops the sound, then exits with 130.

        USAGE: feedbackctl fire [OPTIONS] ID|EVENT

        ARGUMENTS:
          ID|EVENT         A system sound ID (1000-1351) or a theme event name

        OPTIONS:
          --volume X       Linear volume, 0 (silent) to 1 (as recorded); above 1 is louder
                           (default 1)
          --output FILE    Render into FILE (.wav, .flac, .ogg, …) instead of playing
          --canberra       Play through libcanberra instead of the engine
          --no-wait        Return at once; a detached feedbackctl plays the sound (its errors
                           are not reported)
          --json           Print {"version", "id", "event", "file", "duration", "result"}
        \(ThemeOptions.help)
          -h, --help       Show this help

        EXIT STATUS:
          0 played (or the theme disables the event); 64 bad argument; 65 the sound file is
          not usable; 66 no sound for that ID or event; 69 no audio output (no PulseAudio
          server: the message says where it looked); 130 stopped by Ctrl-C.

        EXAMPLES:
          feedbackctl fire 1007
          feedbackctl fire message-new-instant --volume 0.5
          feedbackctl fire 1007 --output tri-tone.wav

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let volume = try SoundArguments.volume(&parser)
        let destination = try Playback.destination(&parser)
        let noWait = parser.flag("--no-wait")
        let json = parser.flag("--json")
        let themeOptions = try ThemeOptions(&parser)
        let target = try parser.finish(positionals: 1)[0]
        let resolver = try themeOptions.resolver()

        let (id, event) = try identify(target)
        let result: SoundLookupResult
        do {
            result = try resolver.resolve(event)
        } catch {
            throw CommandError.usage(error.description)
        }
        var report: [String: JSON] = [
            "version": .string(FeedbackCommand.version), "event": .string(event),
            "id": id.map { .number(Double($0)) } ?? .null, "file": .null, "duration": .null,
        ]
        switch result {
        case .notFound:
            throw CommandError(message: "no sound for '\(event)': \(ThemeOptions.describe(result))", exitCode: .noInput)
        case .disabled(let sound):
            report["result"] = .string("disabled")
            report["file"] = .string(sound.path)
        case .resolved(let sound):
            let buffer = try SoundArguments.decode(sound.path)
            let end = try Playback.play(buffer, options: PlaybackOptions(volume: volume), to: destination, wait: !noWait)
            report["file"] = .string(sound.path)
            report["duration"] = .number(buffer.duration)
            report["result"] = .string(Playback.name(of: end))
        }
        if json { output += JSON.object(report) + "\n" }
    }

    /// The system sound ID and theme event a target names.
    private static func identify(_ target: String) throws(CommandError) -> (SystemSoundID?, String) {
        guard let number = UInt32(target) else { return (nil, target) }
        do {
            switch try SystemSoundCatalog.action(for: number) {
            case .play(let sound):
                return (number, sound.event)
            case .vibrate:
                throw CommandError(
                    message: "system sound \(number) only vibrates; vibration is not available in this build",
                    exitCode: .unavailable)
            }
        } catch let error as SystemSoundCatalogError {
            throw CommandError(message: error.description, exitCode: .noInput)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError(message: "\(error)", exitCode: .software)
        }
    }
}
