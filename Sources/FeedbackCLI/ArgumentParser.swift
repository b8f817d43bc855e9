/// One subcommand's command line, parsed against its declarations (`Subcommand.options`,
/// `Subcommand.arguments`) in the GNU style: `--name`, `--name=value` and `--name value`, `--`
/// ending the options, options and arguments in any order.
///
/// Parsing refuses an option the command did not declare, a flag given a value, an option missing
/// its value and a wrong number of arguments, all before the command runs. The command then reads
/// options through their declarations (`flag(Self.vibrate)`, `value(Self.volume)`).
///
/// The parser also carries the invocation's environment, so that commands read `XDG_*` and the
/// like from it and tests can run them in process with an environment of their own.
struct ArgumentParser {
    /// The environment the command runs in.
    let environment: [String: String]
    /// The positional arguments, as many as the command declares.
    let positionals: [String]
    /// Things the command could not do but that did not fail it; printed as `Warning: …` on
    /// standard error after the command.
    private(set) var warnings: [String] = []
    /// What the command did that a person at a terminal may not expect (the profile silenced the
    /// sound); printed as `Note: …` on standard error when that is a terminal, unless `-q`.
    private(set) var notices: [String] = []
    /// The options the command may read.
    private let declared: [Option]
    // Keyed by the options' long names, not by `Option`: a set or dictionary of a type of our own
    // makes the runtime look up its `Hashable` conformance by scanning every conformance in the
    // binary, a tenth of a millisecond of every start.
    private var flags: Set<String> = []
    private var values: [String: String] = [:]

    /// Whether the words ask for the help: `-h` or `--help` before any `--`, wherever it is, so
    /// that a command line with a mistake in it still gets its help.
    static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.prefix { $0 != "--" }.contains(where: CommonOptions.help.matches)
    }

    /// Parses the words after the command's name.
    /// - Throws: a usage error (64) for an undeclared option or a wrong number of arguments.
    init(_ arguments: [String], command: any Subcommand.Type, environment: [String: String] = [:]) throws(CommandError) {
        self.environment = environment
        let options = command.allOptions
        declared = options
        var positionals: [String] = []
        var pending: Option?
        var ended = false
        for (index, argument) in arguments.enumerated() {
            if let option = pending {
                values[option.name] = argument
                pending = nil
            } else if ended || argument == "-" || !argument.hasPrefix("-") {
                positionals.append(argument)
            } else if argument == "--" {
                ended = true
            } else {
                guard let option = options.first(where: { $0.matches(argument) }) else {
                    let name = argument.prefix { $0 != "=" }
                    if let retired = RetiredOption.all.first(where: { $0.name == name }), options.contains(retired.replacement) {
                        let value = argument.contains("=") ? String(argument.drop { $0 != "=" }.dropFirst()) : arguments.dropFirst(index + 1).first
                        throw CommandError.usage(retired.message(value))
                    }
                    let flag = options.contains { $0.names.contains(String(name)) }
                    throw CommandError.usage(
                        flag ? "option '\(name)' takes no value" : "unknown option '\(argument)' for '\(command.name)'")
                }
                if option.value == nil {
                    flags.insert(option.name)
                } else if let equals = argument.firstIndex(of: "=") {
                    values[option.name] = String(argument[argument.index(after: equals)...])
                } else {
                    pending = option
                }
            }
        }
        if let pending { throw CommandError.usage("option '\(pending.name)' needs a value") }
        let required = command.arguments.count { !$0.isOptional }
        let allowed = command.arguments.last?.repeats == true ? Int.max : command.arguments.count
        if positionals.count < required { throw CommandError.usage("missing argument for '\(command.name)'") }
        if positionals.count > allowed {
            throw CommandError.usage("unexpected argument '\(positionals.last!)' for '\(command.name)'")
        }
        self.positionals = positionals
    }

    /// Whether `-q` or `--quiet` was given: the command prints nothing on standard output.
    var quietRequested: Bool { flag(CommonOptions.quiet) }

    /// Whether the flag was given.
    func flag(_ option: Option) -> Bool {
        precondition(option.value == nil && declared.contains(option), "\(option.name) is not a declared flag")
        return flags.contains(option.name)
    }

    /// The option's value, if it was given (the last one, if given twice).
    func value(_ option: Option) -> String? {
        precondition(option.value != nil && declared.contains(option), "\(option.name) is not a declared option with a value")
        return values[option.name]
    }

    /// Adds a warning.
    mutating func warn(_ message: String) {
        warnings.append(message)
    }

    /// Adds a notice.
    mutating func notify(_ message: String) {
        notices.append(message)
    }
}
