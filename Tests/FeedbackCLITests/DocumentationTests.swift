import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI
import FeedbackServices

/// Whether an executable is at `path`.
func isInstalled(_ path: String) -> Bool { access(path, X_OK) == 0 }

/// Whether a test that needs these programs should run: always in CI (where a missing one is a
/// failure), elsewhere only when they are installed.
func shouldRun(needing programs: String...) -> Bool {
    runningInCI || programs.allSatisfy(isInstalled)
}

/// Fails the test unless the programs are installed.
func requirePrograms(_ programs: String...) throws {
    for program in programs {
        try #require(isInstalled(program), "\(program) is needed (scripts/setup installs it from scripts/debian-packages.txt)")
    }
}

/// The generated documentation: the committed copies, and the man page and completion scripts run
/// through the real groff, man, bash and zsh.
@Suite struct DocumentationTests {
    static let generated: [(path: String, text: String)] = [
        ("share/man/man1/feedbackctl.1", Documentation.manPage),
        ("share/bash-completion/completions/feedbackctl", Completion.bash),
        ("share/zsh/site-functions/_feedbackctl", Completion.zsh),
    ]

    @Test func theManualPageCarriesAFixedReleaseDate() throws {
        let header = try #require(Documentation.manPage.split(separator: "\n").first { $0.hasPrefix(".TH ") })
        #expect(header == #".TH FEEDBACKCTL 1 "\#(FeedbackCommand.releaseDate)" "feedbackctl \#(FeedbackCommand.version)" "User Commands""#)
        #expect(FeedbackCommand.releaseDate.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil)
    }

    @Test func committedFilesAreWhatTheGeneratorMakes() throws {
        for (path, text) in Self.generated {
            let committed = try? String(contentsOfFile: repositoryRoot + "/" + path, encoding: .utf8)
            #expect(committed == text, "\(path) differs from the commands' declarations: run scripts/generate-docs and commit the result")
        }
    }

    @Test func theCommandPrintsWhatTheGeneratorMakes() {
        #expect(feedbackctl("help", "--man").output == Documentation.manPage)
        #expect(feedbackctl("completion", "bash").output == Completion.bash)
        #expect(feedbackctl("completion", "zsh").output == Completion.zsh)
        let fish = feedbackctl("completion", "fish")
        #expect(fish.status == 64 && fish.errors.contains("no completion for 'fish'; use bash or zsh"))
        #expect(feedbackctl("help", "--man", "fire").status == 64)
    }

    @Test func roffEscaping() {
        #expect(Documentation.textLine(".hidden and 'quoted'") == "\\&.hidden and 'quoted'")
        #expect(Documentation.textLine("'quoted'") == "\\&'quoted'")
        #expect(Documentation.escape("a\\b --c …") == "a\\eb \\-\\-c \\[u2026]")
        #expect(Documentation.styled("feedbackctl fire [--theme NAME] ID|EVENT")
            == "\\fBfeedbackctl\\fR \\fBfire\\fR [\\fB\\-\\-theme\\fR\\ \\fINAME\\fR] \\fIID\\fR|\\fIEVENT\\fR")
    }

    @Test(.enabled(if: shouldRun(needing: "/usr/bin/groff", "/usr/bin/man", "/usr/bin/col")))
    func manPageRendersWithoutWarnings() throws {
        try requirePrograms("/usr/bin/groff", "/usr/bin/man", "/usr/bin/col")
        let page = repositoryRoot + "/share/man/man1/feedbackctl.1"
        let groff = runProcess("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z", page])
        #expect(groff.status == 0 && groff.errors.isEmpty, "\(groff.errors)")
        let man = runProcess("/bin/sh", ["-c", "man -l \"$1\" | col -b", "sh", page], environment: ["MANWIDTH=80", "LC_ALL=C.UTF-8"])
        #expect(man.status == 0 && man.errors.isEmpty, "\(man.errors)")
        let text = man.output
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"] {
            #expect(text.contains("\n\(heading)\n"), "no \(heading) section")
        }
        #expect(text.contains("feedbackctl - system sounds, alert feedback and vibration for Linux"))
        for command in FeedbackCommand.subcommands {
            #expect(text.contains("\n   \(command.name)\n       feedbackctl \(command.name)"), "no section for \(command.name)")
        }
        for word in ["--volume X", "PULSE_SERVER", "FEEDBACKSERVICES_PROFILE", "registry.json", "message-new-instant", "Ctrl-C"] {
            #expect(text.contains(word), "\(word) missing")
        }
        // Nothing of the roff source shows through.
        #expect(!text.contains("\\f") && !text.contains("\\-") && !text.contains("\\["))
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix(".") })
    }

    /// The bash script sourced into a real bash, its function called as bash calls it.
    @Test(.enabled(if: shouldRun(needing: "/bin/bash")))
    func bashCompletes() throws {
        try requirePrograms("/bin/bash")
        let directory = TemporaryDirectory()
        _ = FileManager.default.createFile(atPath: directory.file("alert.wav"), contents: Data())
        mkdir(directory.file("sounds"), 0o755)
        let cases: [[String]] = [
            ["fi"],
            ["play", "--"],
            ["profile", ""],
            ["play", "a"],
            ["fire", "100"],
            ["fire", "message-new-"],
            ["fire", "--output", "a"],
            ["fire", "--output", "=", "a"],
            ["fire", "--volume", ""],
            ["volume", "1007", ""],
            ["help", "v"],
            ["theme", "message-new-instant", "phone-"],
            ["devices", "--input-dir", "s"],
            ["play", "--", "-"],
            ["completion", ""],
        ]
        var script = "source \"$1\"\ncd \"$2\"\n"
        for words in cases {
            let quoted = (["feedbackctl"] + words).map { "'\($0)'" }.joined(separator: " ")
            script += "COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count); _feedbackctl; printf '%s\\n' \"${COMPREPLY[@]}\" | sort | tr '\\n' ' '; echo\n"
        }
        let result = runProcess(
            "/bin/bash", ["--norc", "--noprofile", "-c", script, "bash", repositoryRoot + "/share/bash-completion/completions/feedbackctl", directory.path])
        #expect(result.status == 0 && result.errors.isEmpty, "\(result.errors)")
        let replies = result.output.split(separator: "\n", omittingEmptySubsequences: false).map { $0.split(separator: " ").map(String.init) }
        try #require(replies.count >= cases.count, "\(result.output)")
        #expect(replies[0] == ["fire"])
        #expect(Set(["--volume", "--pan", "--loop", "--output", "--canberra", "--pcm", "--no-wait", "--json", "--quiet", "--help"]) == Set(replies[1]))
        #expect(replies[2] == ["full", "quiet", "silent"])
        #expect(replies[3] == ["alert.wav"])
        #expect(replies[4] == (1000...1009).map(String.init))
        #expect(replies[5].contains("message-new-instant") && replies[5].allSatisfy { $0.hasPrefix("message-new-") })
        #expect(replies[6] == ["alert.wav"])
        #expect(replies[7] == ["alert.wav"])
        #expect(replies[8] == [], "a volume is a number: nothing to offer")
        #expect(replies[9] == [], "the multiplier X: nothing to offer")
        #expect(replies[10] == ["version", "vibrate", "volume"])
        #expect(replies[11].contains("phone-failure"), "theme takes several events")
        #expect(replies[12] == ["sounds"])
        #expect(replies[13] == [], "after --, a word starting with - is an argument, not an option")
        #expect(replies[14] == ["bash", "zsh"])
    }

    /// The zsh function loaded by compinit in an interactive zsh on a pseudo-terminal (zsh/zpty),
    /// and Tab pressed: what zsh shows is checked, not just that the file parses.
    @Test(.enabled(if: shouldRun(needing: "/usr/bin/zsh")))
    func zshCompletes() throws {
        try requirePrograms("/usr/bin/zsh")
        let file = repositoryRoot + "/share/zsh/site-functions/_feedbackctl"
        let parse = runProcess("/usr/bin/zsh", ["-n", file])
        #expect(parse.status == 0 && parse.errors.isEmpty, "\(parse.errors)")

        let functions = TemporaryDirectory()
        try Completion.zsh.write(toFile: functions.file("_feedbackctl"), atomically: true, encoding: .utf8)
        let lines = ["feedbackctl prof", "feedbackctl profile ", "feedbackctl play --vo", "feedbackctl fire 100", "feedbackctl help vib"]
        // After Tab, the line is printed back behind a marker zsh computes ($((1000+n))), so that the
        // echo of the typed keys never matches it; reading waits for that marker's line.
        var script = """
            zmodload zsh/zpty || exit 3
            zpty shell 'zsh -f -i'
            zpty -w shell 'bindkey -e; PS1="%% "; fpath=(\(functions.path) $fpath); autoload -U compinit; compinit -u -D; zstyle ":completion:*" format "<%d>"; setopt nolistbeep'

            """
        for (index, line) in lines.enumerated() {
            script += """
                zpty -w -n shell \(zshQuoted(line + "\t"))
                zpty -w shell $'\\x01print -r -- RESULT$((1000+\(index))): '
                zpty -r shell out '*RESULT\(1000 + index):*'$'\\n'
                print -r -- "$out"

                """
        }
        script += "zpty -d shell\n"
        let result = runProcess("/usr/bin/timeout", ["60", "/usr/bin/zsh", "-f", "-c", script], environment: ["TERM=dumb", "HOME=\(functions.path)"])
        #expect(result.status == 0, "\(result.errors)")
        // Without escape sequences and carriage returns ("\r\n" is one Character: filter scalars).
        let plain = String(String.UnicodeScalarView(result.output.unicodeScalars.filter { $0 != "\r" }))
        let screen = plain.replacing(/\u{1B}\[[0-9;?]*[A-Za-z]/, with: "")
        // Case n's part of the screen: from the end of case n-1's to the line its marker printed.
        var sections: [String] = []
        var rest = screen[...]
        for index in lines.indices {
            guard let marker = rest.firstRange(of: "RESULT\(1000 + index):") else { break }
            let end = rest[marker.upperBound...].firstIndex(of: "\n") ?? rest.endIndex
            sections.append(String(rest[..<end]))
            rest = rest[end...]
        }
        try #require(sections.count == lines.count, "\(screen)")
        #expect(sections[0].hasSuffix("RESULT1000: feedbackctl profile"), "the only command starting so is completed")
        #expect(sections[1].contains("<full|quiet|silent>") && sections[1].contains("silent"), "\(sections[1])")
        #expect(sections[2].hasSuffix("RESULT1002: feedbackctl play --volume"), "\(sections[2])")
        #expect(sections[3].contains("<system sound ID>") && sections[3].contains("1007"), "\(sections[3])")
        #expect(sections[4].hasSuffix("RESULT1004: feedbackctl help vibrate"), "\(sections[4])")
    }

    private func zshQuoted(_ text: String) -> String {
        "$'" + text.replacing("\\", with: "\\\\").replacing("'", with: "\\'").replacing("\t", with: "\\t") + "'"
    }
}
