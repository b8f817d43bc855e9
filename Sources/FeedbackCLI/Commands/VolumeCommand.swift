import FeedbackServices

/// `feedbackctl volume ID|FILE [X] [--lufs TARGET] [--export FILE]`: re-register a sound at another
/// level and report (or write) the result.
enum VolumeCommand: Subcommand {
    static let name = "volume"
    static let abstract = "Change a sound's level (or normalise its loudness) and export it"
    static let help = """
        OVERVIEW: Change a sound's level (or normalise its loudness) and export it.

        The sound is registered as a program would register it, then re-registered at the
        new level: X times the original samples, clipped at full scale (or limited with
        --limit), or scaled to an EBU R128 integrated loudness with --lufs. The result is
        described, and with --export written as the source file is: its container, sample
        format, rate and channels, its own samples scaled (at X = 1, the same samples). A
        system sound ID (1000-1351) is looked up in the active sound theme. For an ID made
        by 'feedbackctl register' (4097 and up) the new level is also stored in the
        registry: 'feedbackctl fire ID' plays at it from then on.

        USAGE: feedbackctl volume [OPTIONS] ID|FILE [X]

        ARGUMENTS:
          ID|FILE          A system sound ID (1000-1351), a registered ID (4097 and up), or a
                           sound file
          X                Linear volume multiplier, 0 to 4 (+12 dB; 1 keeps the original level)

        OPTIONS:
          --lufs TARGET    Normalise to TARGET LUFS (e.g. -16) instead of a multiplier; uses
                           the peak limiter
          --limit          Limit peaks (5 ms attack, 50 ms release) instead of clipping them
          --export FILE    Write the adjusted sound to FILE
          --json           Print {"version", "source", "id", "multiplier", "loudnessBefore",
                           "loudness", "peak", "file"}; loudness is null when unmeasurable,
                           id is null unless a registered ID was changed
        \(ThemeOptions.help)
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXIT STATUS:
          0 done; 64 bad argument; 65 the sound is not usable (or, with --lufs, too quiet
          or short to measure), or the registry is damaged; 66 no such file or sound; 73 FILE
          (or the registry) cannot be written; 75 the registry is busy.

        EXAMPLES:
          feedbackctl volume alert.wav 0.5 --export alert-half.wav
          feedbackctl volume 1007 --lufs -16 --export tri-tone.wav
          feedbackctl volume 4097 0.3

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag("--json")
        let limit = parser.flag("--limit")
        let export = try parser.value("--export")
        let lufsText = try parser.value("--lufs")
        let themeOptions = try ThemeOptions(&parser)
        let arguments = try parser.finish(positionals: 1...2)
        let resolver = try themeOptions.resolver()
        let lufs: Double?
        if let lufsText {
            guard let value = Double(lufsText), value.isFinite, (-70.0...0).contains(value) else {
                throw CommandError.usage("--lufs takes a loudness from -70 to 0, not '\(lufsText)'")
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
        guard (multiplier == nil) != (lufs == nil) else {
            throw CommandError.usage("give either a multiplier X or --lufs TARGET")
        }
        let registeredID = SystemSoundID(arguments[0]).flatMap { $0 >= SoundRegistry.firstCustomSoundID ? $0 : nil }
        let path: String
        if let registeredID {
            path = try RegistryArguments.entry(registeredID, parser).path
        } else {
            path = try soundPath(arguments[0], resolver: resolver)
        }
        let registry = SoundRegistry()
        let sound: RegisteredSound
        let before: Double?
        do {
            let id = try registry.register(fileAt: path)
            before = try? registry.loudness(of: id)
            if let lufs {
                sound = try registry.normalizeLoudness(of: id, to: lufs)
            } else {
                sound = try registry.setVolume(multiplier!, for: id, limiting: limit ? .peakLimiter() : .clip)
            }
            if let export { try SoundExport.write(fileAt: path, volume: sound.volume, to: export) }
            if let registeredID { try RegistryArguments.registry(parser).setVolume(sound.volume, for: registeredID) }
        } catch let error as SoundError {
            throw CommandError(soundError: error)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError(message: "\(error)", exitCode: .software)
        }
        let after = try? registry.loudness(of: sound.id)
        if json {
            output += JSON.object([
                "version": .string(FeedbackCommand.version), "source": .string(path),
                "id": registeredID.map { .number(Double($0)) } ?? .null,
                "multiplier": .number(Double(sound.volume.multiplier)),
                "loudnessBefore": before.map { .number($0) } ?? .null, "loudness": after.map { .number($0) } ?? .null,
                "peak": .number(Double(sound.buffer.peak)), "file": export.map { .string($0) } ?? .null,
            ]) + "\n"
            return
        }
        output += """
            \(path)
              multiplier: \(rounded(Double(sound.volume.multiplier), 4))\(limit || lufs != nil ? " (peak limiter)" : "")
              loudness:   \(describe(before)) → \(describe(after))
              peak:       \(rounded(Double(sound.buffer.peak), 4))

            """
        if let export { output += "  written:    \(export)\n" }
        if let registeredID { output += "  stored:     \(registeredID) plays at this level from now on\n" }
    }

    private static func soundPath(_ target: String, resolver: SoundThemeResolver) throws(CommandError) -> String {
        guard let number = UInt32(target) else { return target }
        let sound: SystemSound
        do {
            sound = try SystemSoundCatalog.sound(for: number)
        } catch {
            throw CommandError(message: error.description, exitCode: .noInput)
        }
        guard case .resolved(let file) = resolver.resolve(sound) else {
            throw CommandError(message: "no sound file for system sound \(number) ('\(sound.event)')", exitCode: .noInput)
        }
        return file.path
    }

    private static func describe(_ loudness: Double?) -> String {
        loudness.map { "\(rounded($0, 2)) LUFS" } ?? "unmeasurable"
    }

    private static func rounded(_ value: Double, _ digits: Int) -> Double {
        let scale = Double([1, 10, 100, 1_000, 10_000][digits])
        return (value * scale).rounded() / scale
    }
}
