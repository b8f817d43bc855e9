import FeedbackServices

/// feedbackservicesd's command line, declared as feedbackctl's commands are (`Option` values): its
/// parsing, `--help` (`help`) and manual page (`manPage`, feedbackservicesd(1), which
/// `scripts/generate-docs` writes to `share/man/man1/feedbackservicesd.1`) are all made from these
/// declarations, so none can say something the others do not.
///
/// `--sysfs-root DIR` is declared but left out of the help and the page: it is for tests, which
/// give the service a fake tree of LEDs and a device tree (`FakeSysfs`).
package enum ServiceCommandLine {
    static let replace = Option(
        "--replace", help: "Take the names over from another feedbackservicesd (feedbackd\ndoes not let them go)")
    static let idleTimeout = Option(
        "--idle-timeout", value: "SECONDS", .number,
        help: "Close the sound-server stream after this long without sound,\n0 to 86400 (default 30)")
    static let version = Option("--version", help: "Print the version")
    static let man = Option("--man", help: "Print this manual page, feedbackservicesd(1), in roff")
    static let sysfsRoot = Option("--sysfs-root", value: "DIR", .directory, help: "For tests: find sysfs under DIR")

    /// The options the help and the page list, in order.
    static let options = [replace, idleTimeout, version, man, CommonOptions.help]

    /// The default `--idle-timeout`, in seconds.
    package static let defaultIdleTimeout = 30.0

    /// The OVERVIEW, in lines as the help shows it.
    static let summary = """
        The FeedbackServices session service: feedbackd's org.sigxcpu.Feedback and our
        org.feedbackservices.SystemSounds1 on the session bus.
        """

    static let usage = "feedbackservicesd [--replace] [--idle-timeout SECONDS]"

    static let signals: [(String, String)] = [
        ("SIGHUP", "Reload the feedback theme and the desktop's sound settings"),
        ("SIGTERM, SIGINT", "End every feedback and exit within a second"),
    ]

    static let environment: [(String, String)] = [
        ("DBUS_SESSION_BUS_ADDRESS", "The session bus (default: $XDG_RUNTIME_DIR/bus)"),
        ("FEEDBACK_THEME", "The feedback theme file (feedbackd's JSON format)"),
        ("FEEDBACKSERVICES_PROFILE", "The profile, over the settings file"),
        ("FEEDBACK_SOUND_THEME", "The sound theme, over GSettings' org.gnome.desktop.sound theme-name"),
        ("FEEDBACKSERVICES_OUTPUT", "Forces the audio output: pipewire, pulseaudio, alsa or canberra"),
    ]

    static let exitStatuses: [(String, String)] = [
        ("0", "stopped by SIGTERM or SIGINT, or another instance took the names over (--replace)"),
        ("64", "usage error"),
        ("66", "the feedback theme cannot be read"),
        ("69", "the session bus cannot be reached or went away, or another process owns a name and did not let it go (the message names it)"),
    ]

    /// What the command line asks for.
    package enum Request: Equatable {
        /// Run the service.
        case run(replace: Bool, idleTimeout: Double, sysfsRoot: String)
        /// Print `output` and exit 0 (`--help`, `--version`, `--man`).
        case print(String)
        /// A usage error: print `message` (it ends with the help) on standard error and exit 64.
        case usageError(String)
    }

    /// Parses the words after the program's name.
    package static func parse(_ arguments: [String]) -> Request {
        var replaces = false
        var idle = defaultIdleTimeout
        var root = "/"
        var remaining = arguments[...]
        func refuse(_ message: String) -> Request { .usageError("Error: \(message)\n\n\(help)") }
        while let argument = remaining.popFirst() {
            let declared = (options + [sysfsRoot]).first { $0.matches(argument) }
            guard let option = declared else {
                return refuse("unknown argument '\(argument)'")
            }
            var value: String?
            if option.value != nil {
                if let equals = argument.firstIndex(of: "=") {
                    value = String(argument[argument.index(after: equals)...])
                } else {
                    value = remaining.popFirst()
                }
            }
            switch option {
            case replace: replaces = true
            case idleTimeout:
                guard let seconds = value.flatMap(Double.init), seconds.isFinite, seconds >= 0, seconds <= 86_400 else {
                    return refuse("\(Self.idleTimeout.name) needs a number of seconds, 0 to 86400")
                }
                idle = seconds
            case sysfsRoot:
                guard let directory = value, directory.hasPrefix("/") else {
                    return refuse("\(Self.sysfsRoot.name) needs an absolute directory")
                }
                root = directory
            case version: return .print("feedbackservicesd \(Release.version)\n")
            case man: return .print(manPage)
            default: return .print(help)
            }
        }
        return .run(replace: replaces, idleTimeout: idle, sysfsRoot: root)
    }

    /// The text `--help` prints.
    package static var help: String {
        func table(_ rows: [(String, String)]) -> String {
            rows.map { name, meaning in
                "  " + name + String(repeating: " ", count: max(1, 28 - name.count)) + meaning + "\n"
            }.joined()
        }
        return """
            OVERVIEW: \(summary)

            USAGE: \(usage)

            OPTIONS:
            \(HelpText.options(options))
            SIGNALS:
            \(table(signals))
            ENVIRONMENT:
            \(table(environment))
            """
    }

    /// feedbackservicesd(1) in roff (man macros).
    package static var manPage: String {
        let e = Documentation.escape
        var page: [String] = [
            #".\" feedbackservicesd(1), generated from its declarations by 'feedbackservicesd --man'"#,
            #".\" (scripts/generate-docs writes share/man/man1/feedbackservicesd.1). Do not edit."#,
            #".TH FEEDBACKSERVICESD 1 "\#(Release.date)" "feedbackservicesd \#(Release.version)" "User Commands""#,
            ".nh",
            ".ad l",
            ".SH NAME",
            "feedbackservicesd \\- " + e("the FeedbackServices session service"),
            ".SH SYNOPSIS",
            Documentation.styled(usage),
            ".SH DESCRIPTION",
            ".PP", Documentation.textLine(summary.joiningLines),
            ".PP",
            Documentation.textLine(
                "It serves feedbackd's org.sigxcpu.Feedback API (so fbcli, libfeedback and Phosh work with it unchanged) "
                    + "and org.feedbackservices.SystemSounds1 (sound IDs, a volume and pan per play, one PlayEnded per play), "
                    + "playing every sound on one open stream from sounds decoded once. The session bus starts it at the "
                    + "first call (its activation files), or systemd does (the user unit feedbackservicesd.service); "
                    + "feedbackctl fire leaves its sounds to it while it runs."),
            ".SH OPTIONS",
        ]
        for option in options { page += [".TP", Documentation.styled(option.synopsis), Documentation.textLine(option.description)] }
        page += [".SH SIGNALS"]
        for (name, meaning) in signals { page += [".TP", "\\fB\(e(name))\\fR", Documentation.textLine(meaning)] }
        page += [".SH EXIT STATUS"]
        for (status, meaning) in exitStatuses { page += [".TP", "\\fB\(status)\\fR", Documentation.textLine(meaning)] }
        page += [".SH ENVIRONMENT"]
        for (name, meaning) in environment { page += [".TP", "\\fB\(e(name))\\fR", Documentation.textLine(meaning)] }
        page += [".SH SEE ALSO", "\\fBfeedbackctl\\fR(1), \\fBfbcli\\fR(1), \\fBgdbus\\fR(1)"]
        return page.joined(separator: "\n") + "\n"
    }
}
