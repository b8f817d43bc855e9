import FeedbackServices
import Glibc

/// The desktop's sound switches from GSettings: `org.gnome.desktop.sound event-sounds` (false: no
/// event sounds) and `theme-name` (the sound theme). A value; safe to share across threads.
///
/// Read with the `gsettings` tool (`gsettings list-recursively org.gnome.desktop.sound`), once at
/// start and at each SIGHUP, not through GIO in the process: that way neither the library nor the
/// daemon links or loads GLib, no GDBus worker thread and second bus connection (dconf's change
/// notifications) run beside ours, and an idle daemon stays without wake-ups; the tool reads every
/// backend the desktop uses (dconf, a keyfile, memory) exactly as GNOME's own programs do. The cost
/// is one short child process per read (a few ms), and a change applies at the next SIGHUP, not at
/// once. No `gsettings`, no schema, or a tool that does not answer within `timeout`: the defaults.
package struct DesktopSoundSettings: Sendable, Equatable {
    /// Whether event sounds play (`event-sounds`; true when unknown).
    package var eventSounds = true
    /// The sound theme the desktop chose (`theme-name`); nil when it is unknown or the schema's
    /// default, `freedesktop`, which means no choice was made (our own theme, which falls back to
    /// freedesktop's sounds, is used then, as for `feedbackctl`).
    package var themeName: String?

    /// The schema read.
    package static let schema = "org.gnome.desktop.sound"
    /// How long `gsettings` may take, in seconds.
    static let timeout = 2.0

    /// Defaults: event sounds on, no theme chosen.
    package init() {}

    /// Settings as `gsettings list-recursively` printed them (`SCHEMA KEY VALUE` lines).
    package init(listing: String) {
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard fields.count == 3, fields[0] == Self.schema else { continue }
            switch fields[1] {
            case "event-sounds": eventSounds = fields[2] != "false"
            case "theme-name":
                let name = String(fields[2].dropFirst().dropLast())
                let quoted = fields[2].hasPrefix("'") && fields[2].hasSuffix("'")
                if quoted, name != "freedesktop", (try? SoundThemeSelection.current(explicit: name, environment: [:])) != nil {
                    themeName = name
                }
            default: break
            }
        }
    }

    /// Reads the settings with `gsettings` in `environment` (its `PATH`, `GSETTINGS_BACKEND`,
    /// `XDG_CONFIG_HOME`, …); the defaults, and a line saying why, when that fails.
    package static func read(environment: [String: String]) -> (settings: DesktopSoundSettings, problem: String?) {
        switch run(["gsettings", "list-recursively", schema], environment: environment) {
        case .success(let output): return (DesktopSoundSettings(listing: output), nil)
        case .failure(let problem): return (DesktopSoundSettings(), problem.message)
        }
    }

    private struct Problem: Error {
        var message: String
    }

    /// Runs `arguments` (found on `environment`'s PATH) and returns what it printed, at most 64 KiB,
    /// within `timeout`.
    private static func run(_ arguments: [String], environment: [String: String]) -> Result<String, Problem> {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return .failure(Problem(message: "pipe: \(Errno.current)")) }
        defer { close(pipeEnds[0]) }
        // The read end must not leak into the child (nor into other children of the process).
        _ = fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        let path = directories.map { (directory: Substring) -> String in "\(directory)/\(arguments[0])" }
            .first { access($0, X_OK) == 0 }
        guard let path else {
            close(pipeEnds[1])
            return .failure(Problem(message: "no \(arguments[0]) on PATH"))
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(pipeEnds[1])
        guard spawned == 0 else { return .failure(Problem(message: "\(path): \(Errno(rawValue: spawned))")) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = MonotonicClock.now + timeout
        var timedOut = false
        while output.count < 1 << 16 {
            var poller = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
            let left = deadline - MonotonicClock.now
            guard left > 0, poll(&poller, 1, Int32(left * 1000) + 1) > 0 else {
                if errno == EINTR && left > 0 { continue }
                timedOut = true
                break
            }
            let count = chunk.withUnsafeMutableBytes { try? System.read(pipeEnds[0], into: $0.baseAddress!, count: $0.count) }
            guard let count, count > 0 else { break }
            output += chunk.prefix(count)
        }
        if timedOut { kill(pid, SIGKILL) }
        let status = (try? System.waitpid(pid))?.status ?? -1
        if timedOut { return .failure(Problem(message: "\(path) did not answer within \(timeout) s")) }
        guard status == 0 else {
            return .failure(Problem(message: "\(path) \(arguments.dropFirst().joined(separator: " ")) failed (status \(status))"))
        }
        return .success(String(decoding: output, as: UTF8.self))
    }
}
