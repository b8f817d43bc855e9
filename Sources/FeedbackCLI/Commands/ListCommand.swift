import FeedbackServices

/// `feedbackctl list [--json] [OPTIONS]`: the system sound catalog, each ID resolved to its file.
enum ListCommand: Subcommand {
    static let name = "list"
    static let abstract = "List the system sounds and the file each one plays"
    static let discussion: [Paragraph] = [
        """
        Every AudioServices system sound ID (1000-1351) that has a sound is shown with
        its documented name, the theme event it plays, the file that event resolves to
        in the active theme, and the file's duration; then the IDs that only vibrate
        (4095 and the vibration-only IDs), and the sounds 'feedbackctl register' made
        (a damaged registry gives a warning, not a failure). Exits 66 if any sound
        resolves to nothing, 65 if a resolved file cannot be decoded.
        """
    ]

    static let json = Option.json(
        """
        Print one JSON object: {"version", "theme", "sounds": [{"id", "name",
        "category", "event", "status", "file", "theme", "duration"}],
        "vibration": [{"id", "category"}], "registered": [{"id", "file",
        "duration", "volume"}]}; status is resolved, disabled or notFound,
        file and duration are null when there is none, registered is null
        when the registry cannot be read; "error": {"message", "exitCode"}
        when a system sound has no file or it does not decode
        """)
    static let options = ThemeOptions.all + [json]
    static let usage: [[UsageItem]] = [[.optional([json] + ThemeOptions.all)]]

    static let examples = [
        "feedbackctl list",
        "feedbackctl list --json | jq '.sounds[] | select(.id == 1007)'",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let theme: ThemeOptions.SelectionReport
        /// Each a `Sound` beside its `ThemeOptions.LookupReport`.
        let sounds: [Merged]
        let vibration: [VibrationSound]
        /// Nil when the registry cannot be read.
        @Nullable var registered: [RegisteredSound]?
        /// The command's failure (a system sound with no file, or one that does not decode), as
        /// every command's `--json` reports one.
        var error: JSONFailure?

        /// A system sound's catalog entry; its lookup goes beside it in the same object.
        struct Sound: Encodable {
            let id: SystemSoundID
            let name: String
            let category: String
            @Nullable var duration: Double?
        }

        struct VibrationSound: Encodable {
            let id: SystemSoundID
            let category: String
        }

        struct RegisteredSound: Encodable {
            let id: SystemSoundID
            let file: String
            let duration: Double
            let volume: Double
        }
    }

    private struct Row {
        let sound: SystemSound
        let result: SoundLookupResult
        let duration: Double?
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let themeOptions = ThemeOptions(parser)
        let resolver = try themeOptions.resolver()
        var durations: [String: Double?] = [:]
        let decoder = SoundDecoder()
        let rows = SystemSoundCatalog.sounds.map { sound in
            let result = resolver.resolve(sound)
            var duration: Double?
            if case .resolved(let found) = result {
                if let known = durations[found.path] {
                    duration = known
                } else {
                    duration = try? decoder.decode(fileAt: found.path).buffer.duration
                    durations[found.path] = duration
                }
            }
            return Row(sound: sound, result: result, duration: duration)
        }
        let vibration = SystemSoundCatalog.vibrationOnly.sorted { $0.key < $1.key }
        var registered: [PersistentSound]?
        do {
            registered = try RegistryArguments.sounds(parser)
        } catch {
            parser.warn("registered sounds not listed: \(error.message)")
        }
        let unresolved = rows.filter { if case .notFound = $0.result { true } else { false } }
        let undecodable = rows.filter { if case .resolved = $0.result { $0.duration == nil } else { false } }
        var failure: CommandError?
        if !unresolved.isEmpty {
            let ids = unresolved.map { String($0.sound.id) }.joined(separator: ", ")
            failure = CommandError(message: "no sound found for system sound IDs \(ids)", exitCode: .noInput)
        } else if !undecodable.isEmpty {
            let ids = undecodable.map { String($0.sound.id) }.joined(separator: ", ")
            failure = CommandError(message: "the files of system sound IDs \(ids) cannot be decoded", exitCode: .dataError)
        }
        if parser.flag(Self.json) {
            var report = report(resolver, rows: rows, vibration: vibration, registered: registered)
            report.error = failure.map(JSONFailure.init)
            output.write(JSONOutput.line(report))
        } else {
            output.write(text(resolver, rows: rows, vibration: vibration, registered: registered))
        }
        if let failure { throw failure }
    }

    private static func text(
        _ resolver: SoundThemeResolver, rows: [Row], vibration: [(key: SystemSoundID, value: String)],
        registered: [PersistentSound]?
    ) -> String {
        let nameWidth = max(4, rows.map(\.sound.name.count).max() ?? 0)
        let eventWidth = max(5, rows.map(\.sound.event.count).max() ?? 0)
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        var lines = ["theme: \(resolver.theme.name) (\(ThemeOptions.describe(resolver.theme)))", ""]
        lines.append("ID    \(pad("NAME", nameWidth))  \(pad("EVENT", eventWidth))  DURATION  FILE")
        for row in rows {
            let file: String
            switch row.result {
            case .resolved(let sound): file = sound.path
            case .disabled(let sound): file = "disabled by \(sound.path)"
            case .notFound: file = "NOT FOUND"
            }
            let duration = row.duration.map { formatDuration($0) } ?? "-"
            lines.append("\(row.sound.id)  \(pad(row.sound.name, nameWidth))  \(pad(row.sound.event, eventWidth))  \(pad(duration, 8))  \(file)")
        }
        lines.append("")
        lines.append("Vibration only:")
        for (id, category) in vibration { lines.append("\(id)  \(category)") }
        if let registered, !registered.isEmpty {
            lines.append("")
            lines.append("Registered (feedbackctl register):")
            for sound in registered {
                let volume = sound.volume == .unchanged ? "" : "  volume \(sound.volume.multiplier)"
                lines.append("\(sound.id)  \(formatDuration(sound.duration))  \(sound.path)\(volume)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func report(
        _ resolver: SoundThemeResolver, rows: [Row], vibration: [(key: SystemSoundID, value: String)],
        registered: [PersistentSound]?
    ) -> Report {
        Report(
            theme: ThemeOptions.SelectionReport(resolver.theme, settingsFile: false),
            sounds: rows.map { row in
                Merged(
                    first: Report.Sound(id: row.sound.id, name: row.sound.name, category: row.sound.category, duration: row.duration.map(JSONOutput.seconds)),
                    second: ThemeOptions.LookupReport(event: row.sound.event, result: row.result))
            },
            vibration: vibration.map { Report.VibrationSound(id: $0.key, category: $0.value) },
            registered: registered?.map { sound in
                Report.RegisteredSound(
                    id: sound.id, file: sound.path, duration: JSONOutput.seconds(sound.duration), volume: Double(sound.volume.multiplier))
            })
    }

    private static func formatDuration(_ seconds: Double) -> String {
        "\((seconds * 1000).rounded() / 1000) s"
    }
}
