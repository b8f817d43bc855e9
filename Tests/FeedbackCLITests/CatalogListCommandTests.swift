import FeedbackCLI
import FeedbackServices
import Foundation
import Testing

/// `feedbackctl list`.
struct CatalogListCommandTests {
    @Test func listsEveryCatalogIDResolvedWithItsDuration() {
        let run = runThemeCLI(["list", "--search-path", cliRepositoryThemes])
        #expect(run.code == 0, "\(run.errors)")
        #expect(run.errors.isEmpty)
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("ID    NAME") && $0.contains("EVENT") && $0.contains("DURATION") && $0.hasSuffix("FILE") })
        for sound in SystemSoundCatalog.sounds {
            let line = lines.first { $0.hasPrefix("\(sound.id)  \(sound.name) ") }
            #expect(line?.contains(" \(sound.event) ") == true, "\(sound.id)")
            #expect(line?.hasSuffix("\(cliRepositoryThemes)/feedbackservices/\(sound.themeFile)") == true, "\(sound.id)")
            #expect(line?.contains(" s ") == true, "\(sound.id) has no duration")
        }
        #expect(lines.contains("Vibration only:"))
        #expect(lines.contains("4095  Vibrate"))
        #expect(lines.contains("1011  SMSReceived_Vibrate"))
        #expect(!run.output.contains("NOT FOUND"))
    }

    @Test func jsonParsesWithEveryIDResolved() throws {
        let run = runThemeCLI(["list", "--json", "--search-path", cliRepositoryThemes])
        #expect(run.code == 0, "\(run.errors)")
        let json = try run.json()
        #expect(json["version"] as? String == FeedbackCommand.version)
        let sounds = try #require(json["sounds"] as? [[String: Any]])
        #expect(sounds.count == SystemSoundCatalog.sounds.count)
        for entry in sounds {
            #expect(entry["status"] as? String == "resolved")
            let file = try #require(entry["file"] as? String)
            #expect(FileManager.default.fileExists(atPath: file))
            #expect((entry["duration"] as? Double ?? 0) > 0)
            #expect(entry["theme"] as? String == "feedbackservices")
        }
        let tritone = try #require(sounds.first { $0["id"] as? Int == 1007 })
        #expect(tritone["name"] as? String == "sms-received1")
        #expect(tritone["event"] as? String == "message-new-instant")
        #expect(tritone["category"] as? String == "SMSReceived_Alert")
        let vibration = try #require(json["vibration"] as? [[String: Any]])
        #expect(vibration.compactMap { $0["id"] as? Int } == [1011, 1102, 1311, 1350, 1351, 4095])
    }

    @Test func missingThemeExits66AndSaysWhichIDs() throws {
        let directory = makeThemeCLIDirectory()
        defer { removeThemeCLIDirectory(directory) }
        let run = runThemeCLI(["list", "--json", "--search-path", directory])
        #expect(run.code == 66)
        #expect(run.errors.contains("Error: no sound found for system sound IDs 1000, 1001"))
        let sounds = try #require(try run.json()["sounds"] as? [[String: Any]])
        #expect(sounds.allSatisfy { $0["status"] as? String == "notFound" && $0["file"] is NSNull })
    }

    @Test func anUndecodableFileExits65() {
        let directory = makeThemeCLIDirectory()
        defer { removeThemeCLIDirectory(directory) }
        writeThemeCLIFile("broken/index.theme", in: directory, contents: "[Sound Theme]\nName=Broken\nDirectories=stereo\n")
        writeThemeCLIFile("broken/stereo/message-new-instant.wav", in: directory, contents: "not a wav")
        let run = runThemeCLI(["list", "--theme", "broken", "--search-path", "\(directory):\(cliRepositoryThemes)"])
        #expect(run.code == 65)
        #expect(run.errors.contains("1007"))
    }

    @Test(arguments: [["list", "extra"], ["list", "--bogus"], ["list", "--theme", ".."]])
    func refusedArgumentsExit64(arguments: [String]) {
        let run = runThemeCLI(arguments)
        #expect(run.code == 64)
        #expect(run.errors.hasPrefix("Error: "))
    }

    @Test func helpIsTheSameEveryWay() {
        let help = runThemeCLI(["help", "list"])
        #expect(help.code == 0)
        #expect(help.output.hasPrefix("OVERVIEW: List the system sounds"))
        #expect(runThemeCLI(["list", "--help"]).output == help.output)
        #expect(runThemeCLI([]).output.contains("  list "))
    }
}
