/// The help a command prints, made from its declarations and its prose: OVERVIEW, the discussion,
/// USAGE, ARGUMENTS, OPTIONS, EXIT STATUS and EXAMPLES, each section after a blank line.
///
/// An entry of ARGUMENTS or OPTIONS is its names and value at column 3 and its description at
/// column 20, on the next line when the names are too long; the description keeps its own line
/// breaks. Usage forms are wrapped at `width`, going on under the command's first option.
enum HelpText {
    /// The widest a wrapped line may be (usage forms, the overview's exit statuses): as wide as
    /// the hand-wrapped prose of the help goes.
    static let width = 88

    /// The column descriptions start at.
    private static let descriptionColumn = 19

    /// The help of `command`.
    static func text(of command: any Subcommand.Type) -> String {
        var blocks = ["OVERVIEW: \(command.summary)\n"]
        blocks += command.discussion.map(paragraph)
        blocks.append(usage(usageForms(of: command)))
        if !command.arguments.isEmpty {
            blocks.append("ARGUMENTS:\n" + command.arguments.map { entry($0.name, $0.help) }.joined())
        }
        blocks.append("OPTIONS:\n" + options(command.allOptions))
        if let exitStatus = command.exitStatus { blocks.append("EXIT STATUS:\n" + indented(exitStatus)) }
        if !command.examples.isEmpty { blocks.append("EXAMPLES:\n" + indented(command.examples.joined(separator: "\n"))) }
        return blocks.joined(separator: "\n")
    }

    /// The usage forms of a command, each a list of words: `feedbackctl`, its name, then one word
    /// per item (`[--theme NAME]`, `[--audio | --vibrators]`, `ID|EVENT`).
    static func usageForms(of command: any Subcommand.Type) -> [[String]] {
        command.usage.map { items in
            ["feedbackctl", command.name]
                + items.flatMap { item -> [String] in
                    switch item {
                    case .options: ["[OPTIONS]"]
                    case .optional(let options): options.map { "[" + $0.usage + "]" }
                    case .required(let option): [option.usage]
                    case .oneOf(let options): ["[" + options.map(\.usage).joined(separator: " | ") + "]"]
                    case .arguments: command.arguments.map(\.usage)
                    }
                }
        }
    }

    /// `USAGE:` and the forms, one under the other, each going on under its first word after the
    /// command's name.
    static func usage(_ forms: [[String]]) -> String {
        let prefix = "USAGE: "
        return forms.enumerated().map { index, words in
            let start = (index == 0 ? prefix : String(repeating: " ", count: prefix.count)) + words.prefix(2).joined(separator: " ")
            return wrapped(Array(words.dropFirst(2)), after: start, indent: start.count + 1)
        }.joined()
    }

    /// `start` and the words, separated by spaces, in lines of at most `width` columns (a word
    /// longer than that alone on its line); lines after the first indented by `indent`.
    static func wrapped(_ words: [String], after start: String, indent: Int) -> String {
        var text = ""
        var line = start
        for word in words {
            if line.count + 1 + word.count > width {
                text += line + "\n"
                line = String(repeating: " ", count: indent) + word
            } else {
                line += " " + word
            }
        }
        return text + line + "\n"
    }

    /// The entries of OPTIONS.
    static func options(_ options: [Option]) -> String {
        options.map { entry($0.synopsis, $0.help) }.joined()
    }

    /// A paragraph of running text or of literal lines, the latter indented.
    private static func paragraph(_ paragraph: Paragraph) -> String {
        switch paragraph {
        case .text(let text): text + "\n"
        case .literal(let text): indented(text)
        }
    }

    /// An entry of ARGUMENTS or OPTIONS: the tag, then the description's lines at its column.
    private static func entry(_ tag: String, _ description: String) -> String {
        let margin = String(repeating: " ", count: descriptionColumn)
        let lines = description.split(separator: "\n")
        let first = "  " + tag
        var text = first.count + 2 <= descriptionColumn
            ? first + String(repeating: " ", count: descriptionColumn - first.count)
            : first + "\n" + margin
        text += lines.joined(separator: "\n" + margin) + "\n"
        return text
    }

    /// Each line indented by two spaces.
    private static func indented(_ text: String) -> String {
        text.split(separator: "\n").map { "  " + $0 + "\n" }.joined()
    }
}
