import Testing

@testable import FeedbackCLI

/// A command made up for these tests: an option of each kind, a required and a repeating argument.
private enum SampleCommand: Subcommand {
    static let name = "sample"
    static let abstract = "Do a sample thing"
    static let discussion: [Paragraph] = [
        """
        Running text, in the lines
        the help shows.
        """,
        .literal("feedbackctl sample --fast in.wav"),
    ]

    static let input = Argument("FILE", .file, help: "The input")
    static let moves = Argument(
        "up|down", .oneOf(["up", "down"]), optional: true, repeats: true,
        help: """
            Where to go, in a description
            of two lines
            """)
    static let arguments = [input, moves]

    static let fast = Option("--fast", help: "Go fast")
    static let output = Option("--output", value: "FILE", .file, help: "Write to FILE")
    static let directory = Option("--in", value: "DIR", .directory, help: "Look in DIR")
    static let mode = Option("--mode", value: "on|off", .oneOf(["on", "off"]), help: "The mode: on or off")
    static let count = Option("--count", value: "N", .number, help: "How many")
    static let label = Option("--a-long-label", value: "TEXT", .text, help: "A name too long for its column")
    static let json = Option.json(#"Print {"version"}"#)
    static let options = [fast, output, directory, mode, count, label, json]
    static let usage: [[UsageItem]] = [
        [.optional([fast, json]), .arguments],
        [.required(mode), .oneOf([fast, json]), .options, .arguments],
    ]

    static let exitStatus: String? = """
        0 done; 64 bad
        usage.
        """
    static let examples = ["feedbackctl sample in.wav up"]

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {}
}

/// Help, man page and completions are generated from the declarations: each generator is checked on
/// `SampleCommand`, so every option a command declares appears in all three by construction.
@Suite struct CommandDeclarationTests {
    @Test func helpIsMadeFromTheDeclarations() {
        #expect(
            SampleCommand.help == """
                OVERVIEW: Do a sample thing.

                Running text, in the lines
                the help shows.

                  feedbackctl sample --fast in.wav

                USAGE: feedbackctl sample [--fast] [--json] FILE [up|down...]
                       feedbackctl sample --mode on|off [--fast | --json] [OPTIONS] FILE [up|down...]

                ARGUMENTS:
                  FILE             The input
                  up|down          Where to go, in a description
                                   of two lines

                OPTIONS:
                  --fast           Go fast
                  --output FILE    Write to FILE
                  --in DIR         Look in DIR
                  --mode on|off    The mode: on or off
                  --count N        How many
                  --a-long-label TEXT
                                   A name too long for its column
                  --json           Print {"version"}
                  -q, --quiet      Print nothing on standard output, only errors
                  -h, --help       Show this help

                EXIT STATUS:
                  0 done; 64 bad
                  usage.

                EXAMPLES:
                  feedbackctl sample in.wav up

                """)
    }

    @Test func usageWrapsUnderTheFirstOption() {
        let words = ["feedbackctl", "sample"] + (1...6).map { "[--option-\($0)]" }
        let text = HelpText.usage([words])
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.count <= HelpText.width })
        #expect(lines[1].hasPrefix(String(repeating: " ", count: "USAGE: feedbackctl sample ".count) + "[--option-"))
    }

    @Test func manSectionListsEveryArgumentAndOptionButHelp() throws {
        let section = Documentation.commandSection(SampleCommand.self)
        #expect(section.first == ".SS sample")
        for argument in SampleCommand.arguments {
            #expect(section.contains(Documentation.styled(argument.name)), "\(argument.name)")
        }
        for option in SampleCommand.allOptions where option != CommonOptions.help {
            let tag = try #require(section.firstIndex(of: Documentation.styled(option.synopsis)), "\(option.name)")
            #expect(section[tag - 1] == ".TP" && section[tag + 1] == Documentation.textLine(option.description))
        }
        #expect(!section.contains(Documentation.styled(CommonOptions.help.synopsis)))
        #expect(section.contains("Where to go, in a description of two lines"), "a description's lines are run together")
        #expect(section.contains("Exit status: 0 done; 64 bad usage."))
        #expect(section.contains(Documentation.styled("feedbackctl sample --mode on|off [--fast | --json] [OPTIONS] FILE [up|down...]")))
    }

    @Test func bashCompletesEveryOptionAndArgumentByKind() {
        let script = Completion.bash([SampleCommand.self])
        let names = SampleCommand.allOptions.flatMap(\.names)
        #expect(script.contains("        options='\(names.joined(separator: " "))'\n"))
        #expect(script.contains("        valued=' --output --in --mode --count --a-long-label '\n"))
        #expect(script.contains("        count=2\n        repeats=1\n"))
        #expect(script.contains(#"'sample --output') _feedbackctl_files "$cur" ;;"#))
        #expect(script.contains(#"'sample --in') _feedbackctl_directories "$cur" ;;"#))
        #expect(script.contains(#"'sample --mode') _feedbackctl_words "$cur" 'on off' ;;"#))
        #expect(!script.contains("'sample --count'") && !script.contains("'sample --a-long-label'"), "nothing to offer")
        #expect(script.contains(#"'sample 0') _feedbackctl_files "$cur" ;;"#))
        #expect(script.contains(#"'sample 1') _feedbackctl_words "$cur" 'up down' ;;"#))
    }

    @Test func zshCompletesEveryOptionAndArgumentByKind() {
        let script = Completion.zsh([SampleCommand.self])
        for spec in [
            "'--fast[Go fast]'",
            "'--output=[Write to FILE]:FILE:{_feedbackctl_offer files}'",
            "'--in=[Look in DIR]:DIR:{_feedbackctl_offer directories}'",
            "'--mode=[The mode]:on|off:(on off)'",
            "'--count=[How many]:N: '",
            "'--a-long-label=[A name too long for its column]:TEXT: '",
            "'(-q --quiet)'{-q,--quiet}'[Print nothing on standard output, only errors]'",
            "'(- *)'{-h,--help}'[Show this help]'",
            "'1:FILE:{_feedbackctl_offer files}'",
            "'*:up|down:(up down)'",
        ] {
            #expect(script.contains("                    \(spec) \\\n"), "\(spec)")
        }
    }

    @Test func completionMenusShowADescriptionUpToItsFirstClause() {
        #expect(Completion.brief("Print one JSON object: {\"version\"}") == "Print one JSON object")
        #expect(Completion.brief("The output profile to prefer (default: stereo)") == "The output profile to prefer (default: stereo)")
    }
}

/// The parser reads only what the command declared.
@Suite struct ArgumentParserTests {
    private func parse(_ arguments: String...) throws(CommandError) -> ArgumentParser {
        try ArgumentParser(arguments, command: SampleCommand.self)
    }

    private func failure(_ arguments: String...) -> String? {
        do {
            _ = try ArgumentParser(arguments, command: SampleCommand.self)
            return nil
        } catch {
            #expect(error.exitCode == .usage)
            return error.message
        }
    }

    @Test func readsOptionsThroughTheirDeclarations() throws {
        let parser = try parse("in.wav", "--fast", "--output", "out.wav", "--mode=on", "--count", "-3", "-q", "up", "down")
        #expect(parser.flag(SampleCommand.fast))
        #expect(!parser.flag(SampleCommand.json))
        #expect(parser.value(SampleCommand.output) == "out.wav")
        #expect(parser.value(SampleCommand.mode) == "on")
        #expect(parser.value(SampleCommand.count) == "-3", "a value may start with '-'")
        #expect(parser.value(SampleCommand.directory) == nil)
        #expect(parser.quietRequested)
        #expect(parser.positionals == ["in.wav", "up", "down"])
    }

    @Test func doubleDashEndsTheOptions() throws {
        let parser = try parse("--fast", "--", "--json", "-")
        #expect(parser.flag(SampleCommand.fast) && !parser.flag(SampleCommand.json))
        #expect(parser.positionals == ["--json", "-"])
    }

    @Test func refusesWhatTheCommandDidNotDeclare() {
        #expect(failure("in.wav", "--bogus") == "unknown option '--bogus' for 'sample'")
        #expect(failure("in.wav", "--man") == "unknown option '--man' for 'sample'", "another command's option")
        #expect(failure("in.wav", "--fast=yes") == "option '--fast' takes no value")
        #expect(failure("in.wav", "--output") == "option '--output' needs a value")
        #expect(failure() == "missing argument for 'sample'")
        #expect(failure("--fast") == "missing argument for 'sample'")
    }

    @Test func countsArgumentsAgainstTheDeclarations() throws {
        #expect(try parse("in.wav").positionals == ["in.wav"])
        #expect(try ArgumentParser(["1007", "0.5"], command: VolumeCommand.self).positionals == ["1007", "0.5"])
        do {
            _ = try ArgumentParser(["1007", "0.5", "2"], command: VolumeCommand.self)
            Issue.record("volume took three arguments")
        } catch {
            #expect(error.message == "unexpected argument '2' for 'volume'")
        }
    }

    /// The parser takes the first declaration a word matches: a name declared twice would leave
    /// the second unreachable.
    @Test(arguments: FeedbackCommand.subcommands.map { $0.name })
    func noCommandDeclaresANameTwice(name: String) throws {
        let command = try #require(FeedbackCommand.subcommand(named: name))
        let names = command.allOptions.flatMap(\.names)
        #expect(Set(names).count == names.count, "\(names)")
    }

    @Test func helpIsAskedForAnywhereBeforeDoubleDash() {
        #expect(ArgumentParser.asksForHelp(["--bogus", "-h"]))
        #expect(ArgumentParser.asksForHelp(["x", "--help"]))
        #expect(!ArgumentParser.asksForHelp(["--", "--help"]))
    }
}
