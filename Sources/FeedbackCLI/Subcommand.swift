/// One `feedbackctl` subcommand: its name, its help, and how it runs.
///
/// To add a command, write a type conforming to this in `Commands/` and list it in
/// `FeedbackCommand.subcommands`; the overview help and dispatch pick it up from there.
protocol Subcommand: Sendable {
    /// The word that selects it: `feedbackctl NAME …`.
    static var name: String { get }
    /// One line for the overview's command list.
    static var abstract: String { get }
    /// The whole help text (`NAME -h`, `NAME --help`, `help NAME`): OVERVIEW, USAGE, ARGUMENTS,
    /// OPTIONS, and EXAMPLES where they help.
    static var help: String { get }
    /// Runs with the arguments after the command's name; data goes to `output`.
    /// `-h`/`--help` has already been handled.
    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError)
}
