import FeedbackServices

/// `feedbackctl haptics check|show FILE`: reads a haptic pattern (an AHAP file) as the library
/// does; `check` says whether it reads and what of it does not play here, `show` draws its lanes.
enum HapticsCommand: Subcommand {
    static let name = "haptics"
    static let abstract = "Check a haptic pattern (an AHAP file), or draw its lanes"
    static let discussion: [Paragraph] = [
        """
        A haptic pattern puts vibration and sound on one timeline: Apple's AHAP files
        (Core Haptics' JSON: HapticTransient and HapticContinuous events with intensity,
        sharpness and an envelope; AudioCustom sounds with volume and pan; Parameter and
        ParameterCurve changes over time). Not a vibration pattern ('vibrate --pattern'),
        which is one motor's steps.
        """,
        """
        check reads FILE and prints its length and what it holds, or why it cannot be read,
        naming the entry and the field (Pattern[3].Event.EventDuration). What reads but does
        not play as written here is a warning: sharpness (a rumble motor has one frequency),
        AudioContinuous (no synthesizer), audio pitch and brightness. show draws the lanes
        with block characters, one column per slice of time: intensity (with the intensity
        curves applied), sharpness, and the sounds.
        """,
        """
        Bounds: 1 MiB, 4,096 entries, 60 s, 1,024 points a curve and 16,384 in all; values in
        the ranges Core Haptics documents.
        """,
    ]

    static let action = Argument("ACTION", .oneOf(["check", "show"]), help: "check, or show (draw the lanes)")
    static let file = Argument("FILE", .file, help: "The AHAP file")
    static let arguments = [action, file]

    static let width = Option("--width", value: "COLUMNS", .number, help: "show: columns for the timeline, 16...400 (default 64)")
    static let json = Option.json(
        """
        Print {"file", "valid", "duration", "haptic", "sounds", "curves", "notes", "error",
        "lanes"}; error is null when valid, lanes only for show
        """)
    static let options = [width, json]

    static let exitStatus: String? = """
        0 the pattern reads; 65 it does not (the reason is printed); 66 no such file; 77 it
        cannot be read; 64 bad options.
        """

    static let examples = [
        "feedbackctl haptics check Heartbeat.ahap",
        "feedbackctl haptics show --width 100 Heartbeat.ahap",
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
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        guard ["check", "show"].contains(parser.positionals[0]) else {
            throw CommandError.usage("'\(parser.positionals[0])' is not an action; use check or show")
        }
        let path = parser.positionals[1]
        let showing = parser.positionals[0] == "show"
        var columns = 64
        if let text = parser.value(Self.width) {
            guard let value = Int(text), (16...400).contains(value) else {
                throw CommandError.usage("--width takes a whole number from 16 to 400, not '\(text)'")
            }
            columns = value
        }
        let result: Result<HapticPattern, HapticPatternError>
        do {
            result = .success(try HapticPattern(ahapFileAt: path))
        } catch {
            result = .failure(error)
        }
        let pattern = try? result.get()
        let haptic = pattern?.events.filter { if case .sound = $0 { false } else { true } }.count ?? 0
        let sounds = (pattern?.events.count ?? 0) - haptic
        let lanes = showing ? pattern.map { Lanes(pattern: $0, columns: columns) } : nil
        if parser.flag(Self.json) {
            var report = Report(
                file: path, valid: pattern != nil, duration: pattern?.duration ?? 0, haptic: haptic, sounds: sounds,
                curves: pattern?.curves.count ?? 0, notes: pattern?.notes ?? [])
            if case .failure(let error) = result { report.error = error.description }
            report.lanes = lanes.map { ["intensity": $0.intensity, "sharpness": $0.sharpness, "sound": $0.sound] }
            output += JSONOutput.line(report)
        } else if let pattern {
            func counted(_ count: Int, _ what: String) -> String { "\(count) \(what)\(count == 1 ? "" : "s")" }
            output += "\(path): \(Lanes.seconds(pattern.duration)), \(counted(haptic, "haptic event")), "
                + "\(counted(sounds, "sound")), \(counted(pattern.curves.count, "curve"))\n"
            if let lanes { output += lanes.text }
        }
        for note in pattern?.notes ?? [] { parser.warn(note) }
        if case .failure(let error) = result {
            let code: ExitCode = error.fileError?.exitCode ?? (error.problem == "no such file" ? .noInput : .dataError)
            throw CommandError(message: "cannot read the haptic pattern \(error)", exitCode: code)
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
        let levels = pattern.levels(at: instants.map(\.time), unknownSoundLength: step)
        for (instant, level) in zip(instants, levels) {
            let column = instant.column
            if let value = level.intensity { intensity[column] = max(intensity[column] ?? 0, value) }
            if let value = level.sharpness { sharpness[column] = max(sharpness[column] ?? 0, value) }
            if level.sound { sound[column] = true }
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
        var axis = "0 s"
        let last = Self.seconds(end)
        axis += String(repeating: " ", count: max(1, columns - axis.count - last.count)) + last
        self.axis = axis
    }

    /// The lanes with their names, and the time axis under them.
    var text: String {
        "intensity │\(intensity)│\nsharpness │\(sharpness)│\nsound     │\(sound)│\n           \(axis)\n"
    }

    /// "1.25 s".
    static func seconds(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100) s"
    }
}
