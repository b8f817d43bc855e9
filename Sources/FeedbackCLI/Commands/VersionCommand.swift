/// `feedbackctl version [--json]`.
enum VersionCommand: Subcommand {
    static let name = "version"
    static let abstract = "Print the version"
    static let summary = "Print the version of feedbackctl."

    static let json = Option.json(#"Print {"version": "…"}"#)
    static let options = [json]

    /// What `--json` prints: nothing but the `version` every report has.
    struct Report: Encodable {}

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        if parser.flag(Self.json) {
            output.write(JSONOutput.line(Report()))
        } else {
            output.write("feedbackctl \(FeedbackCommand.version)\n")
        }
    }
}
