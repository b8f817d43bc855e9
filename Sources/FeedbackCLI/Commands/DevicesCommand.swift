import FeedbackServices

/// `feedbackctl devices [--audio|--vibrators] [--json] [--input-dir DIR]`: the sound server and its
/// sinks, libcanberra, and the vibrators this machine has.
enum DevicesCommand: Subcommand {
    static let name = "devices"
    static let abstract = "List the sound server, its outputs and the vibrators"
    static let help = """
        OVERVIEW: List the sound server, its outputs and the vibrators.

        The audio side is the PulseAudio server the engine plays on (PULSE_SERVER, else the
        user's socket): its name and version, whether it is pipewire-pulse, and its sinks
        with their description, sample format and state, the default one marked; then
        whether libcanberra can play. A server that does not answer within 2 s is reported
        as absent, with the reason.

        A vibrator is an evdev device (/dev/input/event*) with force feedback: rumble or periodic
        effects. Each is listed with its node, name, supported effects and how many effects it
        holds at once.

        USAGE: feedbackctl devices [--audio | --vibrators] [--json] [--input-dir DIR]

        OPTIONS:
          --audio          List only the audio side; no sound server is then an error (69)
          --vibrators      List only the vibrators
          --json           Print one JSON object: {"version", "audio": {"server": {"name",
                           "version", "address", "pipewire"}, "sinks": [{"name",
                           "description", "default", "format", "rate", "channels",
                           "state"}]}, "canberra": {"available", "error"}, "vibrators":
                           [{"path", "name", "effects", "maximumEffects", "gain"}]}; audio is
                           null when no server answered and "audioError" says why, vibrators
                           likewise with "vibratorsError"; with --audio or --vibrators only
                           that side's members are present
          --input-dir DIR  Scan DIR instead of /dev/input
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXIT STATUS:
          0 also when there is no sound server or no vibrator; 64 bad options; 69 with
          --audio, when no sound server answers; 77 when the only candidate vibrator nodes may
          not be opened (add the user to the 'input' group or give the device a udev
          'uaccess' tag).

        EXAMPLES:
          feedbackctl devices
          feedbackctl devices --audio --json | jq '.audio.sinks[] | select(.default)'
          PULSE_SERVER=unix:/tmp/pulse/native feedbackctl devices --audio

        """

    /// How long the sound server and libcanberra may take to answer.
    static let timeout = 2.0

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let audioOnly = parser.flag("--audio")
        let vibratorsOnly = parser.flag("--vibrators")
        let json = parser.flag("--json")
        let inputDirectory = try parser.value("--input-dir")
        try parser.finish(positionals: 0)
        if audioOnly && vibratorsOnly { throw CommandError.usage("--audio and --vibrators exclude each other") }
        if audioOnly && inputDirectory != nil { throw CommandError.usage("--input-dir lists vibrators; it does not go with --audio") }
        let directory = inputDirectory ?? "/dev/input"

        var report: [String: JSON] = ["version": .string(FeedbackCommand.version)]
        var text: [String] = []
        var failure: CommandError?

        if !vibratorsOnly {
            let server = Result { () throws(SoundServerError) in try SoundServerInfo.query(timeout: timeout) }
            // libcanberra plays through the same server, so it is only tried when that answered:
            // a silent server is not waited for twice, and libcanberra's connection, which may
            // autospawn a server, never starts one for a listing.
            let canberra: Result<Void, PlaybackError> =
                switch server {
                case .success: Result { () throws(PlaybackError) in try CanberraOutput.checkAvailability(timeout: timeout) }
                case .failure: .failure(PlaybackError(.serverUnavailable, detail: "libcanberra plays through it"))
                }
            switch server {
            case .success(let info):
                report["audio"] = audioJSON(info)
                text += audioText(info)
            case .failure(let error):
                report["audio"] = .null
                report["audioError"] = .string(error.description)
                text += ["Sound server: none", "  \(error.description)"]
                if audioOnly { failure = CommandError(error) }
            }
            switch canberra {
            case .success:
                report["canberra"] = .object(["available": .bool(true), "error": .null])
                text.append("libcanberra: available")
            case .failure(let error):
                report["canberra"] = .object(["available": .bool(false), "error": .string(error.description)])
                text += ["libcanberra: not available", "  \(error.description)"]
            }
        }

        if !audioOnly {
            do {
                let vibrators = try VibratorDiscovery(directory: directory).vibrators()
                report["vibrators"] = .array(vibrators.map(vibratorJSON))
                if !text.isEmpty { text.append("") }
                text += vibrators.isEmpty ? ["No vibrators in \(directory)."] : vibrators.flatMap(vibratorText)
            } catch {
                // Alone, a vibrator error is the whole answer, as before the audio side was listed.
                if vibratorsOnly { throw CommandError(error) }
                report["vibrators"] = .null
                report["vibratorsError"] = .string(error.description)
                failure = CommandError(error)
            }
        }

        output += json ? JSON.object(report) + "\n" : text.map { $0 + "\n" }.joined()
        if let failure { throw failure }
    }

    private static func audioText(_ info: SoundServerInfo) -> [String] {
        var lines = ["Sound server: \(info.serverName) \(info.serverVersion) at \(info.address)"]
        if info.sinks.isEmpty { lines.append("  no sinks") }
        for sink in info.sinks {
            lines += [
                "  \(sink.name)\(sink.isDefault ? " (default)" : "")",
                "    description: \(sink.description)",
                "    format:      \(sink.sampleFormat), \(sink.channelCount) ch, \(sink.sampleRate) Hz",
                "    state:       \(sink.state.rawValue)",
            ]
        }
        return lines
    }

    private static func audioJSON(_ info: SoundServerInfo) -> JSON {
        .object([
            "server": .object([
                "name": .string(info.serverName), "version": .string(info.serverVersion),
                "address": .string(info.address), "pipewire": .bool(info.isPipeWire),
            ]),
            "sinks": .array(
                info.sinks.map { sink in
                    .object([
                        "name": .string(sink.name), "description": .string(sink.description),
                        "default": .bool(sink.isDefault), "format": .string(sink.sampleFormat),
                        "rate": .number(Double(sink.sampleRate)), "channels": .number(Double(sink.channelCount)),
                        "state": .string(sink.state.rawValue),
                    ])
                }),
        ])
    }

    private static func vibratorText(_ info: VibratorInfo) -> [String] {
        [
            info.path,
            "  name:      \(info.name)",
            "  effects:   \(info.capabilities.names.joined(separator: ", "))",
            "  slots:     \(info.maximumEffects)",
        ]
    }

    private static func vibratorJSON(_ info: VibratorInfo) -> JSON {
        .object([
            "path": .string(info.path),
            "name": .string(info.name),
            "effects": .array(info.capabilities.names.map { .string($0) }),
            "maximumEffects": .number(Double(info.maximumEffects)),
            "gain": .bool(info.supportsGain),
        ])
    }
}
