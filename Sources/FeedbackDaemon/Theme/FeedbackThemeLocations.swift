import FeedbackServices
import Glibc

/// Which feedback theme the service loads, and where parent themes are found. A value; safe to
/// share across threads.
///
/// The theme is `$FEEDBACK_THEME` (a file, as feedbackd reads it) when set; else the user's
/// feedbackd theme named by GSettings' `org.sigxcpu.feedbackd theme` (`default` unless set),
/// `$XDG_CONFIG_HOME/feedbackd/themes/<name>.json` (`~/.config/…`), read as it is (feedbackd's
/// `fbd_theme_expander_find_user_theme_path`; a name other than `default` is looked for only
/// there, as feedbackd looks for it, and one not found there is said in `problem` and the
/// `default` choice applies); else the theme named `default` (see `resolve`): the device theme when there is one, whose
/// parent is then the default theme, FeedbackServices' own `feedbackservices.json` in
/// `shippedDirectory`, or else the system's feedbackd theme, `feedbackd/themes/default.json`
/// under `$XDG_DATA_DIRS` (Debian's package installs `/usr/share/feedbackd/themes/default.json`).
///
/// The device theme, named `$device`, is feedbackd's (`fbd_theme_expander_find_device_theme_path`):
/// for each of the device tree's compatibles (`<root>/sys/firmware/devicetree/base/compatible`,
/// NUL-separated, the most specific first), the first `feedbackd/themes/<compatible>.json` in the
/// `$XDG_DATA_DIRS` directories, in their order (feedbackd looks in the system data directories
/// only, not in `$XDG_DATA_HOME`); the first compatible with a theme wins. Debian's package
/// `feedbackd-device-themes` installs them in `/usr/share/feedbackd/themes`. Its `parent-name`
/// is `default`, so it sits between the user's theme (whose parent is `$device` or `default`) and
/// the default theme.
package struct FeedbackThemeLocations: Sendable, Equatable {
    /// The theme file to load.
    package var theme: String
    /// The directories parents are looked up in, in order: the user's, the shipped one, then each
    /// `$XDG_DATA_DIRS/feedbackd/themes`.
    package var parentDirectories: [String]
    /// The device theme's file, if the device tree names a compatible that has one.
    package var deviceTheme: String?
    /// The file the name `default` means after the device theme; nil: `default.json` in
    /// `parentDirectories`.
    package var defaultTheme: String?
    /// The device tree's compatibles, the most specific first (none off device-tree machines).
    package var compatibles: [String]
    /// Why the theme the settings named is not the one loaded, if it is not.
    package var problem: String?

    /// The name of the theme FeedbackServices ships.
    package static let shippedThemeName = "feedbackservices"
    /// The name feedbackd gives the theme every chain ends in.
    package static let defaultName = "default"
    /// The name feedbackd gives the device theme.
    package static let deviceName = "$device"
    /// The longest compatible list read, in bytes (a device tree's is a few dozen).
    static let maximumCompatiblesSize = 4_096

    /// Locations as given; tests use them to look only in their own trees.
    package init(
        theme: String, parentDirectories: [String], deviceTheme: String? = nil, defaultTheme: String? = nil,
        compatibles: [String] = []
    ) {
        self.theme = theme
        self.parentDirectories = parentDirectories
        self.deviceTheme = deviceTheme
        self.defaultTheme = defaultTheme
        self.compatibles = compatibles
    }

    /// The locations `environment` and the theme name `named` (GSettings' `theme`) give, with the
    /// device tree under `root` (`/`; tests give a tree of their own) (see the type's description).
    package static func standard(
        environment: [String: String], root: String = "/", named: String = defaultName
    ) -> FeedbackThemeLocations {
        standard(environment: environment, compatibles: deviceCompatibles(root: root), named: named)
    }

    /// The locations `environment` and the theme name `named` give on a device of these
    /// `compatibles`, the most specific first (`fbd-theme-validate --compatible` names one).
    package static func standard(
        environment: [String: String], compatibles: [String], named: String = defaultName
    ) -> FeedbackThemeLocations {
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
        let device = compatibles.lazy.compactMap { (compatible: String) -> String? in
            system.map { "\($0)/\(compatible).json" }.first { access($0, F_OK) == 0 }
        }.first
        let shipped = shippedDirectory.map { "\($0)/\(shippedThemeName).json" }
        let systemDefault = system.map { "\($0)/\(defaultName).json" }
        let fallback = ([shipped].compactMap { $0 } + systemDefault).first { access($0, F_OK) == 0 }
        var locations = FeedbackThemeLocations(
            theme: "", parentDirectories: directories, deviceTheme: device, defaultTheme: fallback,
            compatibles: compatibles)
        if let chosen = environment["FEEDBACK_THEME"], !chosen.isEmpty {
            locations.theme = chosen
            return locations
        }
        if named != defaultName {
            let valid = !named.isEmpty && !named.contains("/") && named != "." && named != ".."
                && named.utf8.count <= FeedbackTheme.maximumStringLength
            if valid, let own = user.map({ "\($0)/\(named).json" }), access(own, F_OK) == 0 {
                locations.theme = own
                return locations
            }
            let shown = String(named.prefix(FeedbackTheme.maximumStringLength)).debugDescription
            locations.problem =
                valid
                ? "no feedback theme \(shown) in \(user ?? "the user's configuration (no HOME)"): the default one is used"
                : "\(shown) is not a theme name: the default theme is used"
        }
        if let own = user.map({ "\($0)/\(defaultName).json" }), access(own, F_OK) == 0 {
            locations.theme = own
        } else {
            locations.theme = device ?? fallback ?? systemDefault[systemDefault.count - 1]
        }
        return locations
    }

    /// What a `parent-name` names.
    package enum Resolution: Equatable, Sendable {
        /// This file.
        case found(String)
        /// No theme has the name; the default theme, this file, stands in for it (feedbackd's
        /// fallback).
        case fallback(String)
        /// Not a name: empty, `.`, `..`, or with a `/`.
        case invalid
        /// Neither the name nor a default theme is found.
        case missing
    }

    /// The file a `parent-name` names, skipping the files `excluded` says are in the chain
    /// already, as feedbackd's `fbd_theme_expander_find_theme_path` finds it: `$device` and
    /// `default` are the device theme if it is not in the chain yet; `$device` is otherwise
    /// `default`, which is `defaultTheme` (else `default.json` in `parentDirectories`); any other
    /// name is `<name>.json` in the first of `parentDirectories` that has one; a name found
    /// nowhere falls back to `default`.
    package func resolve(_ name: String, excluding excluded: (String) -> Bool) -> Resolution {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else { return .invalid }
        if name == Self.deviceName || name == Self.defaultName, let deviceTheme, !excluded(deviceTheme) {
            return .found(deviceTheme)
        }
        if name != Self.deviceName, name != Self.defaultName, let path = locate(name, excluding: excluded) {
            return .found(path)
        }
        let fallback = defaultTheme.flatMap { excluded($0) ? nil : $0 } ?? locate(Self.defaultName, excluding: excluded)
        guard let fallback else { return .missing }
        return name == Self.defaultName || name == Self.deviceName ? .found(fallback) : .fallback(fallback)
    }

    /// `<name>.json` in the first of `parentDirectories` that has one not `excluded`.
    private func locate(_ name: String, excluding excluded: (String) -> Bool) -> String? {
        parentDirectories.lazy.map { "\($0)/\(name).json" }.first { access($0, F_OK) == 0 && !excluded($0) }
    }

    /// The device tree's compatibles under `root`, the most specific first; none when the file is
    /// missing (no device tree) or unreadable. Only names that can be a file name are kept.
    package static func deviceCompatibles(root: String) -> [String] {
        let base = root.hasSuffix("/") ? String(root.dropLast()) : root
        let path = base + "/sys/firmware/devicetree/base/compatible"
        guard let bytes = try? AtomicFile.read(path, limit: maximumCompatiblesSize) else { return [] }
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.filter { name in
            !name.isEmpty && !name.contains("/") && name != "." && name != ".."
                && name.utf8.count <= FeedbackTheme.maximumStringLength
        }
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
