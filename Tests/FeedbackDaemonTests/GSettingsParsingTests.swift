import FeedbackServices
import Testing

@testable import FeedbackDaemon

/// What the service reads of GSettings, offline and exact: GVariant text as `gsettings` prints it,
/// feedbackd's keys, which dconf writes concern us, app id munging, the level matrix with the
/// per-app level, and the haptic cap.
@Suite struct GSettingsParsingTests {
    @Test func gvariantTextAsGsettingsPrintsIt() {
        #expect(GVariantText.string("'quiet'") == "quiet")
        #expect(GVariantText.string("\"it's\"") == "it's")
        #expect(GVariantText.string("'a\\\\b\\'c\\u00e9'") == "a\\b'cé")
        #expect(GVariantText.string("'open") == nil)
        #expect(GVariantText.string("'a' 'b'") == nil)
        #expect(GVariantText.strings("['a', 'b.c']") == ["a", "b.c"])
        #expect(GVariantText.strings("@as []") == [])
        #expect(GVariantText.strings("['a' 'b']") == nil)
        #expect(GVariantText.strings("['a', 'b']", limit: 1) == nil)
        #expect(GVariantText.boolean("true") == true)
        #expect(GVariantText.boolean("yes") == nil)
        #expect(GVariantText.double("0.5") == 0.5)
        #expect(GVariantText.double("nan") == nil)
    }

    @Test func feedbackdsKeysAreReadAndBadValuesKeepTheirDefaults() {
        let settings = FeedbackdSettings(
            listing: """
                org.sigxcpu.feedbackd allow-important ['org.example.Alarm', "it's"]
                org.sigxcpu.feedbackd max-haptic-strength 1.5
                org.sigxcpu.feedbackd prefer-flash true
                org.sigxcpu.feedbackd profile 'quiet'
                org.sigxcpu.feedbackd theme 'default'
                org.other.schema profile 'silent'
                """)
        #expect(settings.installed)
        #expect(settings.profile == .quiet)
        #expect(settings.allowImportant == ["org.example.Alarm", "it's"])
        #expect(settings.maxHapticStrength == 1)
        #expect(settings.preferFlash)
        let bad = FeedbackdSettings(listing: "org.sigxcpu.feedbackd profile 'loud'\norg.sigxcpu.feedbackd allow-important [")
        #expect(bad.profile == .full)
        #expect(bad.allowImportant == FeedbackService.defaultImportantApps)
        #expect(!FeedbackdSettings().installed)
    }

    @Test func dconfWritesAreSortedByWhatTheyTouch() {
        #expect(DconfChange(prefix: "/org/sigxcpu/feedbackd/profile", changes: [""]).feedbackd)
        let app = DconfChange(prefix: "/org/sigxcpu/feedbackd/application/org-gnome-clocks/profile", changes: [""])
        #expect(app.apps == ["org-gnome-clocks"] && !app.feedbackd && !app.allApps)
        let several = DconfChange(prefix: "/org/sigxcpu/feedbackd/", changes: ["profile", "application/a/profile"])
        #expect(several.feedbackd && several.apps == ["a"])
        let reset = DconfChange(prefix: "/org/", changes: [""])
        #expect(reset.feedbackd && reset.allApps && reset.desktopSound)
        #expect(DconfChange(prefix: "/org/gnome/desktop/sound/event-sounds", changes: [""]).desktopSound)
        #expect(DconfChange(prefix: "/org/gnome/desktop/interface/", changes: ["font-name"]).isEmpty)
        #expect(DconfChange(prefix: "/org/sigxcpu/feedbackdx/profile", changes: [""]).isEmpty)
    }

    @Test func appIDsAreMungedAsFeedbackdDoes() {
        #expect(FeedbackdSettings.munge("org.gnome.Clocks") == "org-gnome-clocks")
        #expect(FeedbackdSettings.munge("sm.puri.Chatty-Daemon_2") == "sm-puri-chatty-daemon-2")
        #expect(FeedbackdSettings.munge("Ünï") == "-n-")
    }

    @Test func theLevelIsTheLowestOfProfileAppAndHintUnlessImportant() {
        let all: [FeedbackProfile] = [.full, .quiet, .silent]
        for profile in all {
            for app in all {
                for hint in all {
                    let lowest = [profile, app, hint].contains(.silent) ? FeedbackProfile.silent
                        : [profile, app, hint].contains(.quiet) ? .quiet : .full
                    #expect(FeedbackRunner.level(profile: profile, app: app, hint: hint, important: false) == lowest)
                    #expect(FeedbackRunner.level(profile: profile, app: app, hint: hint, important: true) == hint)
                }
            }
        }
    }

    @Test func maxHapticStrengthCapsEveryStep() throws {
        let pattern = try VibrationPattern(
            steps: [.init(duration: 100, intensity: 1), .init(duration: 50, intensity: 0), .init(duration: 80, intensity: 0.3)],
            repeatIndex: 1)
        let capped = FeedbackRunner.capped(pattern, at: 0.5)
        #expect(capped.steps.map(\.intensity) == [0.5, 0, 0.3])
        #expect(capped.steps.map(\.duration) == [100, 50, 80])
        #expect(capped.repeatIndex == 1)
        #expect(FeedbackRunner.capped(pattern, at: 1) == pattern)
    }
}
