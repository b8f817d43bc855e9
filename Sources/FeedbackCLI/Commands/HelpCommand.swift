/// `feedbackctl help [COMMAND]`.
enum HelpCommand: Subcommand {
    static let name = "help"
    static let abstract = "Show help for feedbackctl or one command"
    static let help = """
        OVERVIEW: Show help for feedbackctl or one of its commands.

        'feedbackctl help CMD', 'feedbackctl CMD --help' and 'feedbackctl CMD -h' print the same text.

        USAGE: feedbackctl help [COMMAND]

        ARGUMENTS:
          COMMAND          The command to describe

        OPTIONS:
          -h, --help       Show this help

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let arguments = try parser.finish(positionals: 0...1)
        guard let name = arguments.first else { return output.write(FeedbackCommand.overview) }
        guard let command = FeedbackCommand.subcommand(named: name) else {
            throw CommandError.usage("no help for unknown command '\(name)'")
        }
        output.write(command.help)
    }
}
