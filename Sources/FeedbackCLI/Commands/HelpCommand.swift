/// `feedbackctl help [--man] [COMMAND]`.
enum HelpCommand: Subcommand {
    static let name = "help"
    static let abstract = "Show help for feedbackctl or one command"
    static let help = """
        OVERVIEW: Show help for feedbackctl or one of its commands.

        'feedbackctl help CMD', 'feedbackctl CMD --help' and 'feedbackctl CMD -h' print the same text.

        USAGE: feedbackctl help [--man] [COMMAND]

        ARGUMENTS:
          COMMAND          The command to describe

        OPTIONS:
          --man            Print the manual page, feedbackctl(1), in roff instead; it is made
                           from the same help texts
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXAMPLES:
          feedbackctl help fire
          feedbackctl help --man | man -l -

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let manual = parser.flag("--man")
        let arguments = try parser.finish(positionals: 0...1)
        if manual {
            guard arguments.isEmpty else { throw CommandError.usage("--man prints the whole manual; give no COMMAND") }
            return output.write(Documentation.manPage)
        }
        guard let name = arguments.first else { return output.write(FeedbackCommand.overview) }
        guard let command = FeedbackCommand.subcommand(named: name) else {
            throw CommandError.usage("no help for unknown command '\(name)'")
        }
        output.write(command.help)
    }
}
