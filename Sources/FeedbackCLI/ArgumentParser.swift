/// A GNU-style parser for one subcommand's arguments: long options (`--name`, `--name=value`,
/// `--name value`), `-h`/`--help`, and `--` ending the options.
///
/// Options are taken out by the command's `flag`/`value` calls; `finish` then refuses any option
/// nobody asked for and checks the number of positional arguments.
struct ArgumentParser {
    private var remaining: [String]
    private var positionals: [String] = []
    private let command: String
    /// Whether `-h` or `--help` was given.
    private(set) var helpRequested = false
    /// Every option a `flag` or `value` call asked for, with whether it takes a value: the options
    /// the command understands, which the tests compare with its help.
    private(set) var requestedOptions: [String: Bool] = [:]

    init(_ arguments: [String], command: String) {
        self.command = command
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
