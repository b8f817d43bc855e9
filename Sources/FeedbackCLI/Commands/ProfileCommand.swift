import FeedbackDaemon
import FeedbackServices

/// `feedbackctl profile [full|quiet|silent]`: show or set the feedback profile.
enum ProfileCommand: Subcommand {
    static let name = "profile"
    static let abstract = "Show or set the feedback profile (full, quiet, silent)"
    static let discussion: [Paragraph] = [
        """
        The profile decides what alert feedback does, with feedbackd's meaning: full plays
        sound and vibrates; quiet only vibrates; silent does neither. It is stored as
        profile=NAME in $XDG_CONFIG_HOME/feedbackservices/settings (~/.config/… without
        XDG_CONFIG_HOME); programs read it again at their next alert, so a change applies at
        once. FEEDBACKSERVICES_PROFILE in a program's environment overrides the file for
        that program.
        """,
        """
        When feedbackservicesd runs, a new profile is also handed to it (org.sigxcpu.Feedback's
        Profile property), so that it announces the change to the programs that watch it;
        --no-daemon (or FEEDBACKCTL_NO_DAEMON=1) does not ask the service.
        """,
        """
        Where feedbackd's GSettings schema is installed (Debian's feedbackd-common installs it),
        the profile is written there too (org.sigxcpu.feedbackd profile, with the gsettings
        tool), as settings apps and feedbackd keep it: feedbackservicesd takes it from there when
        it starts, and keeps the two equal while it runs.
        """,
    ]

    static let profile = Argument(
        "full|quiet|silent", .oneOf(FeedbackProfile.allCases.map { $0.rawValue }), optional: true,
        help: "The profile to store; without it, the profile in force is printed")
    static let arguments = [profile]

    static let json = Option.json(
        """
        Print {"version", "profile", "source", "file"}; source is
        "environment", "file" or "default"
        """)
    static let options = [json, DaemonRoute.noDaemon]

    static let exitStatus: String? = "0 shown or stored; 64 not a profile name; 73 the settings file cannot be written."

    static let examples = [
        "feedbackctl profile",
        "feedbackctl profile quiet",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let profile: String
        let source: String
        @Nullable var file: String?
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let settings = FeedbackSettings(environment: parser.environment)
        if let name = parser.positionals.first {
            guard let profile = FeedbackProfile(rawValue: name) else {
                throw CommandError.usage("'\(name)' is not a profile; use full, quiet or silent")
            }
            do {
                try settings.store(profile)
            } catch {
                throw CommandError(error)
            }
            if DaemonRoute.mayUse(environment: parser.environment, forcedOff: parser.flag(DaemonRoute.noDaemon)) {
                DaemonRoute(environment: parser.environment)?.announce(profile)
            }
            if settings.environmentProfile == nil {
                FeedbackdSettings.storeWhereInstalled(profile, environment: parser.environment)
            }
        }
        do {
            _ = try settings.readFileProfile()
        } catch {
            parser.warn("the settings file is ignored: \(error)")
        }
        let source =
            settings.environmentProfile != nil ? "environment" : settings.fileProfile != nil ? "file" : "default"
        if parser.flag(Self.json) {
            output += JSONOutput.line(Report(profile: settings.profile.rawValue, source: source, file: settings.path))
        } else {
            var line = settings.profile.rawValue
            if source == "environment" { line += " (from \(FeedbackSettings.environmentVariable), over the file)" }
            output += line + "\n"
        }
    }
}
