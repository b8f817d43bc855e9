import FeedbackServices
import FoundationEssentials

/// `feedbackctl theme [--json] [OPTIONS] [EVENT...]`: the active sound theme and where events resolve.
enum ThemeCommand: Subcommand {
    static let name = "theme"
    static let abstract = "Show the active sound theme and where events resolve"
    static let help = """
        OVERVIEW: Show the active sound theme and where events resolve.

        The theme is the one given with --theme, else $FEEDBACK_SOUND_THEME, else the
        desktop's (gtk-sound-theme-name in GTK's settings.ini), else feedbackservices,
        the theme FeedbackServices ships. Lookup follows the freedesktop Sound Theme
        spec: the theme and its parents, then feedbackservices, then freedesktop; the
        requested output profile, then stereo, then any; the event name, then shorter
        names (message-new-instant, message-new, message); the locale, then C, then
        none. Exits 66 if an event resolves to nothing; a disabled event is not an error.

        USAGE: feedbackctl theme [--json] [--theme NAME] [--profile NAME] [--locale LOCALE]
                                 [--search-path DIRS] [EVENT...]

        ARGUMENTS:
          EVENT            A Sound Naming spec or feedbackd event name, e.g. message-new-instant

        OPTIONS:
        \(ThemeOptions.help)
          --json           Print one JSON object: {"version", "theme": {"name", "source"},
                           "profile", "locale", "localeFallbacks", "searchPath",
                           "themes": [{"name", "installed", "indexFile", "inherits"}],
                           "events": [{"event", "status", "file", "theme", "matchedName",
                           "locale"}]}; status is resolved, disabled or notFound
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXAMPLES:
          feedbackctl theme
          feedbackctl theme message-new-instant phone-incoming-call
          feedbackctl theme --theme freedesktop --json bell-terminal

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag("--json")
        let themeOptions = try ThemeOptions(&parser)
        let events = try parser.finish(positionals: 0...)
        let resolver = try themeOptions.resolver()
        var results: [(event: String, result: SoundLookupResult)] = []
        for event in events {
            do {
                results.append((event, try resolver.resolve(event)))
            } catch {
                throw CommandError(error)
            }
        }
        let themes = resolver.themeOrder.map { top in (top, resolver.inheritance(of: top)) }
        if json {
            output.write(jsonText(resolver, themes: themes, results: results) + "\n")
        } else {
            output.write(text(resolver, themes: themes, results: results))
        }
        let missing = results.filter { if case .notFound = $0.result { true } else { false } }
        if !missing.isEmpty {
            let names = missing.map(\.event).joined(separator: ", ")
            throw CommandError(message: "no sound found for \(names)", exitCode: .noInput)
        }
    }

    private static func text(
        _ resolver: SoundThemeResolver, themes: [(String, [SoundThemeIndex])],
        results: [(event: String, result: SoundLookupResult)]
    ) -> String {
        var lines = ["theme:        \(resolver.theme.name) (\(ThemeOptions.describe(resolver.theme)))", "search order:"]
        for (position, (top, chain)) in themes.enumerated() {
            let detail = chain.isEmpty
                ? "\(top) (not installed)"
                : chain.map { "\($0.name) [\($0.indexFile)]" }.joined(separator: " → ")
            lines.append("  \(position + 1). \(detail)")
        }
        lines.append("profile:      \(resolver.outputProfile)")
        let fallbacks = SoundThemeResolver.localeFallbacks(resolver.locale)
        lines.append("locale:       \(resolver.locale ?? "none") (tries \(fallbacks.joined(separator: ", ")), then none)")
        lines.append("search path:")
        lines += resolver.searchPath.baseDirectories.map { "  " + $0 }
        if !results.isEmpty { lines.append("") }
        let width = results.map(\.event.count).max() ?? 0
        for (event, result) in results {
            let padded = event + String(repeating: " ", count: width - event.count)
            lines.append("\(padded)  \(ThemeOptions.describe(result))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func jsonText(
        _ resolver: SoundThemeResolver, themes: [(String, [SoundThemeIndex])],
        results: [(event: String, result: SoundLookupResult)]
    ) -> String {
        var themeObject: [String: JSON] = [
            "name": .string(resolver.theme.name), "source": .string(resolver.theme.source.rawValue),
        ]
        if let file = resolver.theme.settingsFile { themeObject["settingsFile"] = .string(file) }
        let installed: [JSON] = themes.flatMap { top, chain in
            chain.isEmpty
                ? [JSON.object(["name": .string(top), "installed": .bool(false)])]
                : chain.map { index in
                    JSON.object([
                        "name": .string(index.name), "installed": .bool(true), "indexFile": .string(index.indexFile),
                        "inherits": .array(index.parents.map(JSON.string)),
                    ])
                }
        }
        return JSON.object([
            "version": .string(FeedbackCommand.version),
            "theme": .object(themeObject),
            "profile": .string(resolver.outputProfile),
            "locale": resolver.locale.map(JSON.string) ?? .null,
            "localeFallbacks": .array(SoundThemeResolver.localeFallbacks(resolver.locale).map(JSON.string)),
            "searchPath": .array(resolver.searchPath.baseDirectories.map(JSON.string)),
            "themes": .array(installed),
            "events": .array(results.map { ThemeOptions.json(event: $0.event, result: $0.result) }),
        ])
    }
}

/// The theme options `fire`, `list`, `theme` and `volume` share, and how they describe a lookup.
///
/// Taking the options reads nothing; `resolver()` reads the environment and the desktop settings,
/// after the command's `finish`, so a usage error is reported before any of that happens.
struct ThemeOptions {
    /// The options' help, one text for every command that takes them.
    static let help = """
          --theme NAME     Look sounds up in this theme instead of the configured one
          --profile NAME   The output profile to prefer (default: stereo)
          --locale LOCALE  The locale to prefer (default: $LC_ALL, $LC_MESSAGES or $LANG)
          --search-path DIRS
                           Colon-separated base directories to search instead of the XDG
                           ones and the shipped theme
        """

    private let explicitTheme: String?
    private let profile: String?
    private let locale: String?
    private let searchPath: String?
    private let environment: [String: String]

    /// Takes `--theme`, `--profile`, `--locale` and `--search-path`; the environment is the command's.
    init(_ parser: inout ArgumentParser) throws(CommandError) {
        environment = parser.environment
        explicitTheme = try parser.value("--theme")
        profile = try parser.value("--profile")
        locale = try parser.value("--locale")
        searchPath = try parser.value("--search-path")
    }

    /// The resolver the options and the environment describe.
    func resolver() throws(CommandError) -> SoundThemeResolver {
        var resolver: SoundThemeResolver
        do {
            resolver = try SoundThemeResolver.standard(explicitTheme: explicitTheme, environment: environment)
        } catch {
            throw CommandError.usage(error.description)
        }
        if let profile, profile.isEmpty || profile.contains("/") {
            throw CommandError.usage("invalid output profile '\(profile)'")
        }
        var directories = resolver.searchPath.baseDirectories
        if let searchPath {
            directories = searchPath.split(separator: ":").map(String.init)
            guard !directories.isEmpty, directories.allSatisfy({ $0.hasPrefix("/") }) else {
                throw CommandError.usage("--search-path needs absolute directories separated by ':'")
            }
        }
        resolver = SoundThemeResolver(
            theme: resolver.theme, searchPath: SoundThemeSearchPath(directories),
            outputProfile: profile ?? resolver.outputProfile, locale: locale ?? resolver.locale)
        return resolver
    }

    static func describe(_ selection: SoundThemeSelection) -> String {
        switch selection.source {
        case .explicit: "given with --theme"
        case .environment: "from $\(SoundThemeSelection.environmentVariable)"
        case .desktop: "from \(selection.settingsFile ?? "the desktop settings")"
        case .fallback: "the shipped theme; nothing configured another"
        }
    }

    static func describe(_ result: SoundLookupResult) -> String {
        switch result {
        case .resolved(let sound): "\(sound.path) (\(origin(sound)))"
        case .disabled(let sound): "disabled by \(sound.path) (\(origin(sound)))"
        case .notFound(let failure): "not found: \(failure)"
        }
    }

    private static func origin(_ sound: ResolvedSound) -> String {
        var text = sound.theme.map { "theme \($0)" } ?? "unthemed"
        if sound.matchedName != sound.event { text += ", as \(sound.matchedName)" }
        if let locale = sound.locale { text += ", locale \(locale)" }
        return text
    }

    static func json(event: String, result: SoundLookupResult) -> JSON {
        switch result {
        case .resolved(let sound), .disabled(let sound):
            let disabled = if case .disabled = result { true } else { false }
            return .object([
                "event": .string(event), "status": .string(disabled ? "disabled" : "resolved"),
                "file": .string(sound.path), "theme": sound.theme.map(JSON.string) ?? .null,
                "matchedName": .string(sound.matchedName), "locale": sound.locale.map(JSON.string) ?? .null,
            ])
        case .notFound(let failure):
            return .object([
                "event": .string(event), "status": .string("notFound"), "file": .null, "theme": .null,
                "matchedName": .null, "locale": .null,
                "namesTried": .array(failure.namesTried.map(JSON.string)),
                "themesSearched": .array(failure.themesSearched.map(JSON.string)),
            ])
        }
    }
}
