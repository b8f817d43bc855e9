import FeedbackServices

/// `feedbackctl profile [full|quiet|silent]`: show or set the feedback profile.
enum ProfileCommand: Subcommand {
    static let name = "profile"
    static let abstract = "Show or set the feedback profile (full, quiet, silent)"
    static let help = """
        OVERVIEW: Show or set the feedback profile (full, quiet, silent).

        The profile decides what alert feedback does, with feedbackd's meaning: full plays
        sound and vibrates; quiet only vibrates; silent does neither. It is stored as
        profile=NAME in $XDG_CONFIG_HOME/feedbackservices/settings (~/.config/… without
        XDG_CONFIG_HOME); programs read it again at their next alert, so a change applies at
        once. FEEDBACKSERVICES_PROFILE in a program's environment overrides the file for
        that program.

        USAGE: feedbackctl profile [--json] [full|quiet|silent]

        ARGUMENTS:
          full|quiet|silent
                           The profile to store; without it, the profile in force is printed

        OPTIONS:
          --json           Print {"version", "profile", "source", "file"}; source is
                           "environment", "file" or "default"
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXIT STATUS:
          0 shown or stored; 64 not a profile name; 73 the settings file cannot be written.

        EXAMPLES:
          feedbackctl profile
          feedbackctl profile quiet

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag("--json")
        let arguments = try parser.finish(positionals: 0...1)
        let settings = FeedbackSettings()
        if let name = arguments.first {
            guard let profile = FeedbackProfile(rawValue: name) else {
                throw CommandError.usage("'\(name)' is not a profile; use full, quiet or silent")
            }
            do {
                try settings.store(profile)
            } catch {
                throw CommandError(soundError: error)
            }
        }
        do {
            _ = try settings.readFileProfile()
        } catch {
            parser.warn("the settings file is ignored: \(error)")
        }
        let source =
            settings.environmentProfile != nil ? "environment" : settings.fileProfile != nil ? "file" : "default"
        if json {
            output += JSON.object([
                "version": .string(FeedbackCommand.version), "profile": .string(settings.profile.rawValue),
                "source": .string(source), "file": settings.path.map { .string($0) } ?? .null,
            ]) + "\n"
        } else {
            var line = settings.profile.rawValue
            if source == "environment" { line += " (from \(FeedbackSettings.environmentVariable), over the file)" }
            output += line + "\n"
        }
    }
}
