import FeedbackServices
import Glibc

/// GSettings read and written with the `gsettings` tool, one short child process a call, never
/// through GIO in the process: so neither the library nor the daemon links or loads GLib, no
/// GDBus worker thread and second bus connection run beside ours, and an idle daemon stays
/// without wake-ups; the tool reads every backend the desktop uses (dconf, a keyfile, memory)
/// exactly as GNOME's own programs do. A call takes ~10 ms; it never runs on the bus thread.
///
/// Changes are seen live where the backend is dconf: dconf's writer announces each write with the
/// signal `ca.desrt.dconf.Writer.Notify` on the session bus the service is already connected to
/// (`DconfChange`); the daemon reads again then. Other backends (a keyfile, memory) send nothing:
/// a change there applies at the next SIGHUP.
package enum GSettingsTool {
    /// How long `gsettings` may take, in seconds.
    static let timeout = 2.0
    /// The most a call may print, in bytes.
    static let maximumOutput = 1 << 16

    /// Why a call gave nothing.
    package struct Problem: Error, Equatable {
        package var message: String
    }

    /// `gsettings list-recursively SCHEMA`: `SCHEMA KEY VALUE` lines, values in GVariant text.
    package static func listRecursively(_ schema: String, environment: [String: String]) -> Result<String, Problem> {
        run(["gsettings", "list-recursively", schema], environment: environment)
    }

    /// `gsettings get SCHEMA[:PATH] KEY`: the value in GVariant text.
    package static func get(_ schema: String, key: String, environment: [String: String]) -> Result<String, Problem> {
        run(["gsettings", "get", schema, key], environment: environment)
    }

    /// `gsettings set SCHEMA KEY VALUE` (VALUE in GVariant text).
    package static func set(_ schema: String, key: String, value: String, environment: [String: String])
        -> Result<String, Problem>
    {
        run(["gsettings", "set", schema, key, value], environment: environment)
    }

    /// `value` as GVariant text writes a string: single-quoted, `'` and `\` escaped.
    package static func quoted(_ value: String) -> String {
        "'" + value.replacing("\\", with: "\\\\").replacing("'", with: "\\'") + "'"
    }

    /// Runs `arguments` (found on `environment`'s PATH) and returns what it printed, at most
    /// `maximumOutput` bytes, within `timeout`.
    private static func run(_ arguments: [String], environment: [String: String]) -> Result<String, Problem> {
        // Both ends close-on-exec: the child gets the write end as its stdout only (dup2 clears
        // the flag there), and no other child the process spawns meanwhile inherits either end.
        let pipeEnds: (Int32, Int32)
        do { pipeEnds = try System.pipe() } catch { return .failure(Problem(message: "pipe: \(error)")) }
        defer { close(pipeEnds.0) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds.1, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        System.closeInheritedDescriptors(&actions)
        let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        let path = directories.map { (directory: Substring) -> String in "\(directory)/\(arguments[0])" }
            .first { access($0, X_OK) == 0 }
        guard let path else {
            close(pipeEnds.1)
            return .failure(Problem(message: "no \(arguments[0]) on PATH"))
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(pipeEnds.1)
        guard spawned == 0 else { return .failure(Problem(message: "\(path): \(Errno(rawValue: spawned))")) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = MonotonicClock.now + timeout
        var timedOut = false
        while output.count < maximumOutput {
            var poller = pollfd(fd: pipeEnds.0, events: Int16(POLLIN), revents: 0)
            let left = deadline - MonotonicClock.now
            guard left > 0, poll(&poller, 1, Int32(left * 1000) + 1) > 0 else {
                if errno == EINTR && left > 0 { continue }
                timedOut = true
                break
            }
            let count = chunk.withUnsafeMutableBytes { try? System.read(pipeEnds.0, into: $0.baseAddress!, count: $0.count) }
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

/// A value in GVariant's text form, as `gsettings` prints it, for the types our settings have:
/// `s` (`'text'`, or `"text"` when it holds a `'`), `b`, `d` and `as` (`['a', 'b']`, `@as []`).
/// Anything else, or a malformed value, is nil: the setting is then left at its default.
package enum GVariantText {
    /// A string value.
    package static func string(_ text: Substring) -> String? {
        var scanner = Scanner(text)
        guard let value = scanner.string(), scanner.atEnd else { return nil }
        return value
    }

    /// A boolean value.
    package static func boolean(_ text: Substring) -> Bool? {
        switch text.trimmingSpaces {
        case "true": true
        case "false": false
        default: nil
        }
    }

    /// A double value (gsettings prints `1.0`, `0.5`, `1e-05`).
    package static func double(_ text: Substring) -> Double? {
        Double(String(text.trimmingSpaces)).flatMap { $0.isFinite ? $0 : nil }
    }

    /// A string array value; at most `limit` strings.
    package static func strings(_ text: Substring, limit: Int = 256) -> [String]? {
        var rest = text.trimmingSpaces
        if rest.hasPrefix("@as") { rest = rest.dropFirst(3).trimmingSpaces }
        guard rest.first == "[", rest.last == "]" else { return nil }
        var scanner = Scanner(rest.dropFirst().dropLast())
        var strings: [String] = []
        scanner.skipSpaces()
        if scanner.atEnd { return [] }
        while strings.count < limit {
            guard let value = scanner.string() else { return nil }
            strings.append(value)
            scanner.skipSpaces()
            if scanner.atEnd { return strings }
            guard scanner.take(",") else { return nil }
        }
        return nil
    }

    /// Reads GVariant text strings.
    private struct Scanner {
        var rest: Substring.UnicodeScalarView

        init(_ text: Substring) { rest = text.unicodeScalars }

        var atEnd: Bool {
            mutating get {
                skipSpaces()
                return rest.isEmpty
            }
        }

        mutating func skipSpaces() {
            while let first = rest.first, first == " " || first == "\t" || first == "\n" { rest.removeFirst() }
        }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard rest.first == character else { return false }
            rest.removeFirst()
            return true
        }

        /// A quoted string and its escapes (`\\`, `\'`, `\"`, `\n`, `\t`, `\uXXXX`).
        mutating func string() -> String? {
            skipSpaces()
            guard let quote = rest.first, quote == "'" || quote == "\"" else { return nil }
            rest.removeFirst()
            var value = String.UnicodeScalarView()
            while let scalar = rest.popFirst() {
                if scalar == quote { return String(value) }
                guard scalar == "\\" else {
                    value.append(scalar)
                    continue
                }
                guard let escaped = rest.popFirst() else { return nil }
                switch escaped {
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "u":
                    let digits = String(String.UnicodeScalarView(rest.prefix(4)))
                    guard digits.count == 4, let code = UInt32(digits, radix: 16), let decoded = Unicode.Scalar(code)
                    else { return nil }
                    rest.removeFirst(4)
                    value.append(decoded)
                default: value.append(escaped)
                }
            }
            return nil
        }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\n" { text.removeFirst() }
        while text.last == " " || text.last == "\n" { text.removeLast() }
        return text
    }
}

/// What a dconf write touched, from its `ca.desrt.dconf.Writer.Notify` signal (`prefix`, the
/// changed paths relative to it; a path ending in `/` is a whole directory, as a reset of one
/// sends), for the settings the service reads.
package struct DconfChange: Equatable, Sendable {
    /// `org.gnome.desktop.sound` changed.
    package var desktopSound = false
    /// A key of `org.sigxcpu.feedbackd` itself changed.
    package var feedbackd = false
    /// The per-app directories (munged app ids) whose level changed.
    package var apps: Set<String> = []
    /// Every per-app level may have changed (a write to a directory above them).
    package var allApps = false

    /// Where dconf keeps `org.gnome.desktop.sound`.
    static let desktopSoundPath = "/org/gnome/desktop/sound/"

    /// Nothing touched.
    package init() {}

    /// The change a signal with `prefix` and `changes` describes; at most `limit` paths are read.
    package init(prefix: String, changes: [String], limit: Int = 256) {
        for change in (changes.isEmpty ? [""] : changes).prefix(limit) {
            note(prefix + change)
        }
    }

    /// Whether the service reads anything it touched.
    package var isEmpty: Bool { self == DconfChange() }

    /// Everything either change touched.
    package mutating func formUnion(_ other: DconfChange) {
        desktopSound = desktopSound || other.desktopSound
        feedbackd = feedbackd || other.feedbackd
        apps.formUnion(other.apps)
        allApps = allApps || other.allApps
    }

    private mutating func note(_ path: String) {
        // A path is touched when it is the key or directory itself, inside it, or a directory
        // above it.
        func touches(_ directory: String) -> Bool { path.hasPrefix(directory) || directory.hasPrefix(path) }
        if touches(Self.desktopSoundPath) { desktopSound = true }
        let apps = FeedbackdSettings.appDirectory
        guard touches(FeedbackdSettings.directory) else { return }
        if path.hasPrefix(apps) {
            let app = path.dropFirst(apps.count).prefix { $0 != "/" }
            if app.isEmpty { allApps = true } else { self.apps.insert(String(app)) }
        } else {
            if apps.hasPrefix(path) { allApps = true }
            feedbackd = true
        }
    }
}
