import FeedbackCLI
import FeedbackServices
import Foundation
import Testing

/// `feedbackctl theme`.
struct ThemeCommandTests {
    @Test func showsTheThemeSearchPathAndWhereEventsResolve() {
        let run = runThemeCLI(["theme", "--theme", "feedbackservices", "--search-path", cliRepositoryThemes, "message-new-instant", "dtmf-5"])
        #expect(run.code == 0, "\(run.errors)")
        #expect(run.errors.isEmpty)
        #expect(run.output.contains("theme:          feedbackservices (given with --theme)"))
        #expect(run.output.contains("search path:\n  \(cliRepositoryThemes)\n"))
        #expect(run.output.contains("message-new-instant  \(cliRepositoryThemes)/feedbackservices/stereo/message-new-instant.wav"))
        #expect(run.output.contains("dtmf-5               \(cliRepositoryThemes)/feedbackservices/stereo/dtmf-5.wav"))
        #expect(run.output.contains("freedesktop (not installed)"))
    }

    @Test func jsonParsesAndReportsEachStatus() throws {
        let directory = makeThemeCLIDirectory()
        defer { removeThemeCLIDirectory(directory) }
        writeThemeCLIFile("t/index.theme", in: directory, contents: "[Sound Theme]\nName=T\nDirectories=stereo\n[stereo]\nOutputProfile=stereo\n")
        writeThemeCLIFile("t/stereo/quiet.disabled", in: directory, contents: "")
        writeThemeCLIFile("t/stereo/message.oga", in: directory, contents: "x")
        let run = runThemeCLI(["theme", "--json", "--theme", "t", "--locale", "de_DE.UTF-8", "--search-path", directory,
                               "quiet", "message-new-instant"])
        #expect(run.code == 0, "\(run.errors)")
        let json = try run.json()
        #expect(json["version"] as? String == FeedbackCommand.version)
        let theme = try #require(json["theme"] as? [String: Any])
        #expect(theme["name"] as? String == "t")
        #expect(theme["source"] as? String == "explicit")
        #expect(json["searchPath"] as? [String] == [directory])
        #expect(json["outputProfile"] as? String == "stereo")
        #expect(json["localeFallbacks"] as? [String] == ["de_DE.UTF-8", "de_DE", "de", "C"])
        let events = try #require(json["events"] as? [[String: Any]])
        #expect(events.count == 2)
        #expect(events[0]["status"] as? String == "disabled")
        #expect(events[0]["file"] as? String == directory + "/t/stereo/quiet.disabled")
        #expect(events[1]["status"] as? String == "resolved")
        #expect(events[1]["matchedName"] as? String == "message")
        let themes = try #require(json["themes"] as? [[String: Any]])
        #expect(themes.map { $0["name"] as? String } == ["t", "feedbackservices", "freedesktop"])
        #expect(themes.map { $0["installed"] as? Bool } == [true, false, false])
    }

    @Test func anEventWithNoSoundExits66() throws {
        let run = runThemeCLI(["theme", "--json", "--search-path", cliRepositoryThemes, "no-such-event"])
        #expect(run.code == 66)
        #expect(run.errors.contains("Error: no sound found for no-such-event"))
        let events = try #require(try run.json()["events"] as? [[String: Any]])
        #expect(events.first?["status"] as? String == "notFound")
        #expect(events.first?["namesTried"] as? [String] == ["no-such-event", "no-such", "no"])
    }

    @Test(arguments: [
        ["theme", "../etc/passwd"], ["theme", "bell\u{7}"], ["theme", "--theme", "a/b"], ["theme", "--theme", "two words"],
        ["theme", "--search-path", "relative/dir"], ["theme", "--output-profile", ""], ["theme", "--bogus"],
    ])
    func refusedArgumentsExit64(arguments: [String]) {
        let run = runThemeCLI(arguments)
        #expect(run.code == 64)
        #expect(run.errors.hasPrefix("Error: "))
        #expect(run.output.isEmpty)
    }

    @Test func helpIsTheSameEveryWay() {
        let help = runThemeCLI(["help", "theme"])
        #expect(help.code == 0)
        #expect(help.output.hasPrefix("OVERVIEW: Show the active sound theme"))
        #expect(runThemeCLI(["theme", "--help"]).output == help.output)
        #expect(runThemeCLI(["theme", "-h"]).output == help.output)
        #expect(runThemeCLI([]).output.contains("  theme "))
    }
}
