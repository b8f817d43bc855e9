import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

/// The feedback profile: where it is read from, when it is re-read, and what it allows.
@Suite struct ProfileTests {
    let directory = TemporaryDirectory()

    var environment: [String: String] { ["XDG_CONFIG_HOME": directory.path, "HOME": "/nonexistent"] }
    var settingsPath: String { directory.file("feedbackservices/settings") }

    func writeSettings(_ text: String) {
        mkdir(directory.file("feedbackservices"), 0o755)
        _ = FileManager.default.createFile(atPath: settingsPath, contents: Data(text.utf8))
    }

    @Test func pathFollowsXDGConfigHomeThenHome() {
        #expect(FeedbackSettings.defaultPath(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"]) == "/c/feedbackservices/settings")
        #expect(FeedbackSettings.defaultPath(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/h"]) == "/h/.config/feedbackservices/settings")
        #expect(FeedbackSettings.defaultPath(environment: ["HOME": "/h"]) == "/h/.config/feedbackservices/settings")
        #expect(FeedbackSettings.defaultPath(environment: [:]) == nil)
    }

    @Test func withoutAFileTheProfileIsFull() {
        #expect(FeedbackSettings(environment: environment).profile == .full)
        #expect(FeedbackSettings(path: nil).profile == .full)
    }

    @Test func theFileSetsTheProfile() {
        writeSettings("# alerts\ntheme=x\nprofile = Quiet \n")
        #expect(FeedbackSettings(environment: environment).profile == .quiet)
    }

    @Test func unknownValuesAreIgnored() {
        writeSettings("profile=loud\n")
        #expect(FeedbackSettings(environment: environment).profile == .full)
        writeSettings("#profile=silent\n")
        #expect(FeedbackSettings(environment: environment).profile == .full)
    }

    @Test func theEnvironmentOverridesTheFile() {
        writeSettings("profile=quiet\n")
        var environment = environment
        environment[FeedbackSettings.environmentVariable] = "silent"
        #expect(FeedbackSettings(environment: environment).profile == .silent)
        environment[FeedbackSettings.environmentVariable] = "nonsense"
        #expect(FeedbackSettings(environment: environment).profile == .quiet)
    }

    @Test func aChangeAppliesWithoutARestart() {
        let settings = FeedbackSettings(environment: environment)
        #expect(settings.profile == .full)
        writeSettings("profile=quiet\n")
        #expect(settings.profile == .quiet)
        // Same size, rewritten in place: the modification time tells.
        usleep(20_000)
        writeSettings("profile=loud!\n")
        #expect(settings.profile == .full)
        // Replaced by a rename, as editors and `store` do.
        try? "profile=silent\n".write(toFile: directory.file("new"), atomically: false, encoding: .utf8)
        rename(directory.file("new"), settingsPath)
        #expect(settings.profile == .silent)
        unlink(settingsPath)
        #expect(settings.profile == .full)
    }

    @Test func storeKeepsOtherLines() throws {
        writeSettings("theme=x\nprofile=full\n")
        let settings = FeedbackSettings(environment: environment)
        try settings.store(.silent)
        #expect(settings.profile == .silent)
        let text = try String(contentsOfFile: settingsPath, encoding: .utf8)
        #expect(text == "theme=x\nprofile=silent\n")
    }

    @Test func storeCreatesTheDirectory() throws {
        let settings = FeedbackSettings(path: directory.file("a/b/settings"))
        try settings.store(.quiet)
        #expect(settings.profile == .quiet)
    }

    /// Storing is a file's failure, never a sound's: each reason names the path.
    @Test func storeFailuresAreFileErrors() throws {
        let nowhere = #expect(throws: FileError.self) { try FeedbackSettings(path: nil).store(.quiet) }
        #expect(nowhere?.reason == .cannotCreate && nowhere?.path == "feedback settings")

        mkdir(directory.file("feedbackservices"), 0o755)
        mkdir(settingsPath, 0o755)
        let directoryThere = #expect(throws: FileError.self) { try FeedbackSettings(path: settingsPath).store(.quiet) }
        #expect(directoryThere?.reason == .notARegularFile && directoryThere?.path == settingsPath)
        rmdir(settingsPath)

        writeSettings(String(repeating: "#\n", count: 1 << 20))
        let huge = #expect(throws: FileError.self) { try FeedbackSettings(path: settingsPath).store(.quiet) }
        #expect(huge?.reason == .tooLarge(size: 2 << 20, limit: SettingsFile.sizeLimit))

        let blocked = directory.file("file")
        _ = FileManager.default.createFile(atPath: blocked, contents: Data())
        let underAFile = #expect(throws: FileError.self) { try FeedbackSettings(path: blocked + "/sub/settings").store(.quiet) }
        #expect(underAFile?.reason == .cannotCreate && underAFile?.errno == ENOTDIR && underAFile?.path == blocked + "/sub")
        #expect(underAFile?.description == "\(blocked)/sub: could not be written (Not a directory)")
    }

    @Test func aManagerOverrideWins() {
        writeSettings("profile=silent\n")
        let manager = FeedbackManager(
            registry: SoundRegistry(), vibrator: .none, settings: FeedbackSettings(environment: environment))
        #expect(manager.profile == .silent)
        manager.profileOverride = .full
        #expect(manager.profile == .full)
        manager.profileOverride = nil
        #expect(manager.profile == .silent)
    }

    @Test func profileMeanings() {
        #expect(FeedbackProfile.full.allowsSound && FeedbackProfile.full.allowsVibration)
        #expect(!FeedbackProfile.quiet.allowsSound && FeedbackProfile.quiet.allowsVibration)
        #expect(!FeedbackProfile.silent.allowsSound && !FeedbackProfile.silent.allowsVibration)
    }

    /// The decision for every profile × type × vibrator present/absent (18 cases); the manager
    /// tests check the same cases on the recorded output, the VM cases with a real vibrator.
    @Test(arguments: FeedbackProfile.allCases, FeedbackType.allCases)
    func decisionMatrix(profile: FeedbackProfile, type: FeedbackType) {
        let missing = HapticsError(.noDevice, source: "/dev/input")
        for vibrator in [nil, missing] {
            let plan = FeedbackPlan.decide(type: type, profile: profile, hasSound: true, vibrator: vibrator)
            let wantsSound = type != .vibrateOnly
            let wantsVibration = type != .audioOnly
            let expectedSound: SoundOutcome? =
                !wantsSound ? .notRequested : profile == .full ? nil : .silencedByProfile(profile)
            let expectedVibration: VibrationOutcome? =
                !wantsVibration ? .notRequested
                : profile == .silent ? .silencedByProfile(profile)
                : vibrator.map { .noVibrator($0) } ?? nil
            #expect(plan.sound == expectedSound, "\(profile) \(type) vibrator \(vibrator == nil)")
            #expect(plan.vibration == expectedVibration, "\(profile) \(type) vibrator \(vibrator == nil)")
        }
    }

    @Test func spelledOutCases() {
        let missing = HapticsError(.noDevice, source: "/dev/input")
        // Audio-and-vibrate in quiet: vibrate only.
        #expect(FeedbackPlan.decide(type: .audioAndVibrate, profile: .quiet, hasSound: true, vibrator: nil)
            == FeedbackPlan(sound: .silencedByProfile(.quiet), vibration: nil))
        // No vibrator: sound only in full…
        #expect(FeedbackPlan.decide(type: .audioAndVibrate, profile: .full, hasSound: true, vibrator: missing)
            == FeedbackPlan(sound: nil, vibration: .noVibrator(missing)))
        // …nothing in quiet.
        #expect(FeedbackPlan.decide(type: .audioAndVibrate, profile: .quiet, hasSound: true, vibrator: missing)
            == FeedbackPlan(sound: .silencedByProfile(.quiet), vibration: .noVibrator(missing)))
        // kSystemSoundID_Vibrate vibrates even as "audio only", but not in silent.
        #expect(FeedbackPlan.decide(type: .audioOnly, profile: .full, hasSound: false, vibrator: nil)
            == FeedbackPlan(sound: .notRequested, vibration: nil))
        #expect(FeedbackPlan.decide(type: .audioOnly, profile: .silent, hasSound: false, vibrator: nil)
            == FeedbackPlan(sound: .notRequested, vibration: .silencedByProfile(.silent)))
        #expect(AlertSound.id(kSystemSoundID_Vibrate).vibratesOnly)
        #expect(AlertSound.id(1011).vibratesOnly)
        #expect(!AlertSound.id(1007).vibratesOnly)
        #expect(!AlertSound.id(4097).vibratesOnly)
        #expect(!AlertSound.event("bell").vibratesOnly)
    }
}
