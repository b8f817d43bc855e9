import FeedbackServices

/// `feedbackctl devices [--audio|--vibrators|--leds] [--json] [--input-dir DIR] [--sysfs-root DIR]`:
/// the sound server and its sinks, libcanberra, the ALSA cards and PCMs, the session service, and
/// the vibrators and LEDs this machine has.
enum DevicesCommand: Subcommand {
    static let name = "devices"
    static let abstract = "List the sound server, its outputs, the vibrators and the LEDs"
    static let discussion: [Paragraph] = [
        """
        The audio side is the PulseAudio server (PULSE_SERVER, else the user's socket; on
        PipeWire, pipewire-pulse): its name and version, whether it is pipewire-pulse, and
        its sinks with their description, sample format and state, the default one marked;
        then whether libcanberra can play; then the ALSA sound cards and the PCMs that play,
        which --pcm NAME (or FEEDBACKSERVICES_ALSA_PCM) chooses among when there is no
        server; then the output sounds go to and why: FEEDBACKSERVICES_OUTPUT (pipewire,
        pulseaudio, alsa or canberra) when set, PulseAudio when PULSE_SERVER names a server,
        PipeWire when its daemon answers, PulseAudio otherwise, ALSA when no server answers.
        With PipeWire, whether the thread its stream would run on gets real-time scheduling
        here (asked of libpipewire without connecting). A server that does not answer within
        2 s is reported as absent, with the reason.
        """,
        """
        A vibrator is an evdev device (/dev/input/event*) with force feedback: rumble or periodic
        effects. Each is listed with its node, name, supported effects and how many effects it
        holds at once.
        """,
        """
        An LED is a class device under /sys/class/leds, listed as `feedbackctl led list` lists it.

        Without --audio, --vibrators or --leds, the session service is listed after the audio side:
        whether feedbackservicesd runs on the session bus, its process, profile, sound theme,
        audio output, and the notification server it sees and who plays the sounds notifications
        ask for (asked without starting it).
        """,
    ]

    static let audio = Option("--audio", help: "List only the audio side; no sound server is then an error (69)")
    static let vibrators = Option("--vibrators", help: "List only the vibrators")
    static let leds = Option("--leds", help: "List only the LEDs")
    static let json = Option.json(
        """
        Print one JSON object: {"version", "output": {"kind", "reason",
        "streamThread": {"realTime", "policy", "priority"} (PipeWire only)},
        "audio": {"server": {"name",
        "version", "address", "pipewire"}, "sinks": [{"name",
        "description", "default", "format", "rate", "channels",
        "state"}]}, "canberra": {"available", "error"}, "alsa": {"cards":
        [{"index", "name", "longName"}], "pcms": [{"name",
        "description"}]}, "vibrators": [{"path", "name", "effects",
        "maximumEffects", "gain"}], "leds": [as led list --json],
        "service": {"running", "pid", "profile", "theme", "output",
        "notifications"}; audio
        is null when no server answered and "audioError" says why,
        vibrators and leds likewise with "vibratorsError" and "ledsError";
        with --audio, --vibrators or --leds only that side's members are
        present; "error": {"message", "exitCode"} when the command fails
        """)
    static let inputDirectory = Option("--input-dir", value: "DIR", .directory, help: "Scan DIR instead of /dev/input")
    static let options = [audio, vibrators, leds, json, inputDirectory, LEDCommand.root]
    static let usage: [[UsageItem]] = [
        [.oneOf([audio, vibrators, leds]), .optional([json, inputDirectory, LEDCommand.root])]
    ]

    static let exitStatus: String? = """
        0 also when there is no sound server, vibrator or LED; 64 bad options; 69 with
        --audio, when no sound server answers; 77 when the only candidate vibrator nodes may
        not be opened (add the user to the 'input' group or give the device a udev
        'uaccess' tag).
        """

    static let examples = [
        "feedbackctl devices",
        "feedbackctl devices --audio --json | jq '.audio.sinks[] | select(.default)'",
        "PULSE_SERVER=unix:/tmp/pulse/native feedbackctl devices --audio",
    ]

    /// What `--json` prints: each side's members only when that side was listed; a side that
    /// could not be listed is null, and its error says why.
    struct Report: Encodable {
        var output: Output?
        var audio: Nullable<Audio>?
        var audioError: String?
        var canberra: Canberra?
        var alsa: ALSA?
        var vibrators: Nullable<[Vibrator]>?
        var vibratorsError: String?
        var leds: Nullable<[LEDCommand.ListReport.LED]>?
        var ledsError: String?
        var service: DaemonRoute.State?
        /// The command's failure, as every command's `--json` reports one.
        var error: JSONFailure?

        /// The output `AudioOutputSelection.automatic()` tries first; kind null when
        /// FEEDBACKSERVICES_OUTPUT names none.
        struct Output: Encodable {
            let kind: String?
            let reason: String
            var streamThread: StreamThread?
        }

        /// How PipeWire would schedule the output's stream thread.
        struct StreamThread: Encodable {
            let realTime: Bool
            let policy: String
            let priority: Int
        }

        struct Audio: Encodable {
            let server: Server
            let sinks: [Sink]
        }

        struct Server: Encodable {
            let name: String
            let version: String
            let address: String
            let pipewire: Bool
        }

        struct Sink: Encodable {
            let name: String
            let description: String
            let `default`: Bool
            let format: String
            let rate: Int
            let channels: Int
            let state: String
        }

        struct Canberra: Encodable {
            let available: Bool
            @Nullable var error: String?
        }

        struct ALSA: Encodable {
            let cards: [Card]
            let pcms: [PCM]

            struct Card: Encodable {
                let index: Int
                let name: String
                let longName: String
            }

            struct PCM: Encodable {
                let name: String
                let description: String
            }
        }

        struct Vibrator: Encodable {
            let path: String
            let name: String
            let effects: [String]
            let maximumEffects: Int
            let gain: Bool
        }
    }

    /// How long the sound server and libcanberra may take to answer.
    static let timeout = 2.0

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let audioOnly = parser.flag(Self.audio)
        let vibratorsOnly = parser.flag(Self.vibrators)
        let ledsOnly = parser.flag(Self.leds)
        let inputDirectory = parser.value(Self.inputDirectory)
        let only = [(audioOnly, Self.audio), (vibratorsOnly, Self.vibrators), (ledsOnly, Self.leds)].filter(\.0).map(\.1.name)
        if only.count > 1 {
            throw CommandError.usage(only.joined(separator: " and ") + " exclude each other")
        }
        if audioOnly && inputDirectory != nil {
            throw CommandError.usage("\(Self.inputDirectory.name) lists vibrators; it does not go with \(Self.audio.name)")
        }
        let directory = inputDirectory ?? Vibration.inputDirectory

        var report = Report()
        var text: [String] = []
        var failure: CommandError?

        if !vibratorsOnly && !ledsOnly {
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
                report.audio = Nullable(audioReport(info))
                text += audioText(info)
            case .failure(let error):
                report.audio = Nullable(nil)
                report.audioError = error.description
                text += ["Sound server: none", "  \(error.description)"]
                if audioOnly { failure = CommandError(error) }
            }
            switch canberra {
            case .success:
                report.canberra = Report.Canberra(available: true, error: nil)
                text.append("libcanberra: available")
            case .failure(let error):
                report.canberra = Report.Canberra(available: false, error: error.description)
                text += ["libcanberra: not available", "  \(error.description)"]
            }
            let alsa = ALSADeviceList.current()
            report.alsa = alsaReport(alsa)
            text += alsaText(alsa)
            let choice = AudioOutputSelection.choice(environment: parser.environment)
            report.output = Report.Output(kind: choice.kind?.rawValue, reason: choice.reason)
            // The reason may hold parentheses of its own (a server's address): after a colon.
            text.append("Output: \(choice.kind?.rawValue ?? "none"): \(choice.reason)")
            if choice.kind == .pipeWire {
                let scheduling = PipeWireOutput.streamThreadScheduling()
                report.output?.streamThread = scheduling.map {
                    Report.StreamThread(realTime: $0.isRealTime, policy: $0.policyName, priority: Int($0.priority))
                }
                text.append("  stream thread: \(scheduling?.description ?? "unknown (libpipewire's data thread did not answer)")")
            }
        }

        if !audioOnly && !vibratorsOnly && !ledsOnly {
            let state = DaemonRoute(environment: parser.environment)?.state() ?? DaemonRoute.State(running: false)
            report.service = state
            text += serviceText(state)
        }

        if !audioOnly && !ledsOnly {
            do {
                let vibrators = try VibratorDiscovery(directory: directory).vibrators()
                report.vibrators = Nullable(vibrators.map(vibratorReport))
                if !text.isEmpty { text.append("") }
                text += vibrators.isEmpty ? ["No vibrators in \(directory)."] : vibrators.flatMap(vibratorText)
            } catch {
                // Asked for alone (--vibrators), a vibrator error is the whole answer.
                if vibratorsOnly { throw CommandError(error) }
                report.vibrators = Nullable(nil)
                report.vibratorsError = error.description
                failure = CommandError(error)
            }
        }

        if !audioOnly && !vibratorsOnly {
            let discovery = LEDDiscovery(root: parser.value(LEDCommand.root) ?? "/")
            do {
                let leds = try discovery.leds()
                report.leds = Nullable(leds.map(LEDCommand.listEntry))
                if !text.isEmpty { text.append("") }
                text += leds.isEmpty ? ["No LEDs in \(discovery.directory)."] : leds.flatMap(LEDCommand.ledText)
            } catch {
                if ledsOnly { throw CommandError(error) }
                report.leds = Nullable(nil)
                report.ledsError = error.description
                failure = failure ?? CommandError(error)
            }
        }

        report.error = failure.map(JSONFailure.init)
        output += parser.flag(Self.json) ? JSONOutput.line(report) : text.map { $0 + "\n" }.joined()
        if let failure { throw failure }
    }

    private static func serviceText(_ state: DaemonRoute.State) -> [String] {
        guard state.running, let pid = state.pid else { return ["Service: feedbackservicesd is not running"] }
        let output = state.output.flatMap { $0.isEmpty ? nil : $0 } ?? "none open yet"
        return [
            "Service: feedbackservicesd, process \(pid)",
            "  profile:   \(state.profile ?? "?")",
            "  theme:     \(state.theme ?? "?")",
            "  output:    \(output)",
            "  notifications: \(state.notifications.flatMap { $0.isEmpty ? nil : $0 } ?? "?")",
        ]
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

    private static func audioReport(_ info: SoundServerInfo) -> Report.Audio {
        Report.Audio(
            server: Report.Server(
                name: info.serverName, version: info.serverVersion, address: info.address, pipewire: info.isPipeWire),
            sinks: info.sinks.map { sink in
                Report.Sink(
                    name: sink.name, description: sink.description, default: sink.isDefault, format: sink.sampleFormat,
                    rate: Int(sink.sampleRate), channels: Int(sink.channelCount), state: sink.state.rawValue)
            })
    }

    private static func alsaText(_ list: ALSADeviceList) -> [String] {
        var lines = [list.cards.isEmpty ? "ALSA: no sound cards" : "ALSA cards:"]
        lines += list.cards.map { "  \($0.index) \($0.name): \($0.longName)" }
        lines.append(list.pcms.isEmpty ? "ALSA PCMs: none" : "ALSA PCMs (--pcm NAME):")
        // Descriptions in one column, after the longest name.
        let width = list.pcms.map(\.name.count).max() ?? 0
        lines += list.pcms.map { pcm in
            pcm.description.isEmpty ? "  \(pcm.name)" : "  \(pcm.name)\(String(repeating: " ", count: width - pcm.name.count))  \(pcm.description)"
        }
        return lines
    }

    private static func alsaReport(_ list: ALSADeviceList) -> Report.ALSA {
        Report.ALSA(
            cards: list.cards.map { Report.ALSA.Card(index: $0.index, name: $0.name, longName: $0.longName) },
            pcms: list.pcms.map { Report.ALSA.PCM(name: $0.name, description: $0.description) })
    }

    private static func vibratorText(_ info: VibratorInfo) -> [String] {
        [
            info.path,
            "  name:      \(info.name)",
            "  effects:   \(info.capabilities.names.joined(separator: ", "))",
            "  slots:     \(info.maximumEffects)",
        ]
    }

    private static func vibratorReport(_ info: VibratorInfo) -> Report.Vibrator {
        Report.Vibrator(
            path: info.path, name: info.name, effects: info.capabilities.names, maximumEffects: Int(info.maximumEffects),
            gain: info.supportsGain)
    }
}
