import FeedbackCLI
@testable import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// feedbackd's theme format as the service reads it: Debian's file as it is, our shipped theme,
/// profiles as levels, parents, and the bounds on every input.
struct FeedbackThemeTests {
    let directory = TemporaryDirectory()

    @discardableResult
    private func write(_ name: String, _ text: String) -> String {
        directory.write(Array(text.utf8), to: name)
    }

    private func theme(name: String = "t", parent: String? = nil, _ profiles: String) -> String {
        let parentLine = parent.map { "\"parent-name\": \"\($0)\"," } ?? ""
        return "{ \"name\": \"\(name)\", \(parentLine) \"profiles\": [\(profiles)] }"
    }

    @Test func debianDefaultThemeAsItIs() throws {
        guard access("/usr/share/feedbackd/themes/default.json", R_OK) == 0 else {
            #expect(!runningInCI, "Debian's feedbackd package (scripts/setup) ships the theme")
            return
        }
        let theme = try FeedbackTheme.load(path: "/usr/share/feedbackd/themes/default.json", parents: [])
        #expect(theme.name == "default")
        #expect(theme.ignored.isEmpty)
        #expect(theme.approximated.isEmpty, "Debian's LEDs are red and blue")
        let email = theme.feedbacks(for: "message-new-email", profile: .full)
        #expect(email.first == .sound(effect: "message-new-email"))
        #expect(email.count == 2)
        // Three 150 ms pulses over 750 ms with 100 ms pauses.
        let rumble = try VibrationPattern.rumble(duration: 750, count: 3, pause: 100)
        #expect(theme.feedbacks(for: "message-new-email", profile: .quiet) == [.vibration(rumble)])
        #expect(theme.feedbacks(for: "message-new-sms", profile: .full).first == .sound(effect: "message-new-instant"))
        #expect(theme.feedbacks(for: "message-new-email", profile: .silent) == [])
        let red = ThemeFeedback.led(color: "red", millihertz: 5000, brightnessPercent: 100, priority: 0)
        #expect(theme.feedbacks(for: "battery-caution", profile: .full) == [red])
        #expect(theme.feedbacks(for: "battery-caution", profile: .silent) == [red])
        #expect(theme.feedbacks(for: "message-missed-sms", profile: .silent).first == .led(color: "blue", millihertz: 2000, brightnessPercent: 100, priority: 0))
    }

    @Test func shippedThemeHasASoundForEveryEventOfOurSoundTheme() throws {
        let locations = FeedbackThemeLocations.standard(environment: ["HOME": directory.path])
        let shipped = try #require(FeedbackThemeLocations.shippedDirectory)
        #expect(locations.theme == "\(shipped)/feedbackservices.json")
        let theme = try FeedbackTheme.load(path: locations.theme, parents: locations.parentDirectories)
        #expect(theme.name == "feedbackservices")
        #expect(theme.ignored.isEmpty)
        let sounds = try #require(SoundThemeSearchPath.shippedThemesDirectory)
        let events = try FileManager.default.contentsOfDirectory(atPath: "\(sounds)/feedbackservices/stereo")
            .filter { $0.hasSuffix(".wav") }.map { String($0.dropLast(4)) }
        #expect(events.count > 100)
        for event in events {
            // The ringtone is a pattern (ThemePatternTests), with its sound for feedbackd.
            var first = theme.feedbacks(for: event, profile: .full).first
            if case .pattern(_, let instead)? = first, event == "phone-incoming-call" { first = instead }
            #expect(first == .sound(effect: event), "\(event)")
        }
        // A vibration per event that wants one, in quiet and so in full.
        let call = theme.feedbacks(for: "phone-incoming-call", profile: .quiet)
        #expect(call.count == 1)
        #expect(theme.feedbacks(for: "phone-incoming-call", profile: .full).count == 2)
        // LEDs for what was missed, under every profile (silent and so quiet and full), as feedbackd's
        // own theme has them.
        let missed = ThemeFeedback.led(color: "blue", millihertz: 1000, brightnessPercent: 100, priority: 0)
        for profile in FeedbackProfile.allCases {
            #expect(theme.feedbacks(for: "message-missed-instant", profile: profile).last == missed, "\(profile)")
        }
        #expect(theme.feedbacks(for: "battery-caution", profile: .silent)
            == [.led(color: "red", millihertz: 5000, brightnessPercent: 100, priority: 0)])
    }

    @Test func eventsVibrateWithTheThemesPatternRepeatedWhileTheyLast() throws {
        let rumble = try VibrationPattern.rumble(duration: 300, count: 2, pause: 50, magnitude: 0.5)
        let feedbacks: [ThemeFeedback] = [
            .sound(effect: "bell"), .vibration(rumble), .led(color: "red", millihertz: 0, brightnessPercent: 100, priority: 0),
        ]
        #expect(FeedbackRunner.vibration(in: feedbacks, timeout: -1) == rumble)
        for timeout: Int32 in [0, 5] {
            let repeated = try #require(FeedbackRunner.vibration(in: feedbacks, timeout: timeout))
            #expect(repeated.steps == rumble.steps && repeated.repeatIndex == 0)
        }
        #expect(FeedbackRunner.vibration(in: [.sound(effect: "bell")], timeout: 0) == nil)
    }

    @Test func environmentChoosesTheTheme() {
        let chosen = FeedbackThemeLocations.standard(environment: ["FEEDBACK_THEME": "/x/mine.json", "HOME": "/h"])
        #expect(chosen.theme == "/x/mine.json")
        #expect(chosen.parentDirectories.first == "/h/.config/feedbackd/themes")
        #expect(chosen.parentDirectories.last == "/usr/share/feedbackd/themes")
        mkdir(directory.file("feedbackd"), 0o700)
        mkdir(directory.file("feedbackd/themes"), 0o700)
        write("feedbackd/themes/default.json", theme(#"{ "name": "full", "feedbacks": [] }"#))
        let user = FeedbackThemeLocations.standard(environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(user.theme == directory.file("feedbackd/themes/default.json"))
    }

    @Test(arguments: [FeedbackProfile.full, .quiet, .silent])
    func profilesAreLevels(profile: FeedbackProfile) throws {
        let path = write(
            "levels.json",
            theme(
                #"""
                { "name": "full", "feedbacks": [ { "event-name": "e", "type": "Sound", "effect": "bell" } ] },
                { "name": "quiet", "feedbacks": [ { "event-name": "e", "type": "VibraRumble", "duration": 100 } ] },
                { "name": "silent", "feedbacks": [ { "event-name": "e", "type": "Led", "color": "blue", "frequency": 1000 } ] }
                """#))
        let loaded = try FeedbackTheme.load(path: path, parents: [])
        let kinds = loaded.feedbacks(for: "e", profile: profile).map { feedback -> String in
            switch feedback {
            case .sound, .soundFile: "sound"
            case .vibration: "vibration"
            case .led: "led"
            case .dummy: "dummy"
            case .pattern: "pattern"
            }
        }
        let expected: [FeedbackProfile: [String]] = [
            .full: ["sound", "vibration", "led"], .quiet: ["vibration", "led"], .silent: ["led"],
        ]
        #expect(kinds == expected[profile])
    }

    @Test func parentsFillInWhatTheChildLacks() throws {
        write("base.json", theme(name: "base", #"""
            { "name": "full", "feedbacks": [
              { "event-name": "a", "type": "Sound", "effect": "base-a" },
              { "event-name": "b", "type": "Sound", "effect": "base-b" } ] }
            """#))
        let child = write("child.json", theme(name: "child", parent: "base", #"""
            { "name": "full", "feedbacks": [ { "event-name": "a", "type": "Sound", "effect": "child-a" } ] }
            """#))
        let loaded = try FeedbackTheme.load(path: child, parents: [directory.path])
        #expect(loaded.files == [child, directory.file("base.json")])
        #expect(loaded.feedbacks(for: "a", profile: .full) == [.sound(effect: "child-a")])
        #expect(loaded.feedbacks(for: "b", profile: .full) == [.sound(effect: "base-b")])
    }

    @Test func parentCyclesAndLongChainsAreRefused() throws {
        write("one.json", theme(name: "one", parent: "two", ""))
        write("two.json", theme(name: "two", parent: "one", ""))
        #expect(throws: FeedbackThemeError.self) {
            try FeedbackTheme.load(path: directory.file("one.json"), parents: [directory.path])
        }
        let own = write("self.json", theme(name: "self", parent: "self", ""))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: own, parents: [directory.path]) }
        for level in 0...FeedbackTheme.maximumParentDepth {
            write("l\(level).json", theme(name: "l\(level)", parent: "l\(level + 1)", ""))
        }
        write("l\(FeedbackTheme.maximumParentDepth + 1).json", theme(name: "end", ""))
        do {
            _ = try FeedbackTheme.load(path: directory.file("l0.json"), parents: [directory.path])
            Issue.record("a chain longer than the bound loaded")
        } catch {
            #expect(error.problem.contains("longer than"))
        }
        let missing = write("orphan.json", theme(name: "orphan", parent: "nowhere", ""))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: missing, parents: [directory.path]) }
        let escaping = write("escape.json", theme(name: "escape", parent: "../etc/passwd", ""))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: escaping, parents: [directory.path]) }
    }

    @Test(arguments: [
        ("not JSON", "{"),
        ("no name", #"{ "profiles": [] }"#),
        ("Sound without effect", #"{ "name": "t", "profiles": [ { "name": "full", "feedbacks": [ { "event-name": "e", "type": "Sound" } ] } ] }"#),
        ("rumble too long", #"{ "name": "t", "profiles": [ { "name": "quiet", "feedbacks": [ { "event-name": "e", "type": "VibraRumble", "duration": 600000 } ] } ] }"#),
        ("negative duration", #"{ "name": "t", "profiles": [ { "name": "quiet", "feedbacks": [ { "event-name": "e", "type": "VibraRumble", "duration": -5 } ] } ] }"#),
        ("pattern mismatch", #"{ "name": "t", "profiles": [ { "name": "quiet", "feedbacks": [ { "event-name": "e", "type": "VibraPattern", "magnitudes": [1.0], "durations": [1, 2] } ] } ] }"#),
        ("empty event", #"{ "name": "t", "profiles": [ { "name": "full", "feedbacks": [ { "event-name": "", "type": "Sound", "effect": "x" } ] } ] }"#),
    ])
    func malformedThemesAreRefused(_ what: String, _ text: String) {
        let path = write("bad.json", text)
        #expect(throws: FeedbackThemeError.self, "\(what)") { try FeedbackTheme.load(path: path, parents: []) }
    }

    @Test func inputsAreBounded() throws {
        let long = String(repeating: "x", count: FeedbackTheme.maximumStringLength + 1)
        let longName = write("long.json", theme(name: long, ""))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: longName, parents: []) }
        let entry = #"{ "event-name": "e", "type": "Sound", "effect": "x" }"#
        let many = Array(repeating: entry, count: FeedbackTheme.maximumEntries + 1).joined(separator: ",")
        let tooMany = write("many.json", theme(#"{ "name": "full", "feedbacks": [\#(many)] }"#))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: tooMany, parents: []) }
        let huge = write("huge.json", String(repeating: " ", count: FeedbackTheme.maximumFileSize + 1))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: huge, parents: []) }
        // Not a regular file: a FIFO would block a reader that opened it.
        mkfifo(directory.file("fifo.json"), 0o600)
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: directory.file("fifo.json"), parents: []) }
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: directory.path, parents: []) }
    }

    @Test func unknownTypesAreDummiesAndLedsRead() throws {
        let path = write("mixed.json", theme(#"""
            { "name": "full", "feedbacks": [
              { "event-name": "e", "type": "Sound", "effect": "bell", "future-field": 1 },
              { "event-name": "h", "type": "Hologram", "duration": 200 },
              { "event-name": "n" } ] },
            { "name": "silent", "feedbacks": [ { "event-name": "e", "type": "Led", "color": "blue" } ] }
            """#))
        let loaded = try FeedbackTheme.load(path: path, parents: [])
        #expect(loaded.ignored.count == 2, "\(loaded.ignored)")
        // A profile of another name: feedbackd keeps it and never plays it.
        let loud = write("loud.json", theme(#"{ "name": "loud", "feedbacks": [ { "event-name": "e", "type": "Sound", "effect": "x" } ] }"#))
        let unplayed = try FeedbackTheme.load(path: loud, parents: [])
        #expect(unplayed.notes.count == 1 && unplayed.notes[0].contains("profile 'loud' is never played"), "\(unplayed.notes)")
        #expect(FeedbackProfile.allCases.allSatisfy { unplayed.feedbacks(for: "e", profile: $0).isEmpty })
        #expect(
            loaded.feedbacks(for: "e", profile: .full)
                == [.sound(effect: "bell"), .led(color: "blue", millihertz: 0, brightnessPercent: 100, priority: 0)])
        // As feedbackd, which makes a type it does not know (or no type) a Dummy of its duration.
        #expect(loaded.feedbacks(for: "h", profile: .full) == [.dummy(milliseconds: 200)])
        #expect(loaded.feedbacks(for: "n", profile: .full) == [.dummy(milliseconds: 0)])
    }

    /// feedbackd's own test theme (`tests/data/test.json`) in our words: Dummy feedbacks with and
    /// without a duration, and a profile with no `feedbacks`.
    @Test func dummiesAndAProfileWithoutFeedbacks() throws {
        let path = write("cases.json", #"""
            { "name": "default", "profiles": [
              { "name": "full", "feedbacks": [
                { "type": "Dummy", "event-name": "quick" },
                { "type": "Dummy", "event-name": "slow", "duration": 10000 } ] },
              { "name": "quiet", "feedbacks": [ { "type": "Dummy", "event-name": "slow", "duration": 300 } ] },
              { "name": "silent" } ] }
            """#)
        let loaded = try FeedbackTheme.load(path: path, parents: [])
        #expect(loaded.ignored.isEmpty && loaded.notes.isEmpty)
        #expect(loaded.feedbacks(for: "quick", profile: .full) == [.dummy(milliseconds: 0)])
        #expect(loaded.feedbacks(for: "slow", profile: .full) == [.dummy(milliseconds: 10_000), .dummy(milliseconds: 300)])
        #expect(loaded.feedbacks(for: "slow", profile: .quiet) == [.dummy(milliseconds: 300)])
        #expect(loaded.feedbacks(for: "slow", profile: .silent) == [])
        let long = write("long.json", theme(#"{ "name": "full", "feedbacks": [ { "type": "Dummy", "event-name": "e", "duration": 600000 } ] }"#))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: long, parents: []) }
    }

    /// Debian's device themes are a name and a parent only.
    @Test func aThemeWithoutProfilesInheritsEverything() throws {
        write("default.json", theme(name: "default", #"{ "name": "full", "feedbacks": [ { "event-name": "a", "type": "Sound", "effect": "x" } ] }"#))
        let device = write("device.json", #"{ "name": "$device", "parent-name": "default" }"#)
        let loaded = try FeedbackTheme.load(path: device, parents: [directory.path])
        #expect(loaded.name == "$device")
        #expect(loaded.files == [device, directory.file("default.json")])
        #expect(loaded.feedbacks(for: "a", profile: .full) == [.sound(effect: "x")])
    }

    /// As feedbackd's theme expander: `default` inherits nothing, and a parent found nowhere is
    /// the default theme, with a note.
    @Test func defaultHasNoParentAndAMissingParentIsTheDefault() throws {
        write("default.json", theme(name: "default", ""))
        let orphan = write("orphan.json", theme(name: "orphan", parent: "nowhere", ""))
        let loaded = try FeedbackTheme.load(path: orphan, parents: [directory.path])
        #expect(loaded.files == [orphan, directory.file("default.json")])
        #expect(loaded.notes.count == 1 && loaded.notes[0].contains("no theme named 'nowhere'"), "\(loaded.notes)")
        let rooted = write("rooted.json", theme(name: "default", parent: "orphan", ""))
        do {
            _ = try FeedbackTheme.load(path: rooted, parents: [directory.path])
            Issue.record("a default theme with a parent loaded")
        } catch {
            #expect(error.problem == "the default theme can't specify a parent")
        }
    }

    /// Every field of every type feedbackd 0.8 knows: read, defaulted as feedbackd defaults it, or
    /// noted where it is not used.
    @Test func everyFieldOfEveryTypeIsRead() throws {
        let path = write("fields.json", theme(#"""
            { "name": "full", "feedbacks": [
              { "event-name": "file", "type": "Sound", "effect": "bell", "file-name": "/usr/share/sounds/x.oga" },
              { "event-name": "role", "type": "Sound", "effect": "alarm-clock-elapsed", "media-role": "alarm" } ] },
            { "name": "quiet", "feedbacks": [
              { "event-name": "rumble", "type": "VibraRumble" },
              { "event-name": "periodic", "type": "VibraPeriodic", "magnitude": 0.5, "fade-in-time": 100, "fade-in-level": 0.2 },
              { "event-name": "periodic-0.0.3", "type": "VibraPeriodic", "duration": 200, "magnitude": 32767 },
              { "event-name": "twice", "type": "VibraRumble", "duration": 100 },
              { "event-name": "twice", "type": "VibraRumble", "duration": 200 } ] }
            """#))
        let loaded = try FeedbackTheme.load(path: path, parents: [])
        #expect(loaded.feedbacks(for: "file", profile: .full).first == .soundFile(path: "/usr/share/sounds/x.oga"))
        #expect(loaded.feedbacks(for: "role", profile: .full).first == .sound(effect: "alarm-clock-elapsed", mediaRole: "alarm"))
        #expect(loaded.notes.isEmpty, "\(loaded.notes)")
        #expect(loaded.feedbacks(for: "rumble", profile: .quiet) == [.vibration(try .rumble(duration: 1_000))])
        #expect(
            loaded.feedbacks(for: "periodic", profile: .quiet)
                == [.vibration(try .periodic(duration: 1_000, magnitude: 0.5, fadeIn: 100))])
        #expect(
            loaded.feedbacks(for: "periodic-0.0.3", profile: .quiet)
                == [.vibration(try .periodic(duration: 200, magnitude: 1))])
        // One feedback per event and profile: the later entry, as feedbackd's table keeps it.
        #expect(loaded.feedbacks(for: "twice", profile: .quiet) == [.vibration(try .rumble(duration: 200))])
        for role in ["\"\"", "\"\(String(repeating: "r", count: 65))\"", "\"a\\u0007b\""] {
            let badRole = write("role.json", theme(#"{ "name": "full", "feedbacks": [ { "event-name": "e", "type": "Sound", "effect": "bell", "media-role": \#(role) } ] }"#))
            let loaded = try FeedbackTheme.load(path: badRole, parents: [])
            #expect(loaded.feedbacks(for: "e", profile: .full) == [.sound(effect: "bell")], "media-role \(role)")
            #expect(loaded.notes.count == 1 && loaded.notes[0].contains("is not used"), "\(loaded.notes)")
        }
        let relative = write("relative.json", theme(#"{ "name": "full", "feedbacks": [ { "event-name": "e", "type": "Sound", "file-name": "x.oga" } ] }"#))
        #expect(throws: FeedbackThemeError.self) { try FeedbackTheme.load(path: relative, parents: []) }
    }

    /// The device theme as feedbackd finds it: the device tree's compatibles, most specific first,
    /// each looked for in the XDG data directories in order; the theme `$device` sits between the
    /// user's theme and the default one.
    @Test func deviceThemeComesFromTheDeviceTree() throws {
        for directory in ["root", "root/sys", "root/sys/firmware", "root/sys/firmware/devicetree",
            "root/sys/firmware/devicetree/base", "one", "one/feedbackd", "one/feedbackd/themes", "two",
            "two/feedbackd", "two/feedbackd/themes", "config", "config/feedbackd", "config/feedbackd/themes"]
        {
            mkdir(self.directory.file(directory), 0o700)
        }
        write("root/sys/firmware/devicetree/base/compatible", "vendor,phone\u{0}vendor,soc\u{0}")
        #expect(FeedbackThemeLocations.deviceCompatibles(root: directory.file("root")) == ["vendor,phone", "vendor,soc"])
        #expect(FeedbackThemeLocations.deviceCompatibles(root: directory.file("none")) == [])
        let device = #"{ "name": "$device", "parent-name": "default", "profiles": [ { "name": "quiet", "feedbacks": [ { "event-name": "d", "type": "Dummy", "duration": 5 } ] } ] }"#
        write("one/feedbackd/themes/vendor,soc.json", device)
        let phone = write("two/feedbackd/themes/vendor,phone.json", device)
        let environment = [
            "XDG_DATA_DIRS": "\(directory.file("one")):\(directory.file("two"))",
            "XDG_CONFIG_HOME": directory.file("config"),
        ]
        let shipped = try #require(FeedbackThemeLocations.shippedDirectory) + "/feedbackservices.json"
        let bare = FeedbackThemeLocations.standard(environment: environment, root: directory.file("root"))
        #expect(bare.deviceTheme == phone, "the most specific compatible wins, wherever its directory is")
        #expect(bare.theme == phone)
        let plain = try FeedbackTheme.load(bare)
        #expect(plain.files == [phone, shipped])
        #expect(plain.feedbacks(for: "d", profile: .full) == [.dummy(milliseconds: 5)])
        #expect(plain.feedbacks(for: "phone-incoming-call", profile: .full).count == 2, "the default theme's")
        let user = write("config/feedbackd/themes/default.json", theme(name: "mine", parent: "$device", ""))
        let chained = try FeedbackTheme.load(FeedbackThemeLocations.standard(environment: environment, root: directory.file("root")))
        #expect(chained.files == [user, phone, shipped])
        // Without a device tree, `$device` is the default theme.
        let none = try FeedbackTheme.load(FeedbackThemeLocations.standard(environment: environment, root: directory.file("none")))
        #expect(none.files == [user, shipped])
        #expect(none.notes.isEmpty)
    }

    /// Debian's themes (feedbackd's default and feedbackd-device-themes' eight) all load, each
    /// with the default theme beneath it as feedbackd finds it.
    @Test func debiansThemesAllLoad() throws {
        let directory = "/usr/share/feedbackd/themes"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let devices = names.filter { $0.hasSuffix(".json") && $0 != "default.json" }
        guard devices.count >= 8 else {
            #expect(!runningInCI, "Debian's feedbackd-device-themes (scripts/debian-packages.txt) has 8 themes: \(names)")
            return
        }
        for name in devices + ["default.json"] {
            let path = "\(directory)/\(name)"
            let loaded = try FeedbackTheme.load(
                FeedbackThemeLocations(theme: path, parentDirectories: [directory], defaultTheme: DaemonTools.debianTheme))
            #expect(loaded.files.first == path)
            #expect(loaded.ignored.isEmpty && loaded.notes.isEmpty, "\(name): \(loaded.ignored) \(loaded.notes)")
        }
        let librem = try FeedbackTheme.load(
            FeedbackThemeLocations(theme: "\(directory)/purism,librem5.json", parentDirectories: [directory]))
        #expect(librem.files == ["\(directory)/purism,librem5.json", DaemonTools.debianTheme])
    }

    @Test func ledFeedbacksReadFeedbackdsProperties() throws {
        let path = write("leds.json", theme(#"""
            { "name": "silent", "feedbacks": [
              { "event-name": "a", "type": "Led", "color": "green", "frequency": 250, "max-brightness": 40, "priority": 7 },
              { "event-name": "b", "type": "Led", "color": "#800080", "frequency": 2000 },
              { "event-name": "c", "type": "Led", "color": "flash" },
              { "event-name": "d", "type": "Led", "color": "#0000FF" } ] }
            """#))
        let loaded = try FeedbackTheme.load(path: path, parents: [])
        #expect(loaded.feedbacks(for: "a", profile: .quiet) == [.led(color: "green", millihertz: 250, brightnessPercent: 40, priority: 7)])
        #expect(loaded.approximated.count == 2)
        #expect(loaded.approximated.allSatisfy { $0.contains("'#800080'") || $0.contains("'flash'") }, "\(loaded.approximated)")
        #expect(FeedbackTheme.ledColor("#0000FF") == (.blue, true))
        #expect(FeedbackTheme.ledColor("#00ff00") == (.green, true))
        #expect(FeedbackTheme.ledColor("#808080") == (.white, true))
        #expect(FeedbackTheme.ledColor("#800080") == (.white, false))
        #expect(FeedbackTheme.ledColor("flash") == (.white, false))
        for bad in [#""max-brightness": 0"#, #""max-brightness": 101"#, #""priority": 256"#, #""frequency": 5"#, #""frequency": 20001"#, #""frequency": -1"#] {
            let file = write("bad.json", theme(#"{ "name": "silent", "feedbacks": [ { "event-name": "a", "type": "Led", "# + bad + " } ] }"))
            #expect(throws: FeedbackThemeError.self, "\(bad)") { try FeedbackTheme.load(path: file, parents: []) }
        }
    }
}

/// feedbackservicesd's options: the built program, which answers them before it needs a bus.
struct DaemonOptionTests {
    @Test func helpSaysTheOptionsAndSignals() {
        let help = runProcess(builtProduct("feedbackservicesd"), ["--help"], environment: [])
        #expect(help.status == 0)
        #expect(help.output == ServiceCommandLine.help)
        for text in ["--idle-timeout SECONDS", "--replace", "--man", "SIGHUP", "FEEDBACK_SOUND_THEME", "DBUS_SESSION_BUS_ADDRESS"] {
            #expect(help.output.contains(text), "\(text)")
        }
        #expect(!help.output.contains("--sysfs-root"), "a test's option is not for users")
    }

    @Test func theManualPageIsMadeFromTheDeclarationsAndIsCommitted() throws {
        let page = runProcess(builtProduct("feedbackservicesd"), ["--man"], environment: [])
        #expect(page.status == 0)
        #expect(page.output == ServiceCommandLine.manPage)
        var root = "\(#filePath)"
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        let committed = try String(contentsOfFile: "\(root)/share/man/man1/feedbackservicesd.1", encoding: .utf8)
        #expect(committed == ServiceCommandLine.manPage, "run scripts/generate-docs")
        for option in ["replace", "idle\\-timeout", "version"] {
            #expect(page.output.contains("\\-\\-\(option)"), "\(option)")
        }
        // groff reads it without a warning (scripts/setup installs groff).
        let groff = runProcess("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z", "\(root)/share/man/man1/feedbackservicesd.1"])
        #expect(groff.status == 0 && groff.errors.isEmpty, "\(groff.errors)")
    }

    @Test(arguments: [
        (["--idle-timeout"], "--idle-timeout needs a number of seconds"),
        (["--idle-timeout", "soon"], "--idle-timeout needs a number of seconds"),
        (["--idle-timeout=-1"], "--idle-timeout needs a number of seconds"),
        (["--sysfs-root", "relative"], "--sysfs-root needs an absolute directory"),
        (["--bogus"], "unknown argument '--bogus'"),
    ])
    func aBadCommandLineIsAUsageError(arguments: [String], message: String) {
        guard case .usageError(let text) = ServiceCommandLine.parse(arguments) else {
            Issue.record("\(arguments) was taken")
            return
        }
        #expect(text.hasPrefix("Error: \(message)"), "\(text)")
        #expect(text.hasSuffix(ServiceCommandLine.help))
        let run = runProcess(builtProduct("feedbackservicesd"), arguments, environment: [])
        #expect(run.status == 64 && run.errors == text, "\(run.status) \(run.errors)")
    }

    @Test func optionsAreRead() {
        #expect(ServiceCommandLine.parse([]) == .run(replace: false, idleTimeout: 30, sysfsRoot: "/"))
        #expect(
            ServiceCommandLine.parse(["--replace", "--idle-timeout=2.5", "--sysfs-root", "/tmp/x"])
                == .run(replace: true, idleTimeout: 2.5, sysfsRoot: "/tmp/x"))
    }

    @Test func versionPrintsTheRelease() {
        let version = runProcess(builtProduct("feedbackservicesd"), ["--version"], environment: [])
        #expect(version.status == 0 && version.errors.isEmpty, "\(version.errors)")
        #expect(version.output == "feedbackservicesd \(Release.version)\n")
    }

    @Test func withNoBusTheErrorNamesTheAddressAndTheVariable() {
        let address = "unix:path=/nonexistent-\(getpid())/bus"
        let run = runProcess(builtProduct("feedbackservicesd"), [], environment: ["DBUS_SESSION_BUS_ADDRESS=\(address)"])
        #expect(run.status == 69)
        #expect(
            run.errors.contains("Error: cannot connect to the session bus at \(address), from DBUS_SESSION_BUS_ADDRESS: "),
            "\(run.errors)")
    }

    @Test(arguments: [["--idle-timeout"], ["--idle-timeout", "soon"], ["--idle-timeout", "-1"], ["--idle-timeout", "nan"], ["--sysfs-root"], ["--sysfs-root", "relative"], ["--loud"]])
    func badOptionsAreUsageErrors(arguments: [String]) {
        let run = runProcess(builtProduct("feedbackservicesd"), arguments, environment: [])
        #expect(run.status == 64, "\(arguments): \(run.errors)")
        #expect(run.errors.hasPrefix("Error: "), "\(run.errors)")
    }
}
