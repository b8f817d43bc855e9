import FeedbackServices
import FoundationEssentials

/// `feedbackctl theme [--json] [OPTIONS] [EVENT...]`: the active sound theme and where events resolve.
enum ThemeCommand: Subcommand {
    static let name = "theme"
    static let abstract = "Show the active sound theme and where events resolve"
    static let discussion: [Paragraph] = [
        """
        The theme is the one given with --theme, else $FEEDBACK_SOUND_THEME, else the
        desktop's (gtk-sound-theme-name in GTK's settings.ini), else feedbackservices,
        the theme FeedbackServices ships. Lookup follows the freedesktop Sound Theme
        spec: the theme and its parents, then feedbackservices, then freedesktop; the
        requested output profile, then stereo, then any; the event name, then shorter
        names (message-new-instant, message-new, message); the locale, then C, then
        none. Exits 66 if an event resolves to nothing; a disabled event is not an error.
        """
    ]

    static let events = Argument(
        "EVENT", .event, optional: true, repeats: true,
        help: "A Sound Naming spec or feedbackd event name, e.g. message-new-instant")
    static let arguments = [events]

    static let json = Option.json(
        """
        Print one JSON object: {"version", "theme": {"name", "source"},
        "outputProfile", "locale", "localeFallbacks", "searchPath",
        "themes": [{"name", "installed", "indexFile", "inherits"}],
        "events": [{"event", "status", "file", "theme", "matchedName",
        "locale"}]}; status is resolved, disabled or notFound;
        "error": {"message", "exitCode"} when an event has no sound
        """)
    static let options = ThemeOptions.all + [json]
    static let usage: [[UsageItem]] = [[.optional([json] + ThemeOptions.all), .arguments]]

    static let examples = [
        "feedbackctl theme",
        "feedbackctl theme message-new-instant phone-incoming-call",
        "feedbackctl theme --theme freedesktop --json bell-terminal",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let theme: ThemeOptions.SelectionReport
        let outputProfile: String
        @Nullable var locale: String? = nil
        let localeFallbacks: [String]
        let searchPath: [String]
        let themes: [Theme]
        let events: [ThemeOptions.LookupReport]
        /// The command's failure (an event with no sound), as every command's `--json` reports one.
        var error: JSONFailure?

        /// A theme in the search order; one not installed has only its name.
        struct Theme: Encodable {
            let name: String
            let installed: Bool
            var indexFile: String?
            var inherits: [String]?
        }
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let themeOptions = ThemeOptions(parser)
        let events = parser.positionals
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
        let missing = results.filter { if case .notFound = $0.result { true } else { false } }
        let failure =
            missing.isEmpty
            ? nil : CommandError(message: "no sound found for \(missing.map(\.event).joined(separator: ", "))", exitCode: .noInput)
        if parser.flag(Self.json) {
            var report = report(resolver, themes: themes, results: results)
            report.error = failure.map(JSONFailure.init)
            output.write(JSONOutput.line(report))
        } else {
            output.write(text(resolver, themes: themes, results: results))
        }
        if let failure { throw failure }
    }

    private static func text(
        _ resolver: SoundThemeResolver, themes: [(String, [SoundThemeIndex])],
        results: [(event: String, result: SoundLookupResult)]
    ) -> String {
        var lines = ["theme:          \(resolver.theme.name) (\(ThemeOptions.describe(resolver.theme)))", "search order:"]
        for (position, (top, chain)) in themes.enumerated() {
            let detail = chain.isEmpty
                ? "\(top) (not installed)"
                : chain.map { "\($0.name) [\($0.indexFile)]" }.joined(separator: " → ")
            lines.append("  \(position + 1). \(detail)")
        }
        lines.append("output profile: \(resolver.outputProfile)")
        let fallbacks = SoundThemeResolver.localeFallbacks(resolver.locale)
        lines.append("locale:         \(resolver.locale ?? "none") (tries \(fallbacks.joined(separator: ", ")), then none)")
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

    private static func report(
        _ resolver: SoundThemeResolver, themes: [(String, [SoundThemeIndex])],
        results: [(event: String, result: SoundLookupResult)]
    ) -> Report {
        Report(
            theme: ThemeOptions.SelectionReport(resolver.theme, settingsFile: true),
            outputProfile: resolver.outputProfile,
            locale: resolver.locale,
            localeFallbacks: SoundThemeResolver.localeFallbacks(resolver.locale),
            searchPath: resolver.searchPath.baseDirectories,
            themes: themes.flatMap { top, chain in
                chain.isEmpty
                    ? [Report.Theme(name: top, installed: false)]
                    : chain.map { Report.Theme(name: $0.name, installed: true, indexFile: $0.indexFile, inherits: $0.parents) }
            },
            events: results.map { ThemeOptions.LookupReport(event: $0.event, result: $0.result) })
    }
}

/// The theme options `fire`, `list`, `theme` and `volume` share, and how they describe a lookup.
///
/// Taking the options reads nothing; `resolver()` reads the environment and the desktop settings,
/// after the command line has been parsed, so a usage error is reported before any of that happens.
struct ThemeOptions {
    static let theme = Option(
        "--theme", value: "NAME", .text, help: "Look sounds up in this theme instead of the configured one")
    static let outputProfile = Option(
        "--output-profile", value: "NAME", .text,
        help: """
            The sound theme's output profile to prefer (default: stereo); not
            the feedback profile, which 'feedbackctl profile' sets
            """)
    static let locale = Option(
        "--locale", value: "LOCALE", .text, help: "The locale to prefer (default: $LC_ALL, $LC_MESSAGES or $LANG)")
    static let searchPath = Option(
        "--search-path", value: "DIRS", .directory,
        help: """
            Colon-separated base directories to search instead of the XDG
            ones and the shipped theme
            """)
    /// The options, in the order every command lists them.
    static let all = [theme, outputProfile, locale, searchPath]

    private let explicitTheme: String?
    private let outputProfile: String?
    private let preferredLocale: String?
    private let directories: String?
    private let environment: [String: String]

    /// Whether none of the options was given.
    var isDefault: Bool { explicitTheme == nil && outputProfile == nil && preferredLocale == nil && directories == nil }

    /// Reads `--theme`, `--output-profile`, `--locale` and `--search-path`; the environment is the command's.
    init(_ parser: ArgumentParser) {
        environment = parser.environment
        explicitTheme = parser.value(Self.theme)
        outputProfile = parser.value(Self.outputProfile)
        preferredLocale = parser.value(Self.locale)
        directories = parser.value(Self.searchPath)
    }

    /// The resolver the options and the environment describe.
    func resolver() throws(CommandError) -> SoundThemeResolver {
        var resolver: SoundThemeResolver
        do {
            resolver = try SoundThemeResolver.standard(explicitTheme: explicitTheme, environment: environment)
        } catch {
            throw CommandError.usage(error.description)
        }
        if let outputProfile, outputProfile.isEmpty || outputProfile.contains("/") {
            throw CommandError.usage("invalid output profile '\(outputProfile)'")
        }
        var bases = resolver.searchPath.baseDirectories
        if let directories {
            bases = directories.split(separator: ":").map(String.init)
            guard !bases.isEmpty, bases.allSatisfy({ $0.hasPrefix("/") }) else {
                throw CommandError.usage("\(Self.searchPath.name) needs absolute directories separated by ':'")
            }
        }
        resolver = SoundThemeResolver(
            theme: resolver.theme, searchPath: SoundThemeSearchPath(bases),
            outputProfile: outputProfile ?? resolver.outputProfile, locale: preferredLocale ?? resolver.locale)
        return resolver
    }

    static func describe(_ selection: SoundThemeSelection) -> String {
        switch selection.source {
        case .explicit: "given with --theme"
        case .environment: "from $\(SoundThemeSelection.environmentVariable)"
        case .desktop: "from \(selection.settingsFile ?? "the desktop settings")"
        case .fallback: "the shipped theme, as no other is configured"
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

    /// The theme in use, as `--json` reports it.
    struct SelectionReport: Encodable {
        let name: String
        let source: String
        let settingsFile: String?

        /// `withSettingsFile`: whether to name the desktop settings file it came from, if any.
        init(_ selection: SoundThemeSelection, settingsFile withSettingsFile: Bool) {
            name = selection.name
            source = selection.source.rawValue
            settingsFile = withSettingsFile ? selection.settingsFile : nil
        }
    }

    /// Where an event resolved, as `--json` reports it; what was tried when it did not.
    struct LookupReport: Encodable {
        let event: String
        let status: String
        @Nullable var file: String? = nil
        @Nullable var theme: String? = nil
        @Nullable var matchedName: String? = nil
        @Nullable var locale: String? = nil
        var namesTried: [String]?
        var themesSearched: [String]?

        init(event: String, result: SoundLookupResult) {
            self.event = event
            switch result {
            case .resolved(let sound), .disabled(let sound):
                status = if case .disabled = result { "disabled" } else { "resolved" }
                file = sound.path
                theme = sound.theme
                matchedName = sound.matchedName
                locale = sound.locale
            case .notFound(let failure):
                status = "notFound"
                namesTried = failure.namesTried
                themesSearched = failure.themesSearched
            }
        }
    }
}
