import FeedbackServices
import Glibc

/// `feedbackctl info [--json] FILE...`: decode files as registration would and describe them.
enum InfoCommand: Subcommand {
    static let name = "info"
    static let abstract = "Decode sound files and describe them"
    static let discussion: [Paragraph] = [
        """
        Each file is decoded as a sound would be registered: down-mixed to at most two
        channels and resampled to 48 kHz. Files longer than 30 s are refused, as system
        sounds are. The first file that cannot be decoded stops the command with its error.
        """
    ]

    static let files = Argument(
        "FILE", .file, repeats: true, help: "A sound file: WAV, RF64, AIFF, CAF, FLAC, Ogg Vorbis, Opus, MP3, …")
    static let arguments = [files]

    static let json = Option.json(
        """
        Print one JSON object: {"version", "sounds": [{"path", "container",
        "encoding", "sampleRate", "channels", "duration", "peak"}]}
        """)
    static let options = [json]

    static let examples = [
        "feedbackctl info alert.oga",
        "feedbackctl info --json *.wav",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let sounds: [Sound]

        struct Sound: Encodable {
            let path: String
            let container: String
            let encoding: String
            let sampleRate: Int
            let channels: Int
            let duration: Double
            let peak: Double
        }
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag(Self.json)
        var sounds: [Report.Sound] = []
        for path in parser.positionals {
            let decoded: DecodedSound
            do {
                decoded = try SoundDecoder().decode(fileAt: path)
            } catch {
                throw CommandError(soundError: error)
            }
            let format = decoded.sourceFormat
            let buffer = decoded.buffer
            if json {
                sounds.append(
                    Report.Sound(
                        path: path, container: format.containerName, encoding: format.encodingName,
                        sampleRate: Int(decoded.sourceSampleRate), channels: Int(decoded.sourceChannelCount),
                        duration: buffer.duration, peak: Double(buffer.peak)))
                continue
            }
            output.write(
                """
                \(path)
                  format:    \(format)
                  source:    \(decoded.sourceSampleRate) Hz, \(decoded.sourceChannelCount) ch
                  decoded:   \(buffer.sampleRate) Hz, \(buffer.channelCount) ch, \(buffer.frameCount) frames
                  duration:  \(formatSeconds(buffer.duration))
                  peak:      \(formatPeak(buffer.peak))

                """)
        }
        if json {
            output.write(JSONOutput.line(Report(sounds: sounds)))
        }
    }

    private static func formatSeconds(_ seconds: Double) -> String {
        "\((seconds * 1000).rounded() / 1000) s"
    }

    private static func formatPeak(_ peak: Float) -> String {
        guard peak > 0 else { return "silent" }
        return "\((20 * log10(Double(peak)) * 10).rounded() / 10) dBFS"
    }
}
