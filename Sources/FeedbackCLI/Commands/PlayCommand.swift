import FeedbackServices

/// `feedbackctl play FILE`: play a sound file on the engine.
enum PlayCommand: Subcommand {
    static let name = "play"
    static let abstract = "Play a sound file"
    static let discussion: [Paragraph] = [
        """
        The file (WAV, RF64, AIFF, CAF, FLAC, Ogg Vorbis, Opus, MP3, …) is decoded whole,
        resampled to 48 kHz and played on the engine; a file longer than 30 s (the
        system-sound limit) is streamed from disk as it plays, as music is, and with
        --output rendered up to 10 minutes. The command returns when the sound has been
        played, unless --no-wait is given. Ctrl-C stops the sound, then exits with 130.
        """
    ]

    static let file = Argument("FILE", .file, help: "The sound file")
    static let arguments = [file]

    static let pan = Option(
        "--pan", value: "X", .number, help: "Balance from -1 (left only) through 0 (centre) to 1 (right only)")
    static let loop = Option(
        "--loop", value: "N", .number,
        help: """
            Play N times in all (default 1); with --output, at most 10 minutes
            of sound in all
            """)
    static let json = Option.json(
        """
        Print {"version", "file", "duration", "result"}; duration is null
        when a streamed file's header does not give its length
        """)
    static let options = [
        SoundArguments.volume, pan, loop, SoundArguments.output, SoundArguments.canberra, SoundArguments.pcm, SoundArguments.noWait, json,
    ]
    static let usage: [[UsageItem]] = [[.options, .arguments]]

    static let examples = [
        "feedbackctl play alert.oga",
        "feedbackctl play --pan -1 --loop 3 click.wav",
        "feedbackctl play --output mixed.wav alert.oga",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let file: String
        /// Null for a streamed file whose header does not give its length.
        @Nullable var duration: Double?
        let result: String
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let volume = try SoundArguments.volume(parser)
        let pan = try SoundArguments.number(parser, Self.pan, in: -1...1) ?? 0
        let loops = try SoundArguments.count(parser, Self.loop) ?? 1
        let destination = try Playback.destination(&parser)
        let noWait = parser.flag(SoundArguments.noWait)
        let json = parser.flag(Self.json)
        let path = parser.positionals[0]
        // A file the user asked for by name: the feedback profile does not apply.
        let manager = Playback.manager(for: destination, parser, profile: .full)
        // Connect to the sound server while the file is decoded. (The service plays no files.)
        Route.decide(destination, serviceMayPlay: false, environment: parser.environment)
            .open(for: manager, plays: !noWait, environment: parser.environment)
        let options = PlaybackOptions(volume: volume, pan: pan, playCount: loops)
        let sound: ResolvedAlertSound
        do {
            sound = try manager.resolve(.file(path))
        } catch where isTooLongForASystemSound(error) {
            let result = try playLong(path, on: destination, options: options, noWait: noWait)
            let duration = result.duration.map { JSONOutput.seconds($0 * Double(loops)) }
            if json { output += JSONOutput.line(Report(file: path, duration: duration, result: result.result)) }
            return
        } catch {
            throw CommandError(error)
        }
        let buffer = sound.buffer!
        let result: String
        if case .file(let output) = destination {
            try Playback.render(buffer, options: options, to: output)
            result = "finished"
        } else if noWait {
            _ = try Detach.relaunch()
            result = "started"
        } else {
            let played = try Playback.play(sound, on: manager, type: .audioOnly, options: options)
            result = try Playback.name(of: played.sound) ?? "finished"
        }
        if json {
            output += JSONOutput.line(Report(file: path, duration: JSONOutput.seconds(buffer.duration * Double(loops)), result: result))
        }
    }
}

extension PlayCommand {
    /// Whether the file failed only for being longer than a system sound may be.
    private static func isTooLongForASystemSound(_ error: FeedbackError) -> Bool {
        if case .sound(let error) = error, case .exceedsMaximumDuration = error.reason { true } else { false }
    }

    /// Plays a file too long to hold as a system sound: streamed, or rendered into a file (which
    /// holds the whole sound anyway) from a decoding bounded by what a file output takes.
    /// - Returns: the file's length in seconds (nil when its header does not say) and how the
    ///   play ended.
    private static func playLong(
        _ path: String, on destination: Playback.Destination, options: PlaybackOptions, noWait: Bool
    ) throws(CommandError) -> (duration: Double?, result: String) {
        if case .file(let target) = destination {
            let decoded: DecodedSound
            do {
                decoded = try SoundDecoder(maximumDuration: FileOutput.maximumDuration).decode(fileAt: path)
            } catch {
                throw CommandError(error)
            }
            try Playback.render(decoded.buffer, options: options, to: target)
            return (decoded.buffer.duration, "finished")
        }
        let duration: Double?
        do {
            let length = try SoundFileReader(path: path).duration
            duration = length.isFinite ? length : nil
        } catch {
            throw CommandError(error)
        }
        if noWait {
            _ = try Detach.relaunch()
            return (duration, "started")
        }
        return (duration, try Playback.stream(fileAt: path, on: destination, options: options))
    }
}

/// The options the commands that play sounds share (`fire`, `play`), and reading numbers.
enum SoundArguments {
    static let volume = Option(
        "--volume", value: "X", .number,
        help: """
            Linear volume, 0 (silent) to 4 (+12 dB); 1 plays as recorded
            (default 1)
            """)
    static let output = Option(
        "--output", value: "FILE", .file,
        help: """
            Render into FILE instead of playing: .wav, .rf64, .aiff, .caf, .flac,
            .ogg, .opus or .mp3 (no extension: WAV; - is standard output)
            """)
    static let canberra = Option("--canberra", help: "Play through libcanberra instead of the engine")
    static let pcm = Option(
        "--pcm", value: "NAME", .text,
        help: """
            Play on the ALSA PCM NAME (default, hw:0,0, plughw:1, dmix, ...)
            with no sound server; FEEDBACKSERVICES_ALSA_PCM names the PCM
            the engine falls back to when no server answers
            """)
    static let noWait = Option(
        "--no-wait",
        help: """
            Return at once; a detached feedbackctl plays the sound (its errors
            are not reported)
            """)

    /// `--volume X`, 0 to `VolumeLimit.maximum` (default 1); `option` is `register`'s, whose help
    /// says what it stores.
    static func volume(_ parser: ArgumentParser, _ option: Option = volume) throws(CommandError) -> Float {
        try number(parser, option, in: VolumeLimit.range) ?? 1
    }

    /// A number option within `range`.
    static func number(_ parser: ArgumentParser, _ option: Option, in range: ClosedRange<Float>)
        throws(CommandError) -> Float?
    {
        guard let text = parser.value(option) else { return nil }
        guard let value = Float(text), value.isFinite, range.contains(value) else {
            throw CommandError.usage("\(option.name) takes a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    /// A count option, 1 or more.
    static func count(_ parser: ArgumentParser, _ option: Option) throws(CommandError) -> Int? {
        guard let text = parser.value(option) else { return nil }
        guard let value = Int(text), value >= 1 else {
            throw CommandError.usage("\(option.name) takes a whole number of 1 or more, not '\(text)'")
        }
        return value
    }
}
