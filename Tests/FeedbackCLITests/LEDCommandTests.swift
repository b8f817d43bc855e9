import FeedbackServices
import FeedbackTestSupport
import Foundation
import Testing

@testable import FeedbackCLI

/// `feedbackctl led` on a fake sysfs tree, in process.
struct LEDCommandTests {
    func tree() throws -> FakeSysfs {
        let tree = FakeSysfs()
        try tree.add("input3::capslock", maximum: 1, triggers: "none [kbd-capslock] pattern", brightness: 1)
        try tree.add("rgb:status", channels: ["red", "green", "blue"], udev: ["FEEDBACKD_TYPE": "led"])
        return tree
    }

    @Test func listShowsEveryLEDAndFeedbackdsTag() throws {
        let tree = try tree()
        let text = feedbackctl("led", "--sysfs-root", tree.root)
        #expect(text.status == 0, "\(text.errors)")
        #expect(text.output.contains("rgb:status\n  colour:    multicolor (red green blue)\n"))
        #expect(text.output.contains("  feedback:  yes (FEEDBACKD_TYPE=led)\n"))
        let json = feedbackctl("led", "list", "--json", "--sysfs-root", tree.root)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let leds = try #require(object["leds"] as? [[String: Any]])
        #expect(leds.map { $0["name"] as? String } == ["input3::capslock", "rgb:status"])
        #expect(leds[0]["channels"] is NSNull && leds[0]["trigger"] as? String == "kbd-capslock")
        #expect(leds[1]["colors"] as? [String] == ["white", "red", "green", "blue"] && leds[1]["feedback"] as? Bool == true)
        #expect(feedbackctl("led", "--sysfs-root", FakeSysfs().root).output.hasPrefix("No LEDs in "))
    }

    @Test func blinkPicksTheTaggedLEDAndPutsItBack() throws {
        let tree = try tree()
        let result = feedbackctl("led", "blink", "--color", "green", "--frequency", "10", "--duration", "0.3", "--json", "--sysfs-root", tree.root)
        #expect(result.status == 0, "\(result.errors)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        #expect(object["led"] as? String == "rgb:status" && object["method"] as? String == "patternTrigger")
        #expect(object["pattern"] as? String == "255 50 255 0 0 50 0 0" && object["repeat"] as? String == "3")
        #expect(tree.read("rgb:status", "multi_intensity") == "0 0 0")
        #expect(tree.read("rgb:status", "trigger") == "none")
    }

    @Test func offTakesAwayTheTrigger() throws {
        let tree = try tree()
        let result = feedbackctl("led", "off", "--led", "capslock", "--sysfs-root", tree.root)
        #expect(result.status == 0 && result.output == "input3::capslock: off\n", "\(result.errors)")
        #expect(tree.read("input3::capslock", "trigger") == "none" && tree.read("input3::capslock", "brightness") == "0")
    }

    @Test(arguments: [
        (["led", "blink", "--frequency", "50"], 64, "--frequency takes a number 0.0...20.0"),
        (["led", "blink", "--duration", "0"], 64, "--duration takes a number 0.1...3600.0"),
        (["led", "blink", "--color", "purple"], 64, "--color takes white, red, green or blue"),
        (["led", "list", "--color", "red"], 64, "--color goes with 'led blink'"),
        (["led", "dance"], 64, "'dance' is not an action"),
        (["led", "blink", "--led", "capslock", "--color", "red"], 69, "cannot show red"),
        (["led", "blink", "--led", "nothing"], 69, "none named 'nothing'"),
    ] as [([String], Int32, String)])
    func errors(arguments: [String], status: Int32, message: String) throws {
        let tree = try tree()
        let result = feedbackctl(arguments + ["--sysfs-root", tree.root])
        #expect(result.status == status, "\(result.errors)")
        #expect(result.errors.contains(message), "\(result.errors)")
    }
}
