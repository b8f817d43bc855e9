import Dispatch
import FeedbackServices
import Synchronization

/// `feedbackctl haptics check|show|play FILE`: reads a haptic pattern (an AHAP file or our own
/// JSON form) as the library does; `check` says whether it reads and what of it does not play here, `show` draws
/// its lanes, `play` plays it (or renders its sounds into a file).
enum HapticsCommand: Subcommand {
    static let name = "haptics"
    static let abstract = "Check, draw or play a haptic pattern (AHAP or our own JSON)"
    static let discussion: [Paragraph] = [
        """
        A haptic pattern puts vibration and sound on one timeline: Apple's AHAP files
        (Core Haptics' JSON: HapticTransient and HapticContinuous events with intensity,
        sharpness and an envelope; AudioCustom sounds with volume and pan; Parameter and
        ParameterCurve changes over time), or our own JSON form, which also names sounds by
        ID or theme event, named primitives and LED lights: {"events": [{"type": "sound",
        "time": 0, "id": 1007}, {"type": "primitive", "time": 0, "name": "click"},
        {"type": "light", "time": 0, "duration": 1, "color": "blue", "frequency": 2}]}
        (docs/haptics.md lists every field). Not a vibration pattern ('vibrate --pattern'),
        which is one motor's steps.
        """,
        """
        check reads FILE and prints its length and what it holds, or why it cannot be read,
        naming the entry and the field (Pattern[3].Event.EventDuration). What reads but does
        not play as written here is a warning: sharpness (a rumble motor has one frequency),
        AudioContinuous (no synthesizer), audio pitch and brightness. show draws the lanes
        with block characters, one column per slice of time: intensity (with the intensity
        curves applied), sharpness, the sounds, and the lights (a pattern that has them: the
        colour's initial, R G B W).
        """,
        """
        play plays it: the vibration on the first vibrator (or --device), as one motor's
        steps, and the sounds on the sound server (or --canberra, --pcm), each at its time,
        with the volume and pan curves followed, mixed once and played as one sound; the
        vibration and the lights start when the sound output says the first frame is heard
        (at once with --canberra), and the command returns when all have ended (Ctrl-C stops
        them). Each light is on the first LED that shows its colour (--sysfs-root as for
        'led'). The profile applies: quiet plays the vibration and the lights, silent the
        lights. With no vibrator the sounds play alone, with a warning; a light no LED can
        show is skipped, with a warning.
        play --output FILE renders the sounds into FILE instead, sample-exactly, as
        'fire --output' renders a sound (the vibration is not in a sound file).
        """,
        """
        Bounds: 1 MiB, 4,096 entries, 60 s, 1,024 points a curve and 16,384 in all; values in
        the ranges Core Haptics documents.
        """,
    ]

    static let action = Argument("ACTION", .oneOf(["check", "show", "play"]), help: "check, show (draw the lanes), or play")
    static let file = Argument("FILE", .file, help: "The pattern file (AHAP, or our own JSON form)")
    static let arguments = [action, file]

    static let width = Option("--width", value: "COLUMNS", .number, help: "show: columns for the timeline, 16...400 (default 64)")
    static let json = Option.json(
        """
        check, show: print {"file", "valid", "duration", "haptic", "sounds", "curves", "notes",
        "error", "lanes", "lights"}; error is null when valid, lanes only for show (with
        "light" when there are lights). play: {"file", "duration", "sound", "vibration",
        "output", "notes", "lights"}, each lane finished, stopped, silenced, unavailable,
        rendered or none
        """)
    static let device = Option(
        "--device", value: "PATH|NAME", .file, help: "play: the vibrator's device node, or a text its name contains")
    static let inputDirectory = Option(
        "--input-dir", value: "DIR", .directory, help: "play: look for vibrators in DIR (default /dev/input)")
    static let options = [
        width, SoundArguments.output, SoundArguments.canberra, SoundArguments.pcm, device, inputDirectory, LEDCommand.root, json,
    ]

    static let exitStatus: String? = """
        0 the pattern reads (and played); 65 it does not, or one of its sounds is not a sound
        file we play (the reason is printed); 66 no such file; 77 it cannot be read; 69 play:
        no sound output, or no vibrator for a pattern without sounds; 73 the --output file
        cannot be written; 130 and 143 stopped by Ctrl-C or SIGTERM; 64 bad options.
        """

    static let examples = [
        "feedbackctl haptics check Heartbeat.ahap",
        "feedbackctl haptics show --width 100 Heartbeat.ahap",
        "feedbackctl haptics play Heartbeat.ahap",
        "feedbackctl haptics play --output heartbeat.wav Heartbeat.ahap",
        "feedbackctl haptics play ring.json",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let file: String
        let valid: Bool
        let duration: Double
        let haptic: Int
        let sounds: Int
        let curves: Int
        let notes: [String]
        @Nullable var error: String?
        @Nullable var lanes: [String: String]?
        let lights: Int
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let action = parser.positionals[0]
        guard ["check", "show", "play"].contains(action) else {
            throw CommandError.usage("'\(action)' is not an action; use check, show or play")
        }
        let path = parser.positionals[1]
        let forPlay = [SoundArguments.output, SoundArguments.pcm, device, inputDirectory, LEDCommand.root].filter { parser.value($0) != nil }
            + (parser.flag(SoundArguments.canberra) ? [SoundArguments.canberra] : [])
        if action != "play", let option = forPlay.first {
            throw CommandError.usage("\(option.name) is an option of play, not of \(action)")
        }
        if action != "show", parser.value(Self.width) != nil {
            throw CommandError.usage("\(Self.width.name) is an option of show, not of \(action)")
        }
        if action == "play" {
            try play(path, &parser, output: &output)
            return
        }
        let showing = action == "show"
        var columns = 64
        if let text = parser.value(Self.width) {
            guard let value = Int(text), (16...400).contains(value) else {
                throw CommandError.usage("--width takes a whole number from 16 to 400, not '\(text)'")
            }
            columns = value
        }
        let result: Result<HapticPattern, HapticPatternError>
        do {
            result = .success(try HapticPattern(fileAt: path))
        } catch {
            result = .failure(error)
        }
        let pattern = try? result.get()
        let haptic = pattern?.events.filter(\.vibrates).count ?? 0
        let sounds = pattern?.events.filter(\.isSound).count ?? 0
        let lights = pattern?.events.filter(\.isLight).count ?? 0
        let lanes = showing ? pattern.map { Lanes(pattern: $0, columns: columns) } : nil
        if parser.flag(Self.json) {
            var report = Report(
                file: path, valid: pattern != nil, duration: pattern?.duration ?? 0, haptic: haptic, sounds: sounds,
                curves: pattern?.curves.count ?? 0, notes: pattern?.notes ?? [], lights: lights)
            if case .failure(let error) = result { report.error = error.description }
            report.lanes = lanes.map { lanes in
                var drawn = ["intensity": lanes.intensity, "sharpness": lanes.sharpness, "sound": lanes.sound]
                if let light = lanes.light { drawn["light"] = light }
                return drawn
            }
            output += JSONOutput.line(report)
        } else if let pattern {
            func counted(_ count: Int, _ what: String) -> String { "\(count) \(what)\(count == 1 ? "" : "s")" }
            output += "\(path): \(Lanes.seconds(pattern.duration)), \(counted(haptic, "haptic event")), "
                + "\(counted(sounds, "sound")), \(counted(pattern.curves.count, "curve"))"
                + (lights > 0 ? ", \(counted(lights, "light"))\n" : "\n")
            if let lanes { output += lanes.text }
        }
        for note in pattern?.notes ?? [] { parser.warn(note) }
        if case .failure(let error) = result { throw unreadable(error) }
    }

    /// Why a pattern file cannot be read, as the command exits with it.
    private static func unreadable(_ error: HapticPatternError) -> CommandError {
        CommandError(message: "cannot read the haptic pattern \(error)", exitCode: error.exitCode)
    }

    /// What `play --json` prints: how each lane ended (`finished`, `stopped`, `silenced` by the
    /// profile, `unavailable`: no vibrator; `none`: the pattern has none; `rendered` into `output`).
    struct PlayReport: Encodable {
        let file: String
        let duration: Double
        var sound: String
        var vibration: String
        @Nullable var output: String?
        let notes: [String]
        var lights = "none"
    }

    /// `play FILE`: see the discussion.
    private static func play(_ path: String, _ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let destination = try Playback.destination(&parser)
        let pattern: HapticPattern
        do {
            pattern = try HapticPattern(fileAt: path)
        } catch {
            throw unreadable(error)
        }
        for note in pattern.notes { parser.warn(note) }
        let warnings = Lock<[String]>([])
        var report = PlayReport(file: path, duration: pattern.duration, sound: "none", vibration: "none", notes: pattern.notes)
        let hasSounds = pattern.events.contains(where: \.isSound)
        defer {
            if parser.flag(Self.json) { output += JSONOutput.line(report) }
        }
        /// The sound lane at `rate`: IDs and events looked up in the user's registry and sound
        /// theme, as 'fire' looks them up.
        func decoded(at rate: Int) throws(CommandError) -> HapticPatternSounds {
            let registry = SoundRegistry(
                decoder: SoundDecoder(sampleRate: rate), persistentRegistry: try? SoundRegistryFile(environment: parser.environment))
            let manager = FeedbackManager(registry: registry, vibrator: .none, settings: FeedbackSettings(environment: parser.environment))
            do throws(FeedbackError) {
                let sounds = try manager.sounds(of: pattern, maximumDecodedSeconds: HapticPatternSounds.maximumDecodedSeconds)
                for note in sounds.notes { parser.warn(note) }
                return sounds
            } catch .pattern(let error) {
                throw CommandError(message: "cannot play the haptic pattern \(error)", exitCode: .dataError)
            } catch .invalidName(let error) {
                // A name from the file, not from the command line: the file is at fault.
                throw CommandError(message: "a sound of the haptic pattern \(path): \(error)", exitCode: .dataError)
            } catch {
                throw CommandError(message: "a sound of the haptic pattern \(path): \(error)", exitCode: error.exitCode)
            }
        }

        if case .file(let file) = destination {
            guard hasSounds, let mix = try decoded(at: 48_000).mix else {
                throw CommandError(
                    message: "the haptic pattern \(path) has no sounds: there is nothing to render into \(file)", exitCode: .dataError)
            }
            try Playback.render(mix, options: PlaybackOptions(), to: file)
            report.sound = "rendered"
            report.vibration = pattern.vibrationPattern == nil ? "none" : "not rendered"
            if pattern.events.contains(where: \.isLight) { report.lights = "not rendered" }
            report.output = file
            return
        }

        let profile = FeedbackSettings(environment: parser.environment).profile
        // The slow parts first (the output's connection, decoding), so that both lanes start together.
        var sounds: (HapticPatternSounds, any AudioOutput)?
        if hasSounds {
            if profile.allowsSound {
                let audio: any AudioOutput
                do {
                    audio = try Playback.opener(for: destination)()
                    // The stream opened now, so that the sounds start when the vibration does.
                    try audio.prepare(timeout: 5)
                } catch {
                    throw CommandError(error)
                }
                sounds = (try decoded(at: audio.requiredSampleRate ?? 48_000), audio)
            } else {
                report.sound = "silenced"
            }
        }
        var vibration: Vibration?
        if let steps = pattern.vibrationPattern {
            if !profile.allowsVibration {
                report.vibration = "silenced"
            } else {
                do {
                    // With sounds, made ready now and started when the first frame is heard.
                    vibration = try Vibration.start(
                        steps, on: Vibration.selector(parser.value(Self.device)), directory: parser.value(Self.inputDirectory) ?? Vibration.inputDirectory,
                        held: sounds != nil)
                } catch let error where sounds != nil && error.exitCode != .interrupted && error.exitCode != .terminated {
                    parser.warn("\(error.message): the sounds play alone")
                    report.vibration = "unavailable"
                }
            }
        }
        let lights = LightLane(pattern, discovery: LEDDiscovery(root: parser.value(LEDCommand.root) ?? "/")) { problem in
            warnings.withLock { $0.append(problem) }
        }
        let lightsDone = DispatchSemaphore(value: 0)
        lights.whenEnded { lightsDone.signal() }
        defer {
            for warning in warnings.withLock({ $0 }) { parser.warn(warning) }
        }
        /// Waits for the lights to end (Ctrl-C ends them), and says how they ended.
        func waitForLights() throws(CommandError) {
            guard !lights.isEmpty else { return }
            do {
                try Interruption.wait(for: lightsDone) { lights.stop() }
            } catch {
                report.lights = "stopped"
                throw error
            }
            report.lights = warnings.withLock { $0.isEmpty } ? "finished" : "unavailable"
        }
        guard let (lane, audio) = sounds, let mix = lane.mix else {
            vibration?.release(at: nil)
            lights.start(at: nil)
            do {
                try vibration?.wait()
            } catch {
                lights.stop()
                throw error
            }
            if vibration != nil { report.vibration = "finished" }
            try waitForLights()
            return
        }
        let done = DispatchSemaphore(value: 0)
        let end = Lock<PlaybackEnd?>(nil)
        let handle = audio.play(mix, options: PlaybackOptions(), queue: .global()) { ended in
            end.withLock { $0 = ended }
            done.signal()
        }
        // The mix starts at the pattern's 0 s: the vibration and the lights start when its first
        // frame is heard.
        let held = vibration
        handle.whenHeard { instant in
            held?.release(at: instant)
            lights.start(at: instant)
        }
        do {
            try Interruption.wait(for: done) {
                handle.stop()
                vibration?.stop()
                lights.stop()
            }
        } catch {
            report.sound = "stopped"
            if vibration != nil { report.vibration = "stopped" }
            if !lights.isEmpty { report.lights = "stopped" }
            throw error
        }
        do {
            try vibration?.wait()
        } catch {
            lights.stop()
            throw error
        }
        if vibration != nil { report.vibration = "finished" }
        try waitForLights()
        switch end.withLock({ $0 }) {
        case .failed(let error): throw CommandError(error)
        case .stopped, .cancelled: report.sound = "stopped"
        default: report.sound = "finished"
        }
    }
}

/// A pattern drawn in `columns` columns, each covering an equal slice of its duration: the
/// highest value met in the slice, as a block of eight heights (a space for nothing). A pure
/// function of the pattern; tests compare its text exactly.
struct Lanes: Equatable {
    let intensity: String
    let sharpness: String
    let sound: String
    /// The lights, each column the initial of the first colour lit in it; nil for a pattern
    /// without lights.
    let light: String?
    let axis: String

    static let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    init(pattern: HapticPattern, columns: Int) {
        let end = max(pattern.duration, HapticPattern.transientDuration)
        let step = end / Double(columns)
        // Each column is sampled at four instants across its slice, and at every event's start
        // within it, so that a tap narrower than a column is never lost.
        var instants: [(column: Int, time: Double)] = []
        for column in 0..<columns {
            instants += (0..<4).map { (column, (Double(column) + Double($0) / 4) * step) }
        }
        for time in Set(pattern.events.map(\.time)) {
            instants.append((min(columns - 1, Int(time / step)), time))
        }
        var intensity = [Double?](repeating: nil, count: columns)
        var sharpness = [Double?](repeating: nil, count: columns)
        var sound = [Bool](repeating: false, count: columns)
        var light = [LEDColor?](repeating: nil, count: columns)
        let levels = pattern.levels(at: instants.map(\.time), unknownSoundLength: step)
        for (instant, level) in zip(instants, levels) {
            let column = instant.column
            if let value = level.intensity { intensity[column] = max(intensity[column] ?? 0, value) }
            if let value = level.sharpness { sharpness[column] = max(sharpness[column] ?? 0, value) }
            if level.sound { sound[column] = true }
            if light[column] == nil { light[column] = level.light }
        }
        func draw(_ values: [Double?]) -> String {
            String(values.map { value in
                guard let value else { return " " }
                // 0…1/8 the lowest block (something is felt, however faint), 7/8…1 the full one.
                return Self.blocks[max(0, min(Self.blocks.count - 1, Int((value * 8).rounded(.up)) - 1))]
            })
        }
        self.intensity = draw(intensity)
        self.sharpness = draw(sharpness)
        self.sound = String(sound.map { $0 ? "█" : " " })
        let hasLights = pattern.events.contains(where: \.isLight)
        self.light = hasLights ? String(light.map { $0.map { Character($0.rawValue.prefix(1).uppercased()) } ?? " " }) : nil
        var axis = "0 s"
        let last = Self.seconds(end)
        axis += String(repeating: " ", count: max(1, columns - axis.count - last.count)) + last
        self.axis = axis
    }

    /// The lanes with their names, and the time axis under them.
    var text: String {
        "intensity │\(intensity)│\nsharpness │\(sharpness)│\nsound     │\(sound)│\n"
            + (light.map { "light     │\($0)│\n" } ?? "") + "           \(axis)\n"
    }

    /// "1.25 s".
    static func seconds(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100) s"
    }
}
