/// `feedbackctl help [--man] [COMMAND]`.
enum HelpCommand: Subcommand {
    static let name = "help"
    static let abstract = "Show help for feedbackctl or one command"
    static let summary = "Show help for feedbackctl or one of its commands."
    static let discussion: [Paragraph] = [
        "'feedbackctl help CMD', 'feedbackctl CMD --help' and 'feedbackctl CMD -h' print the same text."
    ]

    static let command = Argument("COMMAND", .command, optional: true, help: "The command to describe")
    static let arguments = [command]

    static let manual = Option(
        "--man", help: """
            Print the manual page, feedbackctl(1), in roff instead; it is made
            from the same help texts
            """)
    static let options = [manual]

    static let examples = [
        "feedbackctl help fire",
        "feedbackctl help --man | man -l -",
    ]

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        if parser.flag(Self.manual) {
            guard parser.positionals.isEmpty else { throw CommandError.usage("--man prints the whole manual; give no COMMAND") }
            return output.write(Documentation.manPage)
        }
        guard let name = parser.positionals.first else { return output.write(FeedbackCommand.overview) }
        guard let command = FeedbackCommand.subcommand(named: name) else {
            throw CommandError.usage("no help for unknown command '\(name)'")
        }
        output.write(command.help)
    }
}
