import FeedbackServices
import Glibc

/// `feedbackctl stop`: stop every sound and vibration other `feedbackctl` commands started,
/// wherever they play: in their own processes, or in feedbackservicesd for `--no-wait`.
enum StopCommand: Subcommand {
    static let name = "stop"
    static let abstract = "Stop the sounds and vibrations feedbackctl is playing"
    static let discussion: [Paragraph] = [
        """
        Every running 'feedbackctl fire', 'play' or 'vibrate' of this user (the players that
        --no-wait left behind included) is sent SIGTERM: it stops its sound or vibration
        cleanly (a short fade, no click) and exits with 143. The command waits until they
        have all ended. Players announce themselves in $XDG_RUNTIME_DIR/feedbackctl
        (/tmp/feedbackctl-UID without XDG_RUNTIME_DIR).
        """,
        """
        When feedbackservicesd runs, the sounds and vibrations it plays for this user's
        'fire --no-wait' and 'vibrate --no-wait' are stopped too (they are listed as the
        service's process). Nothing else is: not the feedback of other programs, not what
        other users started.
        """,
    ]

    static let timeout = Option(
        "--timeout", value: "SECONDS", .number,
        help: """
            How long to wait for the players to end (default 2; 0 signals
            them and returns at once, but waits up to 1 s for the answer of
            feedbackservicesd, if it runs)
            """)
    static let json = Option.json(#"Print {"version", "stopped": [{"pid", "command"}]}"#)
    static let options = [timeout, json]
    static let usage: [[UsageItem]] = [[.optional([json, timeout])]]

    static let exitStatus: String? = """
        0 stopped (or nothing was playing); 64 bad option; 69 feedbackservicesd could not
        stop its plays; 70 a player did not end in time (the message names it); 77 the
        players' directory is not this user's own.
        """

    static let examples = ["feedbackctl fire 1007 --no-wait && feedbackctl stop"]

    /// What `--json` prints.
    struct Report: Encodable {
        let stopped: [Player]

        struct Player: Encodable {
            let pid: Int32
            let command: String
        }
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let timeout = try parser.value(Self.timeout).map { text throws(CommandError) in
            guard let value = Double(text), value.isFinite, (0...60).contains(value) else {
                throw CommandError.usage("\(Self.timeout.name) takes seconds from 0 to 60, not '\(text)'")
            }
            return value
        } ?? 2
        let directory = ActivePlayers.directory(environment: parser.environment)
        if let problem = ActivePlayers.directoryProblem(directory) {
            throw CommandError(
                message: "cannot look for players: \(problem); set XDG_RUNTIME_DIR to a directory of your own",
                exitCode: .noPermission)
        }
        let players = ActivePlayers.players(in: directory).filter { $0.pid != getpid() }
        for player in players {
            kill(player.pid, SIGTERM)
            kill(player.pid, SIGCONT)  // a player suspended with Ctrl-Z must run to stop
        }
        let deadline = MonotonicClock.now + timeout
        // Not subject to --no-daemon or FEEDBACKCTL_NO_DAEMON, which choose where a command
        // plays: what an earlier one left to the service is still feedbackctl's to stop. Its
        // answer (the list) is what the report needs, so even --timeout 0 waits for it.
        var leftToTheService: [ActivePlayers.Player] = []
        if let route = DaemonRoute(environment: parser.environment) {
            let serviceTimeout = max(timeout, 1)
            guard let stopped = try route.stopDetached(timeout: serviceTimeout) else {
                throw CommandError(
                    message: "still playing after \(formatted(serviceTimeout)) s: feedbackservicesd's plays", exitCode: .software)
            }
            leftToTheService = stopped
        }
        var remaining = timeout > 0 ? players : []
        while !remaining.isEmpty {
            remaining.removeAll { !ActivePlayers.isRunning($0.pid, in: directory) }
            if remaining.isEmpty || MonotonicClock.now >= deadline { break }
            usleep(5_000)
        }
        if !remaining.isEmpty {
            let list = remaining.map { "\($0.pid) (\($0.what))" }.joined(separator: ", ")
            throw CommandError(message: "still playing after \(formatted(timeout)) s: \(list)", exitCode: .software)
        }
        let stopped = players + leftToTheService
        if parser.flag(Self.json) {
            output += JSONOutput.line(Report(stopped: stopped.map { Report.Player(pid: $0.pid, command: $0.what) }))
        } else if stopped.isEmpty {
            output += "Nothing was playing.\n"
        } else {
            output += "Stopped \(stopped.count) player\(stopped.count == 1 ? "" : "s"):\n"
            for player in stopped { output += "  \(player.pid)  \(player.what)\n" }
        }
    }

    private static func formatted(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
