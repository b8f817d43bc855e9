/// One `feedbackctl` subcommand: its name, its declarations, its help's prose, and how it runs.
///
/// To add a command, write a type conforming to this in `Commands/` and list it in
/// `FeedbackCommand.subcommands`; the overview, dispatch, the man page and the completions pick it
/// up from there. Its help is generated (`HelpText`): OVERVIEW, the discussion, USAGE, ARGUMENTS,
/// OPTIONS, EXIT STATUS and EXAMPLES.
protocol Subcommand: Sendable {
    /// The word that selects it: `feedbackctl NAME …`.
    static var name: String { get }
    /// One line for the overview's command list.
    static var abstract: String { get }
    /// The OVERVIEW sentence; by default the abstract with a full stop.
    static var summary: String { get }
    /// The paragraphs after OVERVIEW.
    static var discussion: [Paragraph] { get }
    /// Its positional arguments, in order; the parser checks their number against these.
    static var arguments: [Argument] { get }
    /// Its options, in the order OPTIONS lists them; `-q` and `-h` (`CommonOptions`) follow.
    static var options: [Option] { get }
    /// Its usage forms; by default one: every option, then the arguments.
    static var usage: [[UsageItem]] { get }
    /// The EXIT STATUS text, in lines as the help shows them.
    static var exitStatus: String? { get }
    /// Command lines for EXAMPLES.
    static var examples: [String] { get }
    /// Runs with the command line already parsed against its declarations; data goes to `output`.
    /// `-h`/`--help` has already been handled.
    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError)
}

extension Subcommand {
    static var summary: String { abstract + "." }
    static var discussion: [Paragraph] { [] }
    static var arguments: [Argument] { [] }
    static var options: [Option] { [] }
    static var usage: [[UsageItem]] { [[.optional(options), .arguments]] }
    static var exitStatus: String? { nil }
    static var examples: [String] { [] }

    /// Every option the command takes: its own, then the common ones.
    static var allOptions: [Option] { options + CommonOptions.all }

    /// The text of `NAME -h`, `NAME --help` and `help NAME`.
    static var help: String { HelpText.text(of: self) }
}
