import FeedbackServices
import Glibc

/// `feedbackctl info [--json] FILE...`: decode files as registration would and describe them.
enum InfoCommand: Subcommand {
    static let name = "info"
    static let abstract = "Decode sound files and describe them"
    static let discussion: [Paragraph] = [
        """
        Each file is decoded as a sound would be registered: down-mixed to at most two
        channels and resampled to 48 kHz. A file longer than 30 s (the system-sound limit)
        is described too, up to 10 minutes; 'feedbackctl play' streams it. Every file is
        reported; the command exits with the first failure's code if any file failed.
        """
    ]

    static let files = Argument(
        "FILE", .file, repeats: true, help: "A sound file: WAV, RF64, AIFF, CAF, FLAC, Ogg Vorbis, Opus, MP3, …")
    static let arguments = [files]

    static let json = Option.json(
        """
        Print one JSON object: {"version", "sounds": [{"path", "container",
        "encoding", "sampleRate", "channels", "duration", "peak"}],
        "failed": [{"path", "message", "exitCode"}]}, and "error":
        {"message", "exitCode"} when a file failed
        """)
    static let options = [json]

    static let examples = [
        "feedbackctl info alert.oga",
        "feedbackctl info --json *.wav",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let sounds: [Sound]
        let failed: [Failure]
        /// The command's failure, as every command's `--json` reports one.
        var error: JSONFailure?

        struct Sound: Encodable {
            let path: String
            let container: String
            let encoding: String
            let sampleRate: Int
            let channels: Int
            let duration: Double
            let peak: Double
        }

        struct Failure: Encodable {
            let path: String
            let message: String
            let exitCode: Int32
        }
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag(Self.json)
        var sounds: [Report.Sound] = []
        var failures: [(path: String, error: CommandError)] = []
        // A file too long for a system sound is still a sound file: bounded as a rendering is.
        let decoder = SoundDecoder(maximumDuration: FileOutput.maximumDuration)
        for path in parser.positionals {
            let decoded: DecodedSound
            do {
                decoded = try decoder.decode(fileAt: path)
            } catch {
                let failure = CommandError(error)
                failures.append((path, failure))
                if !json && parser.positionals.count > 1 { output.write("\(path)\n  error:     \(failure.message)\n") }
                continue
            }
            let format = decoded.sourceFormat
            let buffer = decoded.buffer
            if json {
                sounds.append(
                    Report.Sound(
                        path: path, container: format.containerName, encoding: format.encodingName,
                        sampleRate: Int(decoded.sourceSampleRate), channels: Int(decoded.sourceChannelCount),
                        duration: JSONOutput.seconds(buffer.duration), peak: Double(buffer.peak)))
                continue
            }
            let streamed = buffer.duration > SoundDecoder.systemSoundDurationLimit ? " (over 30 s: too long to register; 'play' streams it)" : ""
            output.write(
                """
                \(path)
                  format:    \(format)
                  source:    \(decoded.sourceSampleRate) Hz, \(decoded.sourceChannelCount) ch
                  decoded:   \(buffer.sampleRate) Hz, \(buffer.channelCount) ch, \(buffer.frameCount) frames
                  duration:  \(formatSeconds(buffer.duration))\(streamed)
                  peak:      \(formatPeak(buffer.peak))

                """)
        }
        var failure: CommandError?
        if let first = failures.first {
            let names = failures.map(\.path).joined(separator: ", ")
            failure =
                parser.positionals.count == 1
                ? first.error
                : CommandError(
                    message: "\(failures.count) of \(parser.positionals.count) files could not be described: \(names)",
                    exitCode: first.error.exitCode)
        }
        if json {
            let failed = failures.map { Report.Failure(path: $0.path, message: $0.error.message, exitCode: $0.error.exitCode.rawValue) }
            output.write(JSONOutput.line(Report(sounds: sounds, failed: failed, error: failure.map(JSONFailure.init))))
        }
        if let failure { throw failure }
    }

    private static func formatSeconds(_ seconds: Double) -> String {
        "\((seconds * 1000).rounded() / 1000) s"
    }

    private static func formatPeak(_ peak: Float) -> String {
        guard peak > 0 else { return "silent" }
        return "\((20 * log10(Double(peak)) * 10).rounded() / 10) dBFS"
    }
}
