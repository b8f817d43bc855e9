import FeedbackServices

/// `feedbackctl volume ID|FILE [X] [--lufs TARGET] [--export FILE]`: re-register a sound at another
/// level and report (or write) the result.
enum VolumeCommand: Subcommand {
    static let name = "volume"
    static let abstract = "Change a sound's level (or normalise its loudness) and export it"
    static let discussion: [Paragraph] = [
        """
        The sound is registered as a program would register it, then re-registered at the
        new level: X times the original samples, clipped at full scale (or limited with
        --limit), or scaled to an EBU R128 integrated loudness with --lufs. The result is
        described, and with --export written as the source file is: its container, sample
        format, rate and channels, its own samples scaled (at X = 1, the same samples). A
        system sound ID (1000-1351) is looked up in the active sound theme. For an ID made
        by 'feedbackctl register' (4097 and up) the new level is also stored in the
        registry: 'feedbackctl fire ID' plays at it from then on. A system sound or a file
        keeps its own level: only --export writes the adjusted sound. With neither X nor
        --lufs, the sound's level is shown as it now plays (a registered ID at its stored
        level).
        """
    ]

    static let target = Argument(
        "ID|FILE", .systemSoundID, .file,
        help: """
            A system sound ID (1000-1351), a registered ID (4097 and up), or a
            sound file
            """)
    static let multiplier = Argument(
        "X", .number, optional: true, help: "Linear volume multiplier, 0 to 4 (+12 dB; 1 keeps the original level)")
    static let arguments = [target, multiplier]

    static let lufs = Option(
        "--lufs", value: "TARGET", .number,
        help: """
            Normalise to TARGET LUFS (e.g. -16) instead of a multiplier; uses
            the peak limiter
            """)
    static let limit = Option("--limit", help: "Limit peaks (5 ms attack, 50 ms release) instead of clipping them")
    static let export = Option("--export", value: "FILE", .file, help: "Write the adjusted sound to FILE")
    static let json = Option.json(
        """
        Print {"version", "source", "id", "multiplier", "loudnessBefore",
        "loudness", "peak", "file"}; loudness is null when unmeasurable,
        id is null unless a registered ID was changed
        """)
    static let options = [lufs, limit, export, json] + ThemeOptions.all
    static let usage: [[UsageItem]] = [[.options, .arguments]]

    static let exitStatus: String? = """
        0 done; 64 bad argument; 65 the sound is not usable (or, with --lufs, too quiet
        or short to measure), or the registry is damaged; 66 no such file or sound; 73 FILE
        (or the registry) cannot be written; 75 the registry is busy.
        """

    static let examples = [
        "feedbackctl volume alert.wav 0.5 --export alert-half.wav",
        "feedbackctl volume 1007 --lufs -16 --export tri-tone.wav",
        "feedbackctl volume 4097 0.3",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let source: String
        /// The registered ID whose level was changed.
        @Nullable var id: SystemSoundID?
        let multiplier: Double
        @Nullable var loudnessBefore: Double?
        @Nullable var loudness: Double?
        let peak: Double
        /// The file written with `--export`.
        @Nullable var file: String?
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let limit = parser.flag(Self.limit)
        let export = parser.value(Self.export)
        let lufsText = parser.value(Self.lufs)
        let themeOptions = ThemeOptions(parser)
        let arguments = parser.positionals
        let resolver = try themeOptions.resolver()
        let lufs: Double?
        if let lufsText {
            guard let value = Double(lufsText), value.isFinite, (-70.0...0).contains(value) else {
                throw CommandError.usage("\(Self.lufs.name) takes a loudness from -70 to 0, not '\(lufsText)'")
            }
            lufs = value
        } else {
            lufs = nil
        }
        let multiplier: Float?
        if arguments.count == 2 {
            guard let value = Float(arguments[1]), value.isFinite, VolumeLimit.range.contains(value) else {
                throw CommandError.usage("X takes a number from 0 to \(Int(VolumeLimit.maximum)), not '\(arguments[1])'")
            }
            multiplier = value
        } else {
            multiplier = nil
        }
        if multiplier != nil && lufs != nil {
            throw CommandError.usage("give either a multiplier X or --lufs TARGET, not both")
        }
        let registeredID = SystemSoundID(arguments[0]).flatMap { SoundIDRange($0) == .persistent ? $0 : nil }
        let path: String
        var stored = VolumeAdjustment.unchanged
        if let registeredID {
            let entry = try RegistryArguments.entry(registeredID, parser)
            path = entry.path
            stored = entry.volume
        } else {
            path = try soundPath(arguments[0], resolver: resolver)
        }
        let registry = SoundRegistry()
        let sound: RegisteredSound
        let before: Double?
        let changes = multiplier != nil || lufs != nil
        let persistent = registeredID == nil || !changes ? nil : try RegistryArguments.registry(parser)
        do {
            let id = try registry.register(fileAt: path)
            before = try? registry.loudness(of: id)
            if let lufs {
                sound = try registry.normalizeLoudness(of: id, to: lufs)
            } else if let multiplier {
                sound = try registry.setVolume(multiplier, for: id, limiting: limit ? .peakLimiter() : .clip)
            } else {
                sound = try registry.setVolume(stored, for: id)
            }
            if let export { try SoundExport.write(fileAt: path, volume: sound.volume, to: export) }
            if let registeredID, let persistent { try persistent.setVolume(sound.volume, for: registeredID) }
        } catch {
            throw CommandError(error)
        }
        let after = try? registry.loudness(of: sound.id)
        if parser.flag(Self.json) {
            output += JSONOutput.line(
                Report(
                    source: path, id: changes ? registeredID : nil, multiplier: Double(sound.volume.multiplier), loudnessBefore: before,
                    loudness: after, peak: Double(sound.buffer.peak), file: export))
            return
        }
        let why = unmeasurableReason(sound.buffer)
        let loudness = changes ? "\(describe(before, why)) → \(describe(after, why))" : describe(after, why)
        output += """
            \(path)
              multiplier: \(rounded(Double(sound.volume.multiplier), 4))\(limit || lufs != nil ? " (peak limiter)" : "")
              loudness:   \(loudness)
              peak:       \(rounded(Double(sound.buffer.peak), 4))

            """
        if let export { output += "  written:    \(export)\n" }
        if !changes {
            output += "  level:      \(registeredID.map { "stored for \($0)" } ?? "as recorded"); give X or --lufs TARGET to change it\n"
        } else if let registeredID {
            output += "  stored:     \(registeredID) plays at this level from now on\n"
        } else if export == nil {
            output += "  not saved:  a system sound or file keeps its own level; --export FILE writes this one\n"
        }
    }

    private static func soundPath(_ target: String, resolver: SoundThemeResolver) throws(CommandError) -> String {
        guard let number = UInt32(target) else { return target }
        let sound: SystemSound
        do {
            sound = try SystemSoundCatalog.sound(for: number)
        } catch {
            throw CommandError(error)
        }
        guard case .resolved(let file) = resolver.resolve(sound) else {
            throw CommandError(message: "no sound file for system sound \(number) ('\(sound.event)')", exitCode: .noInput)
        }
        return file.path
    }

    private static func describe(_ loudness: Double?, _ unmeasurableReason: String) -> String {
        loudness.map { "\(rounded($0, 2)) LUFS" } ?? "unmeasurable (\(unmeasurableReason))"
    }

    /// Why EBU R128 finds no loudness in `buffer`, when it finds none.
    private static func unmeasurableReason(_ buffer: PCMBuffer) -> String {
        if let reason = OptionalLibrary.ebur128.unavailableReason { return reason }
        if buffer.duration < 0.4 { return "shorter than 0.4 s, the block EBU R128 measures" }
        if buffer.peak == 0 { return "silent" }
        return "no 400 ms block louder than -70 LUFS, EBU R128's gate"
    }

    private static func rounded(_ value: Double, _ digits: Int) -> Double {
        let scale = Double([1, 10, 100, 1_000, 10_000][digits])
        return (value * scale).rounded() / scale
    }
}
