import FeedbackDaemon

/// `feedbackctl feedback-theme check FILE`: whether a feedback theme (feedbackd's JSON, what
/// feedbackservicesd and feedbackd give events with) loads, with its parents, answering as
/// feedbackd's `fbd-theme-validate` does. Not `theme`, which is the sound theme.
enum FeedbackThemeCommand: Subcommand {
    static let name = "feedback-theme"
    static let abstract = "Check a feedback theme (feedbackd's JSON), as fbd-theme-validate does"
    static let discussion: [Paragraph] = [
        """
        A feedback theme maps events to feedback (Sound, VibraRumble, VibraPeriodic,
        VibraPattern, Led, Dummy) under the profiles full, quiet and silent; feedbackservicesd
        and feedbackd read it (FEEDBACK_THEME, ~/.config/feedbackd/themes/default.json). This
        is not the sound theme, which 'feedbackctl theme' shows.
        """,
        """
        check reads FILE and its parents as feedbackservicesd reads them: a parent-name is
        looked up in ~/.config/feedbackd/themes, in FeedbackServices' own themes and in
        $XDG_DATA_DIRS/feedbackd/themes; $device and default are the device theme of
        --compatible (a feedbackd-device-themes file, <compatible>.json), then default the
        default theme; a parent found nowhere falls back to default, with a warning. It prints
        each file it loads and "Validation successful.", or the reason the theme is not valid.
        What loads but is not played as written (a type not known here, run as a Dummy; an LED
        colour shown white) is a warning.
        """,
    ]

    static let action = Argument("check", .oneOf(["check"]), help: "Check the theme")
    static let file = Argument("FILE", .file, help: "The theme file")
    static let arguments = [action, file]

    static let compatible = Option(
        "--compatible", value: "NAME", .text,
        help: """
            The device's compatible, whose device theme $device and default name
            (fbd-theme-validate's --compatible)
            """)
    static let json = Option.json(
        """
        Print {"version", "file", "valid", "files", "error", "warnings"}; files are
        the theme's own first, then its parents'; error is null when valid
        """)
    static let options = [compatible, json]

    static let exitStatus: String? = """
        0 the theme is valid; 1 it is not (the reason is printed), as fbd-theme-validate
        answers; 64 bad options.
        """

    static let examples = [
        "feedbackctl feedback-theme check ~/.config/feedbackd/themes/default.json",
        "feedbackctl feedback-theme check --compatible purism,librem5 /usr/share/feedbackd/themes/default.json",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let file: String
        let valid: Bool
        let files: [String]
        @Nullable var error: String?
        let warnings: [String]
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        guard parser.positionals[0] == "check" else {
            throw CommandError.usage("'\(parser.positionals[0])' is not an action; use check")
        }
        let path = parser.positionals[1]
        var compatibles: [String] = []
        if let name = parser.value(Self.compatible) {
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                throw CommandError.usage("'\(name)' is not a compatible (a device tree name, without '/')")
            }
            compatibles = [name]
        }
        var locations = FeedbackThemeLocations.standard(environment: parser.environment, compatibles: compatibles)
        locations.theme = path
        let result: Result<FeedbackTheme, FeedbackThemeError>
        do {
            result = .success(try FeedbackTheme.load(locations))
        } catch {
            result = .failure(error)
        }
        let theme = try? result.get()
        let warnings =
            (theme?.notes ?? [])
            + (theme?.ignored ?? []).map { "a type not known here, run as a Dummy: \($0)" }
            + (theme?.approximated ?? []).map { "an LED colour our LEDs are not told, shown white: \($0)" }
        let problem: String? =
            switch result {
            case .success: nil
            case .failure(let error): error.description
            }
        if parser.flag(Self.json) {
            output += JSONOutput.line(
                Report(file: path, valid: theme != nil, files: theme?.files ?? [], error: problem, warnings: warnings))
        } else {
            for file in theme?.files ?? [] { output += "Loading theme file at '\(file)'\n" }
            if theme != nil { output += "Validation successful.\n" }
        }
        for warning in warnings { parser.warn(warning) }
        if let problem {
            throw CommandError(message: "Validation of '\(path)' failed: \(problem)", exitCode: .invalid)
        }
    }
}
