import FeedbackServices
public import FoundationEssentials
import Glibc

/// `feedbackctl`: the command-line front of FeedbackServices.
///
/// `run` is the whole command, in process: it takes the arguments and two text sinks and returns
/// the exit code, so tests drive it without spawning a process.
public enum FeedbackCommand {
    /// The version `feedbackctl version` prints.
    public static let version = Release.version

    /// The day `version` was released, as the manual page's `.TH` line dates it (`Release.date`).
    static let releaseDate = Release.date

    /// Every subcommand, in the order the overview lists them.
    static let subcommands: [any Subcommand.Type] = [
        FireCommand.self,
        PlayCommand.self,
        StopCommand.self,
        InfoCommand.self,
        VibrateCommand.self,
        ListCommand.self,
        ThemeCommand.self,
        FeedbackThemeCommand.self,
        HapticsCommand.self,
        DevicesCommand.self,
        LEDCommand.self,
        ProfileCommand.self,
        RegisterCommand.self,
        UnregisterCommand.self,
        VolumeCommand.self,
        VersionCommand.self,
        HelpCommand.self,
        CompletionCommand.self,
    ]

    /// Runs the command with the process's standard output and error; returns the exit code.
    public static func main(arguments given: [String]) -> Int32 {
        let arguments = commandFirst(given)
        // Our output goes straight to descriptors 1 and 2; what libsndfile and libmpg123 print
        // while they read a file would only corrupt it (`info --json`) or alarm for nothing.
        CLibraryOutput.dropDuringSoundFileWork()
        // Read once, straight from `environ`: ProcessInfo's first use and each copy of its
        // environment cost ~0.1 ms apiece, on the way to the first sample.
        let environment = processEnvironment()
        if let name = arguments.first, ["fire", "play", "vibrate"].contains(name) {
            let options = arguments.prefix { $0 != "--" }
            Route.opensEarly.store(true, ordering: .relaxed)
            Interruption.install()
            Detach.record(arguments: arguments)
            ActivePlayers.enable(arguments: arguments, environment: environment)
            // A player announces itself before anything else, so that `stop` finds it while it
            // still looks up, decodes or connects (and it then stops before it starts).
            if !options.contains(where: SoundArguments.noWait.matches) && !options.contains(where: SoundArguments.output.matches) {
                ActivePlayers.enter()
            }
        }
        var output = StandardStream(fd: STDOUT_FILENO)
        var errors = StandardStream(fd: STDERR_FILENO)
        let status = run(
            arguments: arguments, environment: environment, output: &output, errors: &errors,
            errorsAreTerminal: isatty(STDERR_FILENO) == 1)
        ActivePlayers.leave()
        return status
    }

    /// Runs the command: data and help go to `output`, diagnostics (`Error: …`, `Warning: …`) to
    /// `errors`. `environment` is what the command reads `XDG_*`, `FEEDBACKSERVICES_PROFILE` and
    /// the theme settings from (the process's own by default); the sound server is found as
    /// libpulse finds it, from the process's own environment (`PULSE_SERVER`).
    ///
    /// Notices (`Note: …`, what a command did that a user may not expect, such as the profile
    /// silencing a sound) go to `errors` only when `errorsAreTerminal` and `-q` was not given:
    /// they are for a person, not for a script. With `--json`, a failure is also one JSON object on
    /// `output`, `{"error": {"message", "exitCode"}, "version"}`, unless the command already
    /// printed its report.
    /// - Returns: 0, or a `sysexits.h` code (`ExitCode`).
    public static func run(
        arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        output: inout some TextOutputStream, errors: inout some TextOutputStream, errorsAreTerminal: Bool = false
    ) -> Int32 {
        var text = ""
        var context = Context(environment: environment)
        var failure: CommandError?
        do {
            try dispatch(commandFirst(arguments), context: &context, output: &text)
        } catch {
            failure = error
        }
        if let failure, context.json, text.isEmpty {
            text = JSONOutput.line(ErrorReport(error: JSONFailure(failure)))
        }
        if !context.quiet { output.write(text) }
        context.warnings.forEach { errors.write("Warning: \($0)\n") }
        if errorsAreTerminal && !context.quiet { context.notices.forEach { errors.write("Note: \($0)\n") } }
        guard let failure else { return ExitCode.success.rawValue }
        errors.write("Error: \(failure.message)\n")
        if failure.showUsage {
            let command = context.command.flatMap { $0 == HelpCommand.name ? nil : " " + $0 } ?? ""
            errors.write("Run 'feedbackctl help\(command)' for usage.\n")
        }
        return failure.exitCode.rawValue
    }

    /// What `--json` prints for a failure.
    private struct ErrorReport: Encodable {
        let error: JSONFailure
    }

    /// What `dispatch` learns that `run` needs afterwards.
    private struct Context {
        let environment: [String: String]
        /// The command's name, once it is known.
        var command: String?
        var quiet = false
        /// Whether `--json` was asked for, of a command that takes it.
        var json = false
        var warnings: [String] = []
        var notices: [String] = []
    }

    private static func dispatch(_ arguments: [String], context: inout Context, output: inout String) throws(CommandError) {
        guard let name = arguments.first, !CommonOptions.help.matches(name) else {
            return output.write(overview)
        }
        // `feedbackctl -q` alone is `feedbackctl`, quietly.
        if arguments.allSatisfy(CommonOptions.quiet.matches) {
            context.quiet = true
            return output.write(overview)
        }
        if versionOption.matches(name) { return output.write("feedbackctl \(version)\n") }
        guard let command = subcommand(named: name) else {
            let guess = closestCommand(to: name).map { "; did you mean '\($0)'?" } ?? ""
            throw CommandError.usage("unknown command '\(name)'\(guess)")
        }
        context.command = name
        let words = Array(arguments.dropFirst())
        let options = words.prefix { $0 != "--" }
        context.json = options.contains(Option.jsonName) && command.allOptions.contains { $0.name == Option.jsonName }
        // `fire help`: there is no event (or file) a user means by that word alone.
        if ArgumentParser.asksForHelp(words) || (words == [HelpCommand.name] && command != HelpCommand.self) {
            return output.write(command.help)
        }
        var parser = try ArgumentParser(words, command: command, environment: context.environment)
        context.quiet = parser.quietRequested
        defer { (context.warnings, context.notices) = (parser.warnings, parser.notices) }
        try command.run(&parser, output: &output)
    }

    /// The command line with the options `feedbackctl` takes before a command (`-q`, `-h`) moved
    /// after the command's name: `feedbackctl -q fire 1007` is `feedbackctl fire -q 1007`, and
    /// `feedbackctl --help fire` is `feedbackctl fire --help`.
    static func commandFirst(_ arguments: [String]) -> [String] {
        let leading = arguments.prefix { argument in CommonOptions.all.contains { $0.matches(argument) } }
        guard !leading.isEmpty, let name = arguments.dropFirst(leading.count).first else { return arguments }
        return [name] + leading + arguments.dropFirst(leading.count + 1)
    }

    /// The command a mistyped name most likely meant: one at most two edits away (`fier`, `lsit`).
    private static func closestCommand(to name: String) -> String? {
        let distances = subcommands.map { ($0.name, editDistance(Array(name), Array($0.name))) }
        guard let best = distances.min(by: { $0.1 < $1.1 }), best.1 <= 2, best.1 < name.count else { return nil }
        return best.0
    }

    /// The Levenshtein distance, with a swap of two neighbours counted as one edit.
    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }

    /// The process's environment as a dictionary (for a name set twice, the first wins, as
    /// getenv finds it).
    static func processEnvironment() -> [String: String] {
        var environment: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            // Split at the first "=" in the bytes: `String.firstIndex(of:)` compares Characters
            // (grapheme breaking), ~5,000 instructions a variable on fire's start-up path.
            if let equals = strchr(pointer, Int32(UInt8(ascii: "="))) {
                let name = String(decoding: UnsafeRawBufferPointer(start: pointer, count: equals - pointer), as: UTF8.self)
                if environment[name] == nil { environment[name] = String(cString: equals + 1) }
            }
            entry += 1
        }
        return environment
    }

    static func subcommand(named name: String) -> (any Subcommand.Type)? {
        subcommands.first { $0.name == name }
    }

    /// The OVERVIEW sentence of `feedbackctl` itself.
    static let summary = "System sounds, alert feedback and vibration for Linux."

    /// The usage form of `feedbackctl` itself.
    static let usage = "feedbackctl <command> [options] [arguments]"

    /// `--version`, taken only before a command.
    static let versionOption = Option("--version", help: "Print the version")

    /// The options of `feedbackctl` itself, before a command.
    static let globalOptions = [
        CommonOptions.help.described("Show this help; with a command, its help ('feedbackctl --help fire')"),
        CommonOptions.quiet.described("Print nothing on standard output, only errors (before or after the command)"),
        versionOption,
    ]

    /// What each exit status means, for every command (`ExitCode`).
    static let exitStatuses: [(status: String, meaning: String)] = [
        ("0", "success"), ("1", "the feedback theme checked is not valid"), ("64", "usage error"), ("65", "not usable sound data (or a damaged registry)"),
        ("66", "no such input file or sound"), ("69", "service or device unavailable"), ("70", "internal error"),
        ("73", "cannot create output"), ("74", "I/O error"), ("75", "the registry is busy, try again"),
        ("77", "permission denied"), ("130/143", "stopped by SIGINT/SIGTERM (after stopping the sound)"),
    ]

    /// The text of `feedbackctl`, `-h`, `--help` and `help`.
    static var overview: String {
        let width = subcommands.map { $0.name.count }.max() ?? 0
        let commands = subcommands.map { command in
            "  " + command.name + String(repeating: " ", count: width + 3 - command.name.count) + command.abstract + "\n"
        }
        // Lines break between statuses, never inside one.
        let statuses = exitStatuses.map { "\($0.status) \($0.meaning)" }
        let entries = statuses.dropLast().map { $0 + ";" } + [statuses.last! + "."]
        return [
            "OVERVIEW: \(summary)\n",
            "USAGE: \(usage)\n",
            "COMMANDS:\n" + commands.joined(),
            "OPTIONS:\n" + HelpText.options(globalOptions),
            "EXIT STATUS:\n" + HelpText.wrapped(Array(entries.dropFirst()), after: "  " + entries[0], indent: 2),
            "Run 'feedbackctl help <command>' for a command's options.\n",
        ].joined(separator: "\n")
    }
}

/// Text written straight to a file descriptor.
struct StandardStream: TextOutputStream {
    let fd: Int32

    mutating func write(_ string: String) {
        var text = string
        // Nowhere to report a failed write of the report itself: the rest is dropped.
        text.withUTF8 { bytes in _ = try? System.writeAll(fd, UnsafeRawBufferPointer(bytes)) }
    }
}
