import FeedbackServices

/// `feedbackctl devices [--json] [--input-dir DIR]`: the vibrators this machine has.
enum DevicesCommand: Subcommand {
    static let name = "devices"
    static let abstract = "List vibration devices"
    static let help = """
        OVERVIEW: List vibration devices.

        A vibrator is an evdev device (/dev/input/event*) with force feedback: rumble or periodic
        effects. Each is listed with its node, name, supported effects and how many effects it
        holds at once.

        USAGE: feedbackctl devices [--json] [--input-dir DIR]

        OPTIONS:
          --json           Print one JSON object: {"version", "vibrators": [{"path", "name",
                           "effects", "maximumEffects", "gain"}]}
          --input-dir DIR  Scan DIR instead of /dev/input
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXIT STATUS:
          0 also when there is no vibrator; 77 when the only candidate nodes may not be opened
          (add the user to the 'input' group or give the device a udev 'uaccess' tag).

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag("--json")
        let directory = try parser.value("--input-dir") ?? "/dev/input"
        try parser.finish(positionals: 0)
        let vibrators: [VibratorInfo]
        do {
            vibrators = try VibratorDiscovery(directory: directory).vibrators()
        } catch {
            throw CommandError(hapticsError: error)
        }
        if json {
            let entries: [JSON] = vibrators.map { info in
                .object([
                    "path": .string(info.path),
                    "name": .string(info.name),
                    "effects": .array(info.capabilities.names.map { .string($0) }),
                    "maximumEffects": .number(Double(info.maximumEffects)),
                    "gain": .bool(info.supportsGain),
                ])
            }
            return output.write(JSON.object(["version": .string(FeedbackCommand.version), "vibrators": .array(entries)]) + "\n")
        }
        guard !vibrators.isEmpty else { return output.write("No vibrators in \(directory).\n") }
        for info in vibrators {
            output.write(
                """
                \(info.path)
                  name:      \(info.name)
                  effects:   \(info.capabilities.names.joined(separator: ", "))
                  slots:     \(info.maximumEffects)

                """)
        }
    }
}
