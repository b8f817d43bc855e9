import FeedbackServices
import Glibc

/// The desktop's sound switches from GSettings: `org.gnome.desktop.sound event-sounds` (false: no
/// event sounds) and `theme-name` (the sound theme). A value; safe to share across threads.
///
/// Read with the `gsettings` tool (`GSettingsTool`: `gsettings list-recursively
/// org.gnome.desktop.sound`) at start, when dconf says a key under it changed, and at each SIGHUP.
/// No `gsettings`, no schema, or a tool that does not answer in time: the defaults.
package struct DesktopSoundSettings: Sendable, Equatable {
    /// Whether event sounds play (`event-sounds`; true when unknown).
    package var eventSounds = true
    /// The sound theme the desktop chose (`theme-name`); nil when it is unknown or the schema's
    /// default, `freedesktop`, which means no choice was made (our own theme, which falls back to
    /// freedesktop's sounds, is used then, as for `feedbackctl`).
    package var themeName: String?

    /// The schema read.
    package static let schema = "org.gnome.desktop.sound"

    /// Defaults: event sounds on, no theme chosen.
    package init() {}

    /// Settings as `gsettings list-recursively` printed them (`SCHEMA KEY VALUE` lines).
    package init(listing: String) {
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard fields.count == 3, fields[0] == Self.schema else { continue }
            switch fields[1] {
            case "event-sounds": eventSounds = fields[2] != "false"
            case "theme-name":
                let name = String(fields[2].dropFirst().dropLast())
                let quoted = fields[2].hasPrefix("'") && fields[2].hasSuffix("'")
                if quoted, name != "freedesktop", (try? SoundThemeSelection.current(explicit: name, environment: [:])) != nil {
                    themeName = name
                }
            default: break
            }
        }
    }

    /// Reads the settings with `gsettings` in `environment` (its `PATH`, `GSETTINGS_BACKEND`,
    /// `XDG_CONFIG_HOME`, …); the defaults, and a line saying why, when that fails.
    package static func read(environment: [String: String]) -> (settings: DesktopSoundSettings, problem: String?) {
        switch GSettingsTool.listRecursively(schema, environment: environment) {
        case .success(let output): return (DesktopSoundSettings(listing: output), nil)
        case .failure(let problem): return (DesktopSoundSettings(), problem.message)
        }
    }
}
