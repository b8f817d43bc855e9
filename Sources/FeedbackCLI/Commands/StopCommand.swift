import FeedbackServices
import Glibc

/// `feedbackctl stop`: stop every sound and vibration other `feedbackctl` commands are playing.
enum StopCommand: Subcommand {
    static let name = "stop"
    static let abstract = "Stop the sounds and vibrations feedbackctl is playing"
    static let help = """
        OVERVIEW: Stop the sounds and vibrations feedbackctl is playing.

        Every running 'feedbackctl fire', 'play' or 'vibrate' of this user (the players that
        --no-wait left behind included) is sent SIGTERM: it stops its sound or vibration
        cleanly (a short fade, no click) and exits with 143. The command waits until they
        have all ended. Players announce themselves in $XDG_RUNTIME_DIR/feedbackctl
        (/tmp/feedbackctl-UID without XDG_RUNTIME_DIR).

        USAGE: feedbackctl stop [--json] [--timeout SECONDS]

        OPTIONS:
          --timeout SECONDS
                           How long to wait for the players to end (default 2; 0 signals
                           them and returns at once)
          --json           Print {"version", "stopped": [{"pid", "command"}]}
          -q, --quiet      Print nothing on standard output, only errors
          -h, --help       Show this help

        EXIT STATUS:
          0 stopped (or nothing was playing); 64 bad option; 70 a player did not end in
          time (the message names it); 77 the players' directory is not this user's own.

        EXAMPLES:
          feedbackctl fire 1007 --no-wait && feedbackctl stop

        """

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let json = parser.flag("--json")
        let timeout = try parser.value("--timeout").map { text throws(CommandError) in
            guard let value = Double(text), value.isFinite, (0...60).contains(value) else {
                throw CommandError.usage("--timeout takes seconds from 0 to 60, not '\(text)'")
            }
            return value
        } ?? 2
        try parser.finish(positionals: 0)
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
        var remaining = timeout > 0 ? players : []
        let deadline = monotonicSeconds() + timeout
        while !remaining.isEmpty {
            remaining.removeAll { !ActivePlayers.isRunning($0.pid, in: directory) }
            if remaining.isEmpty || monotonicSeconds() >= deadline { break }
            usleep(5_000)
        }
        if !remaining.isEmpty {
            let list = remaining.map { "\($0.pid) (\($0.what))" }.joined(separator: ", ")
            throw CommandError(message: "still playing after \(formatted(timeout)) s: \(list)", exitCode: .software)
        }
        if json {
            let entries: [JSON] = players.map { .object(["pid": .number(Double($0.pid)), "command": .string($0.what)]) }
            output += JSON.object(["version": .string(FeedbackCommand.version), "stopped": .array(entries)]) + "\n"
        } else if players.isEmpty {
            output += "Nothing was playing.\n"
        } else {
            output += "Stopped \(players.count) player\(players.count == 1 ? "" : "s"):\n"
            for player in players { output += "  \(player.pid)  \(player.what)\n" }
        }
    }

    private static func formatted(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
