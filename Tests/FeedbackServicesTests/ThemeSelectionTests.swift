import FeedbackServices
import Testing

/// Choosing the theme, and the XDG environment variables that place the base directories.
struct ThemeSelectionTests {
    /// An app names its theme on the manager; a name no theme can have fails the play and says so.
    @Test func aManagersSoundThemeIsTheOneItsPlaysLookIn() async throws {
        let manager = FeedbackManager(
            registry: SoundRegistry(), audioOutput: FileOutput(path: "/dev/null"), vibrator: .none,
            settings: FeedbackSettings(path: nil), soundTheme: "freedesktop")
        manager.profileOverride = .full
        #expect(manager.soundTheme == "freedesktop")
        manager.soundTheme = "../elsewhere"
        let result = await manager.play(1007, type: .audioOnly)
        guard case .failed(.invalidName(let error)) = result.sound else {
            Issue.record("played \(result.sound) from an invalid theme name")
            return
        }
        #expect(error.description.contains("../elsewhere"), "\(error)")
        manager.soundTheme = nil
        #expect(manager.soundTheme == nil)
    }

    @Test func explicitThenEnvironmentThenDesktopThenOurs() throws {
        let tree = ThemeTree()
        let config = tree.base("config")
        tree.file("gtk-3.0/settings.ini", in: config, contents: "[Settings]\ngtk-sound-theme-name = desktop-theme\n")
        var environment = ["XDG_CONFIG_HOME": config, "FEEDBACK_SOUND_THEME": "env-theme"]

        let explicit = try SoundThemeSelection.current(explicit: "given", environment: environment)
        #expect(explicit == SoundThemeSelection(name: "given", source: .explicit))

        #expect(try SoundThemeSelection.current(environment: environment).name == "env-theme")
        #expect(try SoundThemeSelection.current(environment: environment).source == .environment)

        environment["FEEDBACK_SOUND_THEME"] = nil
        let desktop = try SoundThemeSelection.current(environment: environment)
        #expect(desktop.name == "desktop-theme")
        #expect(desktop.source == .desktop)
        #expect(desktop.settingsFile == config + "/gtk-3.0/settings.ini")

        let none = try SoundThemeSelection.current(environment: ["XDG_CONFIG_HOME": tree.base("empty"), "XDG_CONFIG_DIRS": tree.base("empty")])
        #expect(none == SoundThemeSelection(name: "feedbackservices", source: .fallback))
    }

    @Test func gtk4SettingsComeBeforeGtk3AndUserBeforeSystem() throws {
        let tree = ThemeTree()
        let user = tree.base("user")
        let system = tree.base("system")
        tree.file("gtk-3.0/settings.ini", in: system, contents: "[Settings]\ngtk-sound-theme-name=system3\n")
        let environment = ["XDG_CONFIG_HOME": user, "XDG_CONFIG_DIRS": system]
        #expect(try SoundThemeSelection.current(environment: environment).name == "system3")
        tree.file("gtk-3.0/settings.ini", in: user, contents: "# comment\n[Other]\ngtk-sound-theme-name=wrong-group\n[Settings]\ngtk-sound-theme-name=user3\n")
        #expect(try SoundThemeSelection.current(environment: environment).name == "user3")
        tree.file("gtk-4.0/settings.ini", in: user, contents: "[Settings]\ngtk-sound-theme-name=user4\n")
        #expect(try SoundThemeSelection.current(environment: environment).name == "user4")
    }

    @Test func invalidConfiguredNamesAreSkippedAndInvalidExplicitOnesRefused() throws {
        let tree = ThemeTree()
        let config = tree.base("config")
        tree.file("gtk-3.0/settings.ini", in: config, contents: "[Settings]\ngtk-sound-theme-name=../../etc\n")
        let environment = ["XDG_CONFIG_HOME": config, "XDG_CONFIG_DIRS": config, "FEEDBACK_SOUND_THEME": "has space"]
        #expect(try SoundThemeSelection.current(environment: environment).source == .fallback)
        for name in ["", "a/b", "..", "a,b", "a b", "thème", "x\u{1}"] {
            do {
                _ = try SoundThemeSelection.current(explicit: name, environment: [:])
                Issue.record("accepted the theme name \(name)")
            } catch {
                #expect(error.reason == .invalidThemeName)
            }
        }
    }

    @Test func xdgDataDirectoriesWithDefaults() {
        #expect(
            SoundThemeSearchPath.xdgDirectories(environment: ["HOME": "/home/u"])
                == ["/home/u/.local/share/sounds", "/usr/local/share/sounds", "/usr/share/sounds"])
        #expect(
            SoundThemeSearchPath.xdgDirectories(environment: [
                "HOME": "/home/u", "XDG_DATA_HOME": "/data/home", "XDG_DATA_DIRS": "/a:/b/",
            ]) == ["/data/home/sounds", "/a/sounds", "/b/sounds"])
        // Empty and relative values are invalid per the XDG spec: defaults apply, relative entries drop.
        #expect(
            SoundThemeSearchPath.xdgDirectories(environment: [
                "HOME": "/home/u", "XDG_DATA_HOME": "relative", "XDG_DATA_DIRS": "",
            ]) == ["/home/u/.local/share/sounds", "/usr/local/share/sounds", "/usr/share/sounds"])
        #expect(
            SoundThemeSearchPath.xdgDirectories(environment: [
                "HOME": "/home/u", "XDG_DATA_DIRS": "rel:/x::/x:/usr/share",
            ]) == ["/home/u/.local/share/sounds", "/x/sounds", "/usr/share/sounds"])
        // Without a HOME there is no user directory.
        #expect(SoundThemeSearchPath.xdgDirectories(environment: [:]) == ["/usr/local/share/sounds", "/usr/share/sounds"])
    }

    @Test func standardPathEndsWithTheShippedThemeFromTheSourceTree() throws {
        let source = try #require(SoundThemeSearchPath.sourceTreeThemesDirectory)
        #expect(source == repositoryThemesDirectory)
        let path = SoundThemeSearchPath.standard(environment: ["HOME": "/home/u", "XDG_DATA_DIRS": "/a"])
        #expect(path.baseDirectories.first == "/home/u/.local/share/sounds")
        #expect(path.baseDirectories[1] == "/a/sounds")
        #expect(path.baseDirectories.last == SoundThemeSearchPath.shippedThemesDirectory)
    }

    @Test func installedThemeIsFoundBesideTheExecutable() {
        let tree = ThemeTree()
        let prefix = tree.base("prefix")
        let executable = prefix + "/bin/feedbackctl"
        #expect(SoundThemeSearchPath.installedThemesDirectory(forExecutable: executable) == nil)
        tree.theme("feedbackservices", in: prefix + "/share/sounds")
        #expect(SoundThemeSearchPath.installedThemesDirectory(forExecutable: executable) == prefix + "/share/sounds")
    }

    @Test func messagesLocaleFollowsPosixPrecedence() {
        let all = ["LC_ALL": "fr_FR.UTF-8", "LC_MESSAGES": "de_DE", "LANG": "en_GB"]
        #expect(SoundThemeResolver.messagesLocale(environment: all) == "fr_FR.UTF-8")
        #expect(SoundThemeResolver.messagesLocale(environment: ["LC_ALL": "", "LC_MESSAGES": "de_DE", "LANG": "en_GB"]) == "de_DE")
        #expect(SoundThemeResolver.messagesLocale(environment: ["LANG": "en_GB"]) == "en_GB")
        #expect(SoundThemeResolver.messagesLocale(environment: [:]) == nil)
    }

    @Test func standardResolverUsesTheEnvironment() throws {
        let tree = ThemeTree()
        let data = tree.base("data")
        tree.theme("mine", in: data + "/sounds")
        let file = tree.file("sounds/mine/stereo/de/hello.wav", in: data)
        let environment = [
            "HOME": tree.root, "XDG_DATA_HOME": data, "XDG_DATA_DIRS": tree.base("nothing"),
            "XDG_CONFIG_HOME": tree.base("nothing"), "XDG_CONFIG_DIRS": tree.base("nothing"),
            "FEEDBACK_SOUND_THEME": "mine", "LANG": "de_AT.UTF-8",
        ]
        let resolver = try SoundThemeResolver.standard(environment: environment)
        #expect(resolver.theme.name == "mine")
        #expect(resolver.locale == "de_AT.UTF-8")
        #expect(resolvedPath(try resolver.resolve("hello")) == file)
    }
}
