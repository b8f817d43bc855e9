/// `feedbackctl version [--json]`.
enum VersionCommand: Subcommand {
    static let name = "version"
    static let abstract = "Print the version"
    static let help = """
        OVERVIEW: Print the version of feedbackctl.

        USAGE: feedbackctl version [--json]

        OPTIONS:
          --json           Print {"version": "…"}
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag("--json")
        try parser.finish(positionals: 0)
        if json {
            output.write(JSON.object(["version": .string(FeedbackCommand.version)]) + "\n")
        } else {
            output.write("feedbackctl \(FeedbackCommand.version)\n")
        }
    }
}
