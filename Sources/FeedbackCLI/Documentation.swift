import FeedbackServices

/// The manual page of feedbackctl, generated from the commands' declarations and help prose
/// (`FeedbackCommand.subcommands`), as their `--help` is, so that it cannot say something the help
/// does not; the completion scripts (`Completion`) are made the same way.
///
/// `feedbackctl help --man` prints it; `scripts/generate-docs` writes it to
/// `share/man/man1/feedbackctl.1`, and a test checks that the committed file is what this makes.
/// Only what no command's help holds is written here: the description, the environment, the files
/// and the cross-references.
enum Documentation {
    /// `feedbackctl(1)` in roff (man macros).
    static var manPage: String {
        var page: [String] = [
            #".\" feedbackctl(1), generated from the commands' declarations by 'feedbackctl help --man'"#,
            #".\" (scripts/generate-docs writes share/man/man1/feedbackctl.1). Do not edit."#,
            #".TH FEEDBACKCTL 1 "\#(FeedbackCommand.releaseDate)" "feedbackctl \#(FeedbackCommand.version)" "User Commands""#,
            // Left-aligned and unhyphenated: option and file names must stay whole and exact.
            ".nh",
            ".ad l",
            ".SH NAME",
            "feedbackctl \\- " + escape(sentence(FeedbackCommand.summary)),
            ".SH SYNOPSIS",
        ]
        page += synopsis([FeedbackCommand.usage])
        page += [".SH DESCRIPTION"]
        page += paragraphs(description)
        page += [".SH OPTIONS"]
        for option in FeedbackCommand.globalOptions { page += tagged(styled(option.synopsis), option.description) }
        page += [".SH COMMANDS"]
        for command in FeedbackCommand.subcommands { page += commandSection(command) }
        page += [".SH EXIT STATUS"]
        for (status, meaning) in FeedbackCommand.exitStatuses { page += tagged("\\fB\(status)\\fR", meaning) }
        page += [".SH ENVIRONMENT"]
        for (name, meaning) in environment { page += tagged("\\fB\(escape(name))\\fR", meaning) }
        page += [".SH FILES"]
        for (path, meaning) in files { page += tagged("\\fI\(escape(path))\\fR", meaning) }
        page += [".SH EXAMPLES"]
        for command in FeedbackCommand.subcommands where !command.examples.isEmpty {
            page += [".PP", textLine(command.abstract + ":"), ".RS 4", ".nf"]
            page += command.examples.map(textLine)
            page += [".fi", ".RE"]
        }
        page += [".SH SEE ALSO"]
        page += [seeAlso.map { "\\fB\(escape($0.name))\\fR(\($0.section))" }.joined(separator: ",\n")]
        // `\:` lets a narrow terminal break an address after a slash.
        page += [".PP"] + seeAlsoText.map { textLine($0).replacing("/", with: "/\\:").replacing("/\\:/\\:", with: "//") }
        return page.joined(separator: "\n") + "\n"
    }

    /// What feedbackctl is, before the commands.
    static let description = [
        """
        feedbackctl plays system sounds (the AudioServices system sound IDs 1000-1351, and the event \
        names of the freedesktop Sound Naming specification), sound files and vibration patterns, \
        the way FeedbackServices programs play them, and shows what they use: the sound theme and \
        where each sound resolves, the sound server and its sinks, the vibrators, and the feedback \
        profile.
        """,
        """
        Sounds play on FeedbackServices' engine, one stream that starts a sound at once: PipeWire's \
        own protocol where a PipeWire daemon answers, else PulseAudio (pipewire-pulse serves as \
        well); with no sound server, or with --pcm NAME, the engine plays straight into an ALSA \
        PCM. Or through libcanberra with --canberra, or into a sound file with --output. When \
        feedbackservicesd runs, fire leaves the sound to it. Vibration uses Linux evdev \
        force-feedback devices (/dev/input/event*).
        """,
        """
        Every command takes -h and --help, which print the same text as feedbackctl help COMMAND. \
        Commands that print data take --json and then print one JSON object with a "version" member. \
        Errors are written to standard error as "Error: ..." and the exit status says what failed.
        """,
    ]

    /// The environment variables FeedbackServices reads, and what for.
    static let environment: [(String, String)] = [
        ("PULSE_SERVER", "The PulseAudio server to use (e.g. unix:/run/user/1000/pulse/native); by default the socket in $XDG_RUNTIME_DIR/pulse/native."),
        ("PULSE_SINK", "The sink the engine's stream plays to (read by libpulse); by default the server's default sink."),
        ("XDG_RUNTIME_DIR", "Where the default PulseAudio socket is: $XDG_RUNTIME_DIR/pulse/native."),
        ("FEEDBACKSERVICES_ALSA_PCM", "The ALSA PCM the engine plays on when no sound server answers (e.g. hw:0,0, plughw:1, dmix); by default the PCM named default. --pcm NAME overrides it."),
        ("FEEDBACKSERVICES_OUTPUT", "Forces the output: pipewire, pulseaudio, alsa or canberra (only that one is tried); by default PipeWire where its daemon answers, then PulseAudio, then ALSA."),
        ("FEEDBACKCTL_NO_DAEMON", "Set to anything but empty: fire and vibrate play in this process even when feedbackservicesd runs, as --no-daemon does."),
        ("DBUS_SESSION_BUS_ADDRESS", "The session bus feedbackctl asks feedbackservicesd on; by default $XDG_RUNTIME_DIR/bus. With neither, the service is not asked."),
        ("FEEDBACKSERVICES_PROFILE", "Overrides the stored feedback profile (full, quiet or silent) for programs started with it; see feedbackctl profile."),
        ("FEEDBACK_SOUND_THEME", "The sound theme to use, unless --theme names one; by default the desktop's (gtk-sound-theme-name in GTK's settings.ini), else feedbackservices."),
        ("XDG_CONFIG_HOME", "Base of the settings file and of GTK's settings.ini (default ~/.config)."),
        ("XDG_CONFIG_DIRS", "Further directories searched for GTK's settings.ini (default /etc/xdg)."),
        ("XDG_DATA_HOME", "Base of the user's sound themes ($XDG_DATA_HOME/sounds) and of the registry (default ~/.local/share)."),
        ("XDG_DATA_DIRS", "Further bases of sound themes, each with sounds/ appended (default /usr/local/share:/usr/share)."),
        ("XDG_CACHE_HOME", "Base of the decoded sounds kept between runs and of the sounds written for libcanberra (default ~/.cache)."),
        ("HOME", "Base of the defaults above."),
        ("LC_ALL, LC_MESSAGES, LANG", "The locale, the first one set: sound themes may hold sounds per locale."),
    ]

    /// The files FeedbackServices reads and writes.
    static let files: [(String, String)] = [
        ("$XDG_CONFIG_HOME/feedbackservices/settings", "The feedback profile, as profile=NAME; written by feedbackctl profile, read by every FeedbackServices program at each alert."),
        ("$XDG_DATA_HOME/feedbackservices/registry.json", "The sounds registered with feedbackctl register, by sound ID."),
        ("$XDG_DATA_HOME/sounds, $XDG_DATA_DIRS/sounds", "Sound themes (freedesktop Sound Theme specification): THEME/index.theme and THEME/PROFILE/EVENT.oga or .wav."),
        ("PREFIX/share/sounds/feedbackservices", "The theme FeedbackServices ships, installed beside PREFIX/bin/feedbackctl; searched after the directories above, so any of its sounds can be overridden."),
        ("$XDG_CONFIG_HOME/gtk-4.0/settings.ini", "The desktop's sound theme, gtk-sound-theme-name; then the same in gtk-3.0, then under each $XDG_CONFIG_DIRS entry."),
        ("$XDG_CACHE_HOME/feedbackservices/decoded", "Theme and file sounds as decoded (32-bit float at the engine's rate), one file each, used while the sound file is unchanged: a later run plays them without loading libsndfile or decoding. At most 512 entries and 64 MiB; safe to delete."),
        ("$XDG_CACHE_HOME/feedbackservices/canberra", "Sounds written as WAV for libcanberra, which cannot play from memory."),
        ("/dev/input/event*", "Input devices; those with force feedback are the vibrators."),
    ]

    static let seeAlso: [(name: String, section: Int)] = [
        ("pactl", 1), ("paplay", 1), ("pulseaudio", 1), ("canberra-gtk-play", 1), ("fbcli", 1),
    ]

    static let seeAlsoText = [
        "The freedesktop Sound Theme and Sound Naming specifications:",
        "https://specifications.freedesktop.org/sound-theme-spec/",
        "and https://specifications.freedesktop.org/sound-naming-spec/.",
    ]

    /// One command's subsection of COMMANDS.
    static func commandSection(_ command: any Subcommand.Type) -> [String] {
        var lines = [".SS \(command.name)"]
        lines += synopsis(HelpText.usageForms(of: command).map { $0.joined(separator: " ") })
        lines += paragraphs([command.summary])
        for paragraph in command.discussion {
            switch paragraph {
            case .text(let text): lines += [".PP"] + textLines(text)
            case .literal(let text): lines += [".PP", ".RS 4", ".nf"] + textLines(text) + [".fi", ".RE"]
            }
        }
        if !command.arguments.isEmpty {
            lines += [".PP", "Arguments:"]
            for argument in command.arguments { lines += tagged(styled(argument.name), argument.description) }
        }
        // -h and --help are the same for every command: DESCRIPTION says so once.
        let options = command.allOptions.filter { $0 != CommonOptions.help }
        if !options.isEmpty {
            lines += [".PP", "Options:"]
            for option in options { lines += tagged(styled(option.synopsis), option.description) }
        }
        if let exitStatus = command.exitStatus {
            lines += [".PP", textLine("Exit status: " + exitStatus.joiningLines)]
        }
        return lines
    }

    /// Usage forms, each on its own line; a form too long for one line goes on indented.
    private static func synopsis(_ forms: [String]) -> [String] {
        [".PP", ".in +4"] + forms.flatMap { [".ti -4", styled($0), ".br"] } + [".in -4"]
    }

    /// `.TP`, the tag (already formatted), and the escaped text.
    private static func tagged(_ tag: String, _ text: String) -> [String] {
        [".TP", tag, textLine(text)]
    }

    private static func paragraphs(_ texts: [String]) -> [String] {
        texts.flatMap { [".PP", textLine($0)] }
    }

    /// Each line of a paragraph as a line of running text.
    private static func textLines(_ text: String) -> [String] {
        text.split(separator: "\n").map { textLine(String($0)) }
    }

    /// "System sounds, ... for Linux." → "system sounds, ... for Linux".
    private static func sentence(_ text: String) -> String {
        var text = text.hasSuffix(".") ? String(text.dropLast()) : text
        if let first = text.first, text.dropFirst().first?.isLowercase ?? true {
            text = first.lowercased() + text.dropFirst()
        }
        return text
    }

    /// A line of running text: escaped, and kept from being read as a request if it starts with
    /// `.` or `'`.
    static func textLine(_ text: String) -> String {
        let escaped = escape(text)
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }

    /// Text for roff: backslashes as `\e`, hyphens as `\-` (options and names are typed as
    /// minus signs), anything outside ASCII as a `\[uXXXX]` glyph.
    static func escape(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\e"
            case "-": result += "\\-"
            case _ where !scalar.isASCII:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// A synopsis or a tag in the man page's type styles: options and literal words bold, value
    /// names and `<placeholders>` italic, the punctuation roman; spaces inside brackets do not break.
    static func styled(_ text: String) -> String {
        var result = ""
        var rest = text[...]
        var depth = 0
        var previous: Character = " "
        /// Takes the longest run `accept` accepts, in `font`.
        func run(_ font: String, _ accept: (Character) -> Bool) {
            let run = rest.prefix(while: accept)
            rest = rest.dropFirst(run.count)
            result += "\\f\(font)" + escape(String(run)) + "\\fR"
            previous = run.last ?? previous
        }
        while let character = rest.first {
            if character == "<", let close = rest.firstIndex(of: ">") {
                result += "\\fI" + escape(String(rest[rest.index(after: rest.startIndex)..<close])) + "\\fR"
                rest = rest[rest.index(after: close)...]
                previous = ">"
            } else if character == "-" && " [|,".contains(previous) {
                run("B") { $0.isLetter || $0.isNumber || $0 == "-" }
            } else if character.isUppercase {
                run("I") { $0.isUppercase || $0.isNumber || $0 == "_" }
            } else if character.isLowercase {
                run("B") { $0.isLowercase || $0.isNumber || $0 == "-" }
            } else {
                rest = rest.dropFirst()
                if character == "[" { depth += 1 }
                if character == "]" { depth -= 1 }
                result += character == " " && depth > 0 ? "\\ " : escape(String(character))
                previous = character
            }
        }
        return result
    }
}
