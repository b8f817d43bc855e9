import Foundation
import Glibc
import FeedbackTestSupport
import Testing

@testable import FeedbackCLI

/// `feedbackctl profile`, run as the built binary so that its environment (XDG_CONFIG_HOME,
/// FEEDBACKSERVICES_PROFILE) is its own.
@Suite struct ProfileCommandTests {
    let config = "/tmp/feedbackctl-profile-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    func profile(_ arguments: String..., override: String? = nil) -> CommandResult {
        var environment = ["XDG_CONFIG_HOME=\(config)"]
        if let override { environment.append("FEEDBACKSERVICES_PROFILE=\(override)") }
        return runProcess(feedbackctlBinary, ["profile"] + arguments, environment: environment)
    }

    @Test func showsStoresAndIsOverriddenByTheEnvironment() throws {
        defer { try? FileManager.default.removeItem(atPath: config) }
        #expect(profile().output == "full\n")
        let stored = profile("quiet")
        #expect(stored.status == 0 && stored.output == "quiet\n")
        let file = try String(contentsOfFile: config + "/feedbackservices/settings", encoding: .utf8)
        #expect(file == "profile=quiet\n")
        let json = profile("--json")
        #expect(json.output.contains("\"profile\":\"quiet\"") && json.output.contains("\"source\":\"file\""), "\(json.output)")
        #expect(json.output.contains("\"version\""))
        let overridden = profile(override: "silent")
        #expect(overridden.output.hasPrefix("silent (from FEEDBACKSERVICES_PROFILE"))
    }

    @Test func aWrongNameIsAUsageError() {
        let result = feedbackctl("profile", "loud")
        #expect(result.status == 64)
        #expect(result.errors.contains("'loud' is not a profile"))
        #expect(feedbackctl("profile", "quiet", "full").status == 64)
    }

    @Test func helpDescribesTheFile() {
        let help = feedbackctl("profile", "--help")
        #expect(help.status == 0)
        #expect(help.output.contains("feedbackservices/settings") && help.output.contains("FEEDBACKSERVICES_PROFILE"))
    }
}
