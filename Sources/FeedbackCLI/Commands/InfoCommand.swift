import FeedbackServices
import Glibc

/// `feedbackctl info [--json] FILE...`: decode files as registration would and describe them.
enum InfoCommand: Subcommand {
    static let name = "info"
    static let abstract = "Decode sound files and describe them"
    static let help = """
        OVERVIEW: Decode sound files and describe them.

        Each file is decoded as a sound would be registered: down-mixed to at most two
        channels and resampled to 48 kHz. Files longer than 30 s are refused, as system
        sounds are. The first file that cannot be decoded stops the command with its error.

        USAGE: feedbackctl info [--json] FILE...

        ARGUMENTS:
          FILE             A sound file: WAV, RF64, AIFF, CAF, FLAC, Ogg Vorbis, Opus, MP3, …

        OPTIONS:
          --json           Print one JSON object: {"version", "sounds": [{"path", "container",
                           "encoding", "sampleRate", "channels", "duration", "peak"}]}
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXAMPLES:
          feedbackctl info alert.oga
          feedbackctl info --json *.wav

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag("--json")
        let paths = try parser.finish(positionals: 1...)
        var entries: [JSON] = []
        for path in paths {
            let decoded: DecodedSound
            do {
                decoded = try SoundDecoder().decode(fileAt: path)
            } catch {
                throw CommandError(error)
            }
            let format = decoded.sourceFormat
            let buffer = decoded.buffer
            if json {
                entries.append(
                    .object([
                        "path": .string(path),
                        "container": .string(format.containerName),
                        "encoding": .string(format.encodingName),
                        "sampleRate": .number(Double(decoded.sourceSampleRate)),
                        "channels": .number(Double(decoded.sourceChannelCount)),
                        "duration": .number(buffer.duration),
                        "peak": .number(Double(buffer.peak)),
                    ]))
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
            output.write(JSON.object(["version": .string(FeedbackCommand.version), "sounds": .array(entries)]) + "\n")
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
