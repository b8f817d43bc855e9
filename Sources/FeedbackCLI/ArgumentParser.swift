/// A GNU-style parser for one subcommand's arguments: long options (`--name`, `--name=value`,
/// `--name value`), `-h`/`--help`, and `--` ending the options.
///
/// Options are taken out by the command's `flag`/`value` calls; `finish` then refuses any option
/// nobody asked for and checks the number of positional arguments.
///
/// The parser also carries the invocation's environment, so that commands read `XDG_*` and the
/// like from it and tests can run them in process with an environment of their own.
struct ArgumentParser {
    private var remaining: [String]
    private var positionals: [String] = []
    private let command: String
    /// The environment the command runs in.
    let environment: [String: String]
    /// Whether `-h` or `--help` was given.
    private(set) var helpRequested = false
    /// Whether `-q` or `--quiet` was given: the command prints nothing on standard output.
    private(set) var quietRequested = false
    /// Things the command could not do but that did not fail it; printed as `Warning: …` on
    /// standard error after the command.
    private(set) var warnings: [String] = []
    /// Every option a `flag` or `value` call asked for, with whether it takes a value: the options
    /// the command understands, which the tests compare with its help.
    private(set) var requestedOptions: [String: Bool] = [:]

    /// Adds a warning.
    mutating func warn(_ message: String) {
        warnings.append(message)
    }

    init(_ arguments: [String], command: String, environment: [String: String] = [:]) {
        self.command = command
        self.environment = environment
        if let end = arguments.firstIndex(of: "--") {
            remaining = Array(arguments[..<end])
            positionals = Array(arguments[(end + 1)...])
        } else {
            remaining = arguments
        }
        if let index = remaining.firstIndex(where: { $0 == "-h" || $0 == "--help" }) {
            remaining.remove(at: index)
            helpRequested = true
        }
        while let index = remaining.firstIndex(where: { $0 == "-q" || $0 == "--quiet" }) {
            remaining.remove(at: index)
            quietRequested = true
        }
    }

    /// Takes a boolean option; true if it was given.
    mutating func flag(_ name: String) -> Bool {
        requestedOptions[name] = false
        guard let index = remaining.firstIndex(of: name) else { return false }
        remaining.remove(at: index)
        return true
    }

    /// Takes an option with a value (`--name=value` or `--name value`).
    mutating func value(_ name: String) throws(CommandError) -> String? {
        requestedOptions[name] = true
        if let index = remaining.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            let value = String(remaining[index].dropFirst(name.count + 1))
            remaining.remove(at: index)
            return value
        }
        guard let index = remaining.firstIndex(of: name) else { return nil }
        guard index + 1 < remaining.count else {
            throw CommandError.usage("option '\(name)' needs a value")
        }
        let value = remaining[index + 1]
        remaining.removeSubrange(index...(index + 1))
        return value
    }

    /// Refuses leftover options and checks the positional count; returns the positionals.
    @discardableResult
    mutating func finish(positionals allowed: some RangeExpression<Int>) throws(CommandError) -> [String] {
        var arguments: [String] = []
        for argument in remaining {
            if argument.hasPrefix("-") && argument.count > 1 {
                throw CommandError.usage("unknown option '\(argument)' for '\(command)'")
            }
            arguments.append(argument)
        }
        arguments += positionals
        guard allowed.contains(arguments.count) else {
            let what = arguments.isEmpty ? "missing argument" : "unexpected argument '\(arguments.last!)'"
            throw CommandError.usage("\(what) for '\(command)'")
        }
        return arguments
    }

    /// `finish` for a command taking exactly `count` positionals.
    @discardableResult
    mutating func finish(positionals count: Int) throws(CommandError) -> [String] {
        try finish(positionals: count...count)
    }
}
