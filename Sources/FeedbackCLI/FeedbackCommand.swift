import Glibc

/// `feedbackctl`: the command-line front of FeedbackServices.
///
/// `run` is the whole command, in process: it takes the arguments and two text sinks and returns
/// the exit code, so tests drive it without spawning a process.
public enum FeedbackCommand {
    /// The version `feedbackctl version` prints.
    public static let version = "0.1.0"

    /// Every subcommand, in the order the overview lists them.
    static let subcommands: [any Subcommand.Type] = [
        FireCommand.self,
        PlayCommand.self,
        InfoCommand.self,
        VibrateCommand.self,
        ListCommand.self,
        ThemeCommand.self,
        DevicesCommand.self,
        ProfileCommand.self,
        VolumeCommand.self,
        VersionCommand.self,
        HelpCommand.self,
        CompletionCommand.self,
    ]

    /// Runs the command with the process's standard output and error; returns the exit code.
    public static func main(arguments: [String]) -> Int32 {
        if let name = arguments.first, ["fire", "play", "vibrate"].contains(name) {
            Interruption.install()
            Detach.record(arguments: arguments)
        }
        var output = StandardStream(fd: STDOUT_FILENO)
        var errors = StandardStream(fd: STDERR_FILENO)
        return run(arguments: arguments, output: &output, errors: &errors)
    }

    /// Runs the command: data and help go to `output`, diagnostics (`Error: …`) to `errors`.
    /// - Returns: 0, or a `sysexits.h` code (`ExitCode`).
    public static func run(
        arguments: [String], output: inout some TextOutputStream, errors: inout some TextOutputStream
    ) -> Int32 {
        var text = ""
        do {
            try dispatch(arguments, output: &text)
            output.write(text)
            return ExitCode.success.rawValue
        } catch {
            output.write(text)
            errors.write("Error: \(error.message)\n")
            if error.showUsage { errors.write("Run 'feedbackctl help' for usage.\n") }
            return error.exitCode.rawValue
        }
    }

    private static func dispatch(_ arguments: [String], output: inout String) throws(CommandError) {
        guard let name = arguments.first, name != "-h", name != "--help" else {
            return output.write(overview)
        }
        if name == "--version" { return output.write("feedbackctl \(version)\n") }
        guard let command = subcommand(named: name) else {
            throw CommandError.usage("unknown command '\(name)'")
        }
        var parser = ArgumentParser(Array(arguments.dropFirst()), command: name)
        if parser.helpRequested { return output.write(command.help) }
        try command.run(&parser, output: &output)
    }

    static func subcommand(named name: String) -> (any Subcommand.Type)? {
        subcommands.first { $0.name == name }
    }

    /// The text of `feedbackctl`, `-h`, `--help` and `help`.
    static var overview: String {
        let width = subcommands.map { $0.name.count }.max() ?? 0
        let commands = subcommands.map { command in
            "  " + command.name + String(repeating: " ", count: width + 3 - command.name.count) + command.abstract
        }
        return """
            OVERVIEW: System sounds, alert feedback and vibration for Linux.

            USAGE: feedbackctl <command> [options] [arguments]

            COMMANDS:
            \(commands.joined(separator: "\n"))

            OPTIONS:
              -h, --help       Show this help
              --version        Print the version

            EXIT STATUS:
              0 success; 64 usage error; 65 not usable sound data; 66 no such input file;
              69 service or device unavailable; 70 internal error; 73 cannot create output;
              74 I/O error; 77 permission denied; 130 interrupted by Ctrl-C (SIGINT) and
              143 by SIGTERM, after the sound or vibration was stopped.

            Run 'feedbackctl help <command>' for a command's options.

            """
    }
}

/// Text written straight to a file descriptor.
struct StandardStream: TextOutputStream {
    let fd: Int32

    mutating func write(_ string: String) {
        var text = string
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
