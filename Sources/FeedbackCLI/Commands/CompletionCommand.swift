/// `feedbackctl completion bash|zsh`: the shell completion script.
enum CompletionCommand: Subcommand {
    static let name = "completion"
    static let abstract = "Print the bash or zsh completion script"
    static let discussion: [Paragraph] = [
        """
        The script completes command names, each command's options, files where a command
        takes a file, system sound IDs and event names for fire and volume, profile names
        and command names for help. Like the manual page (feedbackctl help --man), it is
        generated from the commands' help. scripts/install puts both scripts where
        bash-completion and zsh look for them; to use one without installing it:
        """,
        .literal("source <(feedbackctl completion bash)"),
    ]

    static let shell = Argument("bash|zsh", .oneOf(["bash", "zsh"]), help: "The shell")
    static let arguments = [shell]

    static let examples = [
        "feedbackctl completion bash > ~/.local/share/bash-completion/completions/feedbackctl",
        "feedbackctl completion zsh > ~/.zfunc/_feedbackctl",
    ]

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let shell = parser.positionals[0]
        switch shell {
        case "bash": output += Completion.bash
        case "zsh": output += Completion.zsh
        default: throw CommandError.usage("no completion for '\(shell)'; use bash or zsh")
        }
    }
}
