import FoundationEssentials

/// Which sound theme is active, and why.
///
/// The name comes from, in order: an explicit setting (a command-line option, an app's
/// configuration); the `FEEDBACK_SOUND_THEME` environment variable; the desktop's configured theme,
/// read from GTK's `settings.ini` (`gtk-sound-theme-name` under `[Settings]`, in
/// `$XDG_CONFIG_HOME/gtk-4.0`, `$XDG_CONFIG_HOME/gtk-3.0`, then the same under each
/// `$XDG_CONFIG_DIRS` entry, default `/etc/xdg`); and last, FeedbackServices' own theme. GSettings
/// (`org.gnome.desktop.sound theme-name`) is not read: that needs dconf, and GNOME mirrors the value
/// into GTK's setting anyway. A value that is not a valid theme name is skipped, not used, and so is
/// a `settings.ini` over 64 KiB (real ones are a few hundred bytes), which is not read at all.
package struct SoundThemeSelection: Sendable, Equatable {
    /// Where the theme name came from.
    package enum Source: String, Sendable, Equatable {
        /// Given by the caller.
        case explicit
        /// The `FEEDBACK_SOUND_THEME` environment variable.
        case environment
        /// GTK's `settings.ini` (`gtk-sound-theme-name`).
        case desktop
        /// Nothing chose one: FeedbackServices' own theme.
        case fallback
    }

    /// The name of the theme FeedbackServices ships in `SoundThemes/` and falls back to.
    package static let defaultThemeName = "feedbackservices"
    /// The environment variable that names the sound theme for FeedbackServices programs.
    package static let environmentVariable = "FEEDBACK_SOUND_THEME"

    /// The theme's internal name (its directory name).
    package let name: String
    /// Where the name came from.
    package let source: Source
    /// The settings file the name was read from, for `.desktop`.
    package let settingsFile: String?

    /// Creates a selection.
    package init(name: String, source: Source, settingsFile: String? = nil) {
        self.name = name
        self.source = source
        self.settingsFile = settingsFile
    }

    /// Chooses the theme as described above.
    /// - Throws: `SoundThemeError` with `.invalidThemeName` if `explicit` is not a valid theme name;
    ///   invalid names from the environment or a settings file are skipped instead.
    package static func current(
        explicit: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SoundThemeError) -> SoundThemeSelection {
        if let explicit {
            try validateThemeName(explicit)
            return SoundThemeSelection(name: explicit, source: .explicit)
        }
        if let value = environment[environmentVariable], isValidThemeName(value) {
            return SoundThemeSelection(name: value, source: .environment)
        }
        for file in gtkSettingsFiles(environment: environment) {
            if let value = gtkSoundThemeName(inFile: file) {
                return SoundThemeSelection(name: value, source: .desktop, settingsFile: file)
            }
        }
        return SoundThemeSelection(name: defaultThemeName, source: .fallback)
    }

    static func gtkSettingsFiles(environment: [String: String]) -> [String] {
        var configHome = environment["XDG_CONFIG_HOME"] ?? ""
        if !configHome.hasPrefix("/") {
            let home = environment["HOME"] ?? ""
            configHome = home.hasPrefix("/") ? home + "/.config" : ""
        }
        var configDirectories = (environment["XDG_CONFIG_DIRS"] ?? "").split(separator: ":").map(String.init)
            .filter { $0.hasPrefix("/") }
        if configDirectories.isEmpty { configDirectories = ["/etc/xdg"] }
        return ([configHome] + configDirectories).filter { !$0.isEmpty }.flatMap { directory in
            ["gtk-4.0", "gtk-3.0"].map { joinPath(directory, $0 + "/settings.ini") }
        }
    }

    /// `gtk-sound-theme-name` from a GTK `settings.ini`, if it is there and valid.
    static func gtkSoundThemeName(inFile path: String) -> String? {
        guard let file = KeyFile(path: path), let value = file.value("gtk-sound-theme-name", in: "Settings") else {
            return nil
        }
        return isValidThemeName(value) ? value : nil
    }

    private static func isValidThemeName(_ name: String) -> Bool {
        (try? validateThemeName(name)) != nil
    }
}

/// A freedesktop "desktop entry"-style key file (`index.theme`, GTK's `settings.ini`): `[Group]`
/// headers, `key=value` lines, `#` comments. Localised keys (`Name[de]=…`) are kept under their
/// full key and so never shadow the plain one. When a key repeats in a group, the first wins.
struct KeyFile {
    private var groups: [String: [String: String]] = [:]

    /// Reads the file at `path`; nil when there is none, or when it cannot be read as one: not a
    /// regular file, unreadable, or over `SettingsFile.sizeLimit` (64 KiB), in which case it is
    /// not read at all.
    init?(path: String) {
        guard let bytes = try? SettingsFile.read(path) else { return nil }
        self.init(text: String(decoding: bytes, as: UTF8.self))
    }

    init(text: String) {
        var group = ""
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = rawLine.trimmed
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                group = String(line.dropFirst().dropLast())
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmed
            let value = line[line.index(after: equals)...].trimmed
            if groups[group]?[key] == nil { groups[group, default: [:]][key] = value }
        }
    }

    func value(_ key: String, in group: String) -> String? {
        groups[group]?[key]
    }

    /// A comma-separated list value, entries trimmed, empty ones dropped.
    func list(_ key: String, in group: String) -> [String] {
        (value(key, in: group) ?? "").split(separator: ",")
            .map { $0.trimmed }
            .filter { !$0.isEmpty }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmed: String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
