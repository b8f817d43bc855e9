import FeedbackServices

/// `feedbackctl play FILE`: play a sound file on the engine.
enum PlayCommand: Subcommand {
    static let name = "play"
    static let abstract = "Play a sound file"
    static let help = """
        OVERVIEW: Play a sound file.

        The file is decoded whole (WAV, RF64, AIFF, CAF, FLAC, Ogg Vorbis, Opus, MP3, …; up to
        30 s, the system-sound limit), resampled to 48 kHz and played on the engine. The
        command returns when the sound has been played, unless --no-wait is given. Ctrl-C
        stops the sound, then exits with 130.

        USAGE: feedbackctl play [OPTIONS] FILE

        ARGUMENTS:
          FILE             The sound file

        OPTIONS:
          --volume X       Linear volume, 0 (silent) to 4 (+12 dB); 1 plays as recorded
          --pan X          Balance from -1 (left only) through 0 (centre) to 1 (right only)
          --loop N         Play N times in all (default 1)
          --output FILE    Render into FILE (.wav, .flac, .ogg, …) instead of playing
          --canberra       Play through libcanberra instead of the engine
          --no-wait        Return at once; a detached feedbackctl plays the sound (its errors
                           are not reported)
          --json           Print {"version", "file", "duration", "result"}
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXAMPLES:
          feedbackctl play alert.oga
          feedbackctl play --pan -1 --loop 3 click.wav
          feedbackctl play --output mixed.wav alert.oga

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let volume = try SoundArguments.volume(&parser)
        let pan = try SoundArguments.number(&parser, "--pan", in: -1...1) ?? 0
        let loops = try SoundArguments.count(&parser, "--loop") ?? 1
        let destination = try Playback.destination(&parser)
        let noWait = parser.flag("--no-wait")
        let json = parser.flag("--json")
        let path = try parser.finish(positionals: 1)[0]
        // Connect to the sound server while the file is decoded.
        let pending = noWait ? nil : PendingOutput.opening(destination)
        let buffer = try SoundArguments.decode(path)
        let end = try Playback.play(
            buffer, options: PlaybackOptions(volume: volume, pan: pan, playCount: loops), to: destination,
            wait: !noWait, pending: pending)
        if json {
            output += JSON.object([
                "version": .string(FeedbackCommand.version), "file": .string(path),
                "duration": .number(buffer.duration * Double(loops)), "result": .string(Playback.name(of: end)),
            ]) + "\n"
        }
    }
}

/// Options and arguments shared by the commands that play sounds.
enum SoundArguments {
    /// `--volume X`, 0 to `VolumeLimit.maximum` (default 1).
    static func volume(_ parser: inout ArgumentParser) throws(CommandError) -> Float {
        try number(&parser, "--volume", in: VolumeLimit.range) ?? 1
    }

    /// A number option within `range`.
    static func number(_ parser: inout ArgumentParser, _ name: String, in range: ClosedRange<Float>)
        throws(CommandError) -> Float?
    {
        guard let text = try parser.value(name) else { return nil }
        guard let value = Float(text), value.isFinite, range.contains(value) else {
            throw CommandError.usage("\(name) takes a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    /// A count option, 1 or more.
    static func count(_ parser: inout ArgumentParser, _ name: String) throws(CommandError) -> Int? {
        guard let text = try parser.value(name) else { return nil }
        guard let value = Int(text), value >= 1 else {
            throw CommandError.usage("\(name) takes a whole number of 1 or more, not '\(text)'")
        }
        return value
    }

    /// Decodes a sound file for playing, mapping its errors to exit codes.
    static func decode(_ path: String) throws(CommandError) -> PCMBuffer {
        do {
            return try SoundDecoder().decode(fileAt: path).buffer
        } catch {
            throw CommandError(soundError: error)
        }
    }
}
