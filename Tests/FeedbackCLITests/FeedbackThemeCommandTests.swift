import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// `feedbackctl feedback-theme check`, against feedbackd's own `fbd-theme-validate` (Debian's
/// package `feedbackd`): the same verdict on our shipped theme, Debian's themes, and themes
/// written here to be valid and invalid in each way feedbackd tells.
@Suite struct FeedbackThemeCommandTests {
    static let validator = "/usr/bin/fbd-theme-validate"
    let directory = TemporaryDirectory()

    /// Both read parents from a configuration directory of the test's own.
    var environment: [String: String] {
        ["HOME": directory.path, "XDG_CONFIG_HOME": directory.file("config"), "XDG_DATA_DIRS": "/usr/share"]
    }

    func check(_ arguments: String...) -> CommandResult {
        feedbackctl(["feedback-theme", "check"] + arguments, environment: environment)
    }

    /// fbd-theme-validate's exit status and output on `path`.
    func validate(_ path: String) -> CommandResult {
        runProcess(Self.validator, [path], environment: environment.map { "\($0.key)=\($0.value)" })
    }

    @Test func shippedThemeIsValid() throws {
        let shipped = repositoryRoot + "/share/feedbackservices/themes/feedbackservices.json"
        let result = check(shipped)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == "Loading theme file at '\(shipped)'\nValidation successful.\n")
        #expect(result.errors.isEmpty, "nothing in it is played otherwise than written: \(result.errors)")
        let json = check("--json", shipped)
        #expect(json.output.contains(#""valid":true"#) && json.output.contains(#""error":null"#), "\(json.output)")
        if access(Self.validator, X_OK) == 0 || runningInCI {
            #expect(validate(shipped).status == 0)
        }
    }

    @Test(.enabled(if: runningInCI || access(validator, X_OK) == 0, "fbd-theme-validate (Debian's feedbackd) is not installed"))
    func debiansThemesGetFeedbackdsVerdict() throws {
        let themes = "/usr/share/feedbackd/themes"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: themes)) ?? []).filter { $0.hasSuffix(".json") }
        #expect(names.count >= 9, "feedbackd's default.json and feedbackd-device-themes' eight (scripts/debian-packages.txt): \(names)")
        for name in names {
            let path = "\(themes)/\(name)"
            let ours = check(path)
            let theirs = validate(path)
            #expect(ours.status == theirs.status, "\(name): ours \(ours.status) \(ours.errors), fbd-theme-validate \(theirs.status)")
            #expect(ours.output.hasPrefix("Loading theme file at '\(path)'\n"), "\(name): \(ours.output)")
            #expect(ours.output.hasSuffix("Validation successful.\n"), "\(name): \(ours.output) \(ours.errors)")
        }
        let device = check("--compatible", "purism,librem5", "\(themes)/default.json")
        #expect(device.status == 0)
        #expect(device.output.hasPrefix("Loading theme file at '\(themes)/default.json'\n"), "\(device.output)")
    }

    @Test(.enabled(if: runningInCI || access(validator, X_OK) == 0, "fbd-theme-validate (Debian's feedbackd) is not installed"))
    func writtenThemesGetFeedbackdsVerdict() throws {
        let cases: [(name: String, text: String, valid: Bool)] = [
            ("device", #"{ "name": "$device", "parent-name": "default" }"#, true),
            ("dummies", #"{ "name": "d", "profiles": [ { "name": "full", "feedbacks": [ { "type": "Dummy", "event-name": "e", "duration": 10 } ] }, { "name": "silent" } ] }"#, true),
            ("orphan", #"{ "name": "orphan", "parent-name": "nowhere" }"#, true),
            ("unknown-type", #"{ "name": "u", "profiles": [ { "name": "full", "feedbacks": [ { "type": "Hologram", "event-name": "e" } ] } ] }"#, true),
            // Our own field: feedbackd (json-glib) skips a member that is no property of the feedback.
            ("pattern", #"{ "name": "p", "profiles": [ { "name": "full", "feedbacks": [ { "type": "Sound", "event-name": "e", "effect": "bell", "pattern": "nowhere.json" } ] } ] }"#, true),
            ("other-profile", #"{ "name": "o", "profiles": [ { "name": "loud" } ] }"#, true),
            ("no-name", #"{ "parent-name": "default" }"#, false),
            ("empty-name", #"{ "name": "" }"#, false),
            ("default-with-parent", #"{ "name": "default", "parent-name": "other" }"#, false),
            ("not-json", "garbage", false),
        ]
        for (name, text, valid) in cases {
            let path = directory.write(Array(text.utf8), to: "\(name).json")
            let theirs = validate(path)
            #expect((theirs.status == 0) == valid, "fbd-theme-validate on \(name): \(theirs.status) \(theirs.errors)")
            let ours = check(path)
            #expect(ours.status == theirs.status, "\(name): ours \(ours.status) \(ours.errors), fbd-theme-validate \(theirs.status)")
            if valid {
                #expect(ours.output.hasSuffix("Validation successful.\n"), "\(name): \(ours.output)")
            } else {
                #expect(ours.errors.hasPrefix("Error: Validation of '\(path)' failed: "), "\(name): \(ours.errors)")
                let json = check("--json", path)
                #expect(json.status == 1 && json.output.contains(#""valid":false"#), "\(name): \(json.output)")
            }
        }
        let missing = directory.file("missing.json")
        #expect(check(missing).status == validate(missing).status)
        #expect(check(directory.file("orphan.json")).errors.contains("Warning: "), "the fallback to default is said")
    }

    @Test func usageErrorsAreUsageErrors() {
        #expect(feedbackctl("feedback-theme", "check").status == 64)
        #expect(feedbackctl("feedback-theme", "validate", "x.json").status == 64)
        #expect(feedbackctl("feedback-theme", "check", "--compatible", "../x", "x.json").status == 64)
        let help = feedbackctl("feedback-theme", "--help")
        #expect(help.status == 0 && help.output.contains("fbd-theme-validate"), "\(help.output)")
        #expect(help.output.contains("'feedbackctl theme'"), "says it is not the sound theme")
    }
}
