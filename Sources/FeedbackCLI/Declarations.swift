// A command's options and arguments, declared once as values: the parser reads the command line
// through them, and `--help` (`HelpText`), the man page (`Documentation`) and the shell
// completions (`Completion`) are generated from them, so none of the four can say something the
// others do not.

import FeedbackServices

/// What a value on the command line is: what the shell completions offer for it.
enum ValueKind: Equatable, Sendable {
    /// A file; file names are offered.
    case file
    /// A directory, or a colon-separated list of them; directory names are offered.
    case directory
    /// One of these words, which are offered.
    case oneOf([String])
    /// A number; nothing is offered.
    case number
    /// Free text (a theme name, a locale); nothing is offered.
    case text
    /// A feedbackctl command's name.
    case command
    /// A system sound ID from `SystemSoundCatalog`.
    case systemSoundID
    /// A sound theme event name from `SystemSoundCatalog`.
    case event
}

/// An option a command declares: a flag (`--vibrate`) or an option with a value (`--volume X`).
///
/// Commands declare each one as a `static let` and list it in `Subcommand.options`; the command
/// reads it with `ArgumentParser.flag(_:)` or `value(_:)`, never by its name.
struct Option: Equatable, Sendable {
    /// Its names, the short one first: `["-q", "--quiet"]`, `["--volume"]`.
    let names: [String]
    /// The value it takes; nil for a flag.
    let value: Value?
    /// Its description, in lines as `--help` shows them beside the names; the man page and the
    /// completions run the lines together (`description`).
    let help: String

    /// The value an option takes.
    struct Value: Equatable, Sendable {
        /// Its name in the help: `X`, `FILE`, `PATH|NAME`.
        let name: String
        let kind: ValueKind
    }

    /// A flag.
    init(_ names: String..., help: String) {
        self.init(names: names, value: nil, help: help)
    }

    /// An option taking a value named `valueName` (`--output FILE`).
    init(_ names: String..., value valueName: String, _ kind: ValueKind, help: String) {
        self.init(names: names, value: Value(name: valueName, kind: kind), help: help)
    }

    private init(names: [String], value: Value?, help: String) {
        precondition(!names.isEmpty && names.allSatisfy { $0.hasPrefix("-") }, "option names start with '-'")
        self.names = names
        self.value = value
        self.help = help
    }

    /// `--json` with the command's own description of what it prints: one name for every command.
    static func json(_ help: String) -> Option {
        Option(jsonName, help: help)
    }

    /// The name of every command's `--json`.
    static let jsonName = "--json"

    /// The same option with another description (the overview's `-h, --help`).
    func described(_ help: String) -> Option {
        Option(names: names, value: value, help: help)
    }

    /// The long name, for messages: `--volume`.
    var name: String { names.last! }

    /// The option as its entry shows it: `-h, --help`, `--output FILE`.
    var synopsis: String {
        names.joined(separator: ", ") + (value.map { " " + $0.name } ?? "")
    }

    /// As a usage line shows it: `--output FILE`, `--vibrate`.
    var usage: String {
        name + (value.map { " " + $0.name } ?? "")
    }

    /// The description on one line.
    var description: String { help.joiningLines }

    /// Whether a command-line word is this option: one of its names, or `--name=value`.
    func matches(_ argument: String) -> Bool {
        names.contains { name in
            argument == name
                || (value != nil && argument.hasPrefix(name)
                    && argument.utf8.dropFirst(name.utf8.count).first == UInt8(ascii: "="))
        }
    }
}

/// A positional argument a command declares, in the order it takes them.
struct Argument: Sendable {
    /// Its name in the help: `ID|EVENT`, `FILE`, `full|quiet|silent`.
    let name: String
    /// What it may be; several for one that is either (`ID|FILE`).
    let kinds: [ValueKind]
    /// Its description, in lines as `--help` shows them.
    let help: String
    /// Whether it may be left out (then every argument after it may too).
    let isOptional: Bool
    /// Whether it may be given several times (only the last argument).
    let repeats: Bool

    init(_ name: String, _ kinds: ValueKind..., optional: Bool = false, repeats: Bool = false, help: String) {
        self.name = name
        self.kinds = kinds
        self.help = help
        self.isOptional = optional
        self.repeats = repeats
    }

    /// As a usage line shows it: `ID|EVENT`, `[X]`, `FILE...`, `[EVENT...]`.
    var usage: String {
        let word = name + (repeats ? "..." : "")
        return isOptional ? "[" + word + "]" : word
    }

    /// The description on one line.
    var description: String { help.joiningLines }
}

/// One part of a usage form, naming declarations: `[OPTIONS]`, `[--json]`, `--pattern MS,...`,
/// `[--audio | --vibrators]`, or the arguments.
enum UsageItem: Sendable {
    /// `[OPTIONS]`: every option, described under OPTIONS.
    case options
    /// `[--name VALUE]` for each.
    case optional([Option])
    /// `--name VALUE`: an option this form needs.
    case required(Option)
    /// `[--a | --b]`: at most one of them.
    case oneOf([Option])
    /// The command's arguments: `ID|EVENT`, `[EVENT...]`.
    case arguments
}

/// A paragraph of a command's description: running text in lines as the help shows them, or lines
/// to be shown as they are (a command to type).
enum Paragraph: Sendable, ExpressibleByStringInterpolation {
    case text(String)
    case literal(String)

    init(stringLiteral text: String) {
        self = .text(text)
    }
}

/// An option name commands no longer take because it meant something a user would not guess;
/// the parser answers it with what to use instead, where the command takes the replacement.
struct RetiredOption: Sendable {
    /// The old name: `--profile`.
    let name: String
    /// The option that took over its meaning.
    let replacement: Option
    /// The usage error for the old name given `value` (nil when none followed it).
    let message: @Sendable (_ value: String?) -> String

    static let all = [
        RetiredOption(name: "--profile", replacement: ThemeOptions.outputProfile) { value in
            let output = "the sound theme's output profile (such as stereo) is '\(ThemeOptions.outputProfile.name) NAME'"
            guard let value, let profile = FeedbackProfile(rawValue: value) else {
                return "there is no option '--profile': \(output); the feedback profile (full, quiet, silent) is set with "
                    + "'feedbackctl profile NAME'"
            }
            return "'--profile \(value)' does not choose the feedback profile here: set it with "
                + "'feedbackctl profile \(profile.rawValue)' (or FEEDBACKSERVICES_PROFILE=\(profile.rawValue) for one command); \(output)"
        }
    ]
}

/// The options every command takes, which the parser reads itself.
enum CommonOptions {
    static let quiet = Option("-q", "--quiet", help: "Print nothing on standard output, only errors")
    static let help = Option("-h", "--help", help: "Show this help")

    /// In the order every command's OPTIONS lists them, after its own.
    static let all = [quiet, help]
}

extension String {
    /// The lines run together into one, as the man page and the completions show a description.
    var joiningLines: String {
        split(separator: "\n").joined(separator: " ")
    }
}
