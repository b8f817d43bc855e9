import FeedbackServices
import Glibc

/// Which feedback theme the service loads, and where parent themes are looked up. A value; safe to
/// share across threads.
///
/// The theme is `$FEEDBACK_THEME` (a file, as feedbackd reads it) when set; else the user's
/// feedbackd theme, `$XDG_CONFIG_HOME/feedbackd/themes/default.json` (`~/.config/…`), read as it
/// is; else FeedbackServices' own, `feedbackservices.json` in `shippedDirectory`; else the system's
/// feedbackd theme, `feedbackd/themes/default.json` under `$XDG_DATA_DIRS` (Debian's package
/// installs `/usr/share/feedbackd/themes/default.json`).
///
/// A `parent-name` is looked up as `<name>.json` in the user's directory, then the shipped one,
/// then each `$XDG_DATA_DIRS/feedbackd/themes`: a user theme can inherit from ours
/// (`"parent-name": "feedbackservices"`) or from the system's (`"default"`).
package struct FeedbackThemeLocations: Sendable, Equatable {
    /// The theme file to load.
    package var theme: String
    /// The directories parents are looked up in, in order.
    package var parentDirectories: [String]

    /// The name of the theme FeedbackServices ships.
    package static let shippedThemeName = "feedbackservices"

    /// Locations as given; tests use them to look only in their own trees.
    package init(theme: String, parentDirectories: [String]) {
        self.theme = theme
        self.parentDirectories = parentDirectories
    }

    /// The locations `environment` gives (see the type's description).
    package static func standard(environment: [String: String]) -> FeedbackThemeLocations {
        var user: String?
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            user = "\(config)/feedbackd/themes"
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            user = "\(home)/.config/feedbackd/themes"
        }
        var data = (environment["XDG_DATA_DIRS"] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        if data.isEmpty { data = ["/usr/local/share", "/usr/share"] }
        let system = data.map { "\($0)/feedbackd/themes" }
        let directories = [user, shippedDirectory].compactMap { $0 } + system
        if let chosen = environment["FEEDBACK_THEME"], !chosen.isEmpty {
            return FeedbackThemeLocations(theme: chosen, parentDirectories: directories)
        }
        let own: [String?] = [user.map { "\($0)/default.json" }, shippedDirectory.map { "\($0)/\(shippedThemeName).json" }]
        let candidates: [String] = own.compactMap { $0 } + system.map { "\($0)/default.json" }
        let theme = candidates.first { access($0, F_OK) == 0 } ?? candidates[candidates.count - 1]
        return FeedbackThemeLocations(theme: theme, parentDirectories: directories)
    }

    /// Where FeedbackServices' own feedback theme lives: `<prefix>/share/feedbackservices/themes`
    /// beside the installed sound theme (`scripts/install` puts both under `<prefix>/share`), else
    /// `share/feedbackservices/themes` in the source tree this was built from; nil if neither exists.
    package static var shippedDirectory: String? {
        var candidates: [String] = []
        if let sounds = SoundThemeSearchPath.installedThemesDirectory {
            candidates.append(sounds.dropLastComponent + "/feedbackservices/themes")
        }
        // #filePath is …/Sources/FeedbackDaemon/Theme/FeedbackThemeLocations.swift.
        var root = "\(#filePath)"
        for _ in 0..<4 { root = root.dropLastComponent }
        candidates.append(root + "/share/feedbackservices/themes")
        return candidates.first { access("\($0)/\(shippedThemeName).json", F_OK) == 0 }
    }
}

extension String {
    /// The path without its last component.
    fileprivate var dropLastComponent: String {
        guard let slash = lastIndex(of: "/") else { return "." }
        return slash == startIndex ? "/" : String(self[..<slash])
    }
}
