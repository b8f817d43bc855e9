import Testing

@testable import FeedbackCLI

/// Every command's help against what the command does: the options it parses are the options its
/// help lists, and the help has the layout the man page and completion generators read.
@Suite struct HelpConsistencyTests {
    /// Each command is run with only an unknown option: it asks the parser for every option it
    /// knows, and `finish` then refuses the unknown one before the command does anything. What it
    /// asked for must be what its help's OPTIONS lists (values and flags alike), and the reverse.
    @Test(arguments: FeedbackCommand.subcommands.map { $0.name })
    func optionsParsedAreTheOptionsDocumented(name: String) throws {
        let command = try #require(FeedbackCommand.subcommand(named: name))
        var parser = ArgumentParser(["--zz-not-an-option"], command: name)
        var output = ""
        do {
            try command.run(&parser, output: &output)
            Issue.record("\(name) ran despite an unknown option")
        } catch {
            #expect(error.message == "unknown option '--zz-not-an-option' for '\(name)'", "\(name) failed before finish")
        }
        #expect(output.isEmpty)
        var documented = HelpText(command.help).optionNames
        #expect(documented["-h"] == false && documented["--help"] == false, "\(name) help lists no -h, --help")
        documented["-h"] = nil
        documented["--help"] = nil
        // -q/--quiet, like -h/--help, is taken by the parser itself for every command.
        #expect(documented["-q"] == false && documented["--quiet"] == false, "\(name) help lists no -q, --quiet")
        documented["-q"] = nil
        documented["--quiet"] = nil
        let parsed = parser.requestedOptions
        for (option, takesValue) in parsed where documented[option] != takesValue {
            Issue.record("\(name) parses \(option)\(takesValue ? " VALUE" : "") but its help \(documented[option] == nil ? "does not list it" : "disagrees on its value")")
        }
        for option in documented.keys where parsed[option] == nil {
            Issue.record("\(name) help lists \(option), which it does not parse")
        }
    }

    @Test func helpTextsTakeApartAsTheGeneratorExpects() {
        for command in FeedbackCommand.subcommands {
            let help = HelpText(command.help)
            #expect(!help.summary.isEmpty, "\(command.name)")
            #expect(help.usage.allSatisfy { $0.hasPrefix("feedbackctl \(command.name)") }, "\(command.name): \(help.usage)")
            #expect(help.options.allSatisfy { !$0.names.isEmpty && !$0.description.isEmpty }, "\(command.name)")
        }
        let fire = HelpText(FireCommand.help)
        #expect(fire.positionals == [HelpText.Positional(name: "ID|EVENT", isOptional: false, repeats: false)])
        #expect(fire.options.first == HelpText.Option(
            names: ["--volume"], valueName: "X",
            description: "Linear volume, 0 (silent) to 1 (as recorded); above 1 is louder (default 1)"))
        let vibrate = HelpText(VibrateCommand.help)
        #expect(vibrate.usage.count == 2)
        #expect(vibrate.options.contains { $0.names == ["--device"] && $0.valueName == "PATH|NAME" })
        #expect(HelpText(ThemeCommand.help).positionals == [HelpText.Positional(name: "EVENT", isOptional: true, repeats: true)])
    }
}
