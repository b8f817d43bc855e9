import FeedbackServices
public import FoundationEssentials
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
        StopCommand.self,
        InfoCommand.self,
        VibrateCommand.self,
        ListCommand.self,
        ThemeCommand.self,
        FeedbackThemeCommand.self,
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
    public static func main(arguments: [String]) -> Int32 {
        // Our output goes straight to descriptors 1 and 2; what libsndfile and libmpg123 print
        // while they read a file would only corrupt it (`info --json`) or alarm for nothing.
        CLibraryOutput.dropDuringSoundFileWork()
        // Read once, straight from `environ`: ProcessInfo's first use and each copy of its
        // environment cost ~0.1 ms apiece, on the way to the first sample (issue 14).
        let environment = processEnvironment()
        if let name = arguments.first, ["fire", "play", "vibrate"].contains(name) {
            let options = arguments.prefix { $0 != "--" }
            if name != "vibrate" { prepareSoundOutput(command: name, options: options, environment: environment) }
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
        let status = run(arguments: arguments, environment: environment, output: &output, errors: &errors)
        ActivePlayers.leave()
        return status
    }

    /// Runs the command: data and help go to `output`, diagnostics (`Error: …`, `Warning: …`) to
    /// `errors`. `environment` is what the command reads `XDG_*`, `FEEDBACKSERVICES_PROFILE` and
    /// the theme settings from (the process's own by default); the sound server is found as
    /// libpulse finds it, from the process's own environment (`PULSE_SERVER`).
    /// - Returns: 0, or a `sysexits.h` code (`ExitCode`).
    public static func run(
        arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        output: inout some TextOutputStream, errors: inout some TextOutputStream
    ) -> Int32 {
        var text = ""
        var context = Context(environment: environment)
        do {
            try dispatch(arguments, context: &context, output: &text)
            if !context.quiet { output.write(text) }
            context.warnings.forEach { errors.write("Warning: \($0)\n") }
            return ExitCode.success.rawValue
        } catch {
            if !context.quiet { output.write(text) }
            context.warnings.forEach { errors.write("Warning: \($0)\n") }
            errors.write("Error: \(error.message)\n")
            if error.showUsage { errors.write("Run 'feedbackctl help' for usage.\n") }
            return error.exitCode.rawValue
        }
    }

    /// What `dispatch` learns that `run` needs afterwards.
    private struct Context {
        let environment: [String: String]
        var quiet = false
        var warnings: [String] = []
    }

    private static func dispatch(_ arguments: [String], context: inout Context, output: inout String) throws(CommandError) {
        guard let name = arguments.first, !CommonOptions.help.matches(name) else {
            return output.write(overview)
        }
        if versionOption.matches(name) { return output.write("feedbackctl \(version)\n") }
        guard let command = subcommand(named: name) else {
            throw CommandError.usage("unknown command '\(name)'")
        }
        let words = Array(arguments.dropFirst())
        if ArgumentParser.asksForHelp(words) { return output.write(command.help) }
        var parser = try ArgumentParser(words, command: command, environment: context.environment)
        context.quiet = parser.quietRequested
        defer { context.warnings = parser.warnings }
        try command.run(&parser, output: &output)
    }

    /// Loads the library the first sound of `fire` or `play` will call — libsystemd for the bus
    /// when feedbackservicesd may be running, else the sound server's (libpulse or libpipewire) —
    /// and then starts opening the sound output on a thread of its own
    /// (`AudioOutputSelection.openInBackground`), so that connecting, creating the stream and
    /// waiting for the server run beside the command's own work (arguments, settings, the
    /// sound's lookup and decoding) rather than after it (issue 14).
    ///
    /// The library is loaded here, on the main thread, before any other thread exists. On a thread
    /// of its own beside this one (what `fire` did before), `dlopen` of libpulse took ~5.7 ms
    /// against ~3–4 ms alone: its mappings and relocations are memory-map changes whose TLB
    /// flushes wait on the other CPU while a thread of the same process runs there (a C program
    /// whose main thread computes while a second one loads libpulse: 3 → 8–9 ms; another process
    /// computing: 4.7 ms). And `pthread_create` waits for a `dlopen` under way (it takes glibc's
    /// `dl_load_tls_lock`, which `dlopen` holds): the output's thread, created once the sound was
    /// known, started only when the library was loaded.
    ///
    /// Nothing is loaded or opened for a command that renders to a file, plays through libcanberra
    /// or ALSA, or leaves the play to a detached process, nor for a `fire` whose profile plays no
    /// sound; a wrong guess (the service refuses, the ID only vibrates) loads a library that is not
    /// called, or opens a stream that closes with the process.
    private static func prepareSoundOutput(command: String, options: ArraySlice<String>, environment: [String: String]) {
        let elsewhere = [SoundArguments.output, SoundArguments.canberra, SoundArguments.pcm, SoundArguments.noWait]
        guard !options.contains(where: { argument in elsewhere.contains { $0.matches(argument) } }) else { return }
        let noDaemon = options.contains(where: DaemonRoute.noDaemon.matches)
        if command == "fire", DaemonRoute.mayUse(environment: environment, forcedOff: noDaemon),
            DaemonRoute.serviceMayRun(environment: environment)
        {
            _ = OptionalLibrary.systemd.unavailableReason
            return
        }
        if command == "fire" && !FeedbackSettings(environment: environment).profile.allowsSound { return }
        AudioOutputSelection.openInBackground(environment: environment)
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
        CommonOptions.help.described("Show this help (also after a command: 'feedbackctl fire --help')"),
        CommonOptions.quiet.described("After a command: print nothing on standard output, only errors"),
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
