import FeedbackServices
import FoundationEssentials
import Glibc

/// What one run of a program produced.
package struct ProcessResult: Sendable {
    /// The exit status, or 128 + the signal that ended it.
    package var status: Int32
    /// What it printed on standard output.
    package var output: String
    /// What it printed on standard error.
    package var errors: String

    /// Creates a result.
    package init(status: Int32, output: String, errors: String) {
        self.status = status
        self.output = output
        self.errors = errors
    }
}

/// The built feedbackctl binary, beside the test bundle in the build directory.
package var feedbackctlBinary: String { builtProduct("feedbackctl") }

/// The built executable `name` (`feedbackctl`, `feedbackservicesd`), beside the test bundle in the
/// build directory.
package func builtProduct(_ name: String) -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(count > 0)
    var directory = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // The test runner may be inside a .xctest bundle directory or beside it.
    while !FileManager.default.isExecutableFile(atPath: directory + "/" + name) && directory.count > 1 {
        directory = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
    }
    return directory + "/" + name
}

/// `base` with each `NAME=value` of `entries` set in it (a later entry wins).
package func merging(_ entries: [String], into base: [String: String]) -> [String: String] {
    var merged = base
    for entry in entries {
        let name = String(entry.prefix { $0 != "=" })
        merged[name] = String(entry.dropFirst(name.count + 1))
    }
    return merged
}

/// Runs a program to completion and collects its status and output; `environment` entries
/// (`NAME=value`) are added to this process's environment; `interruptAfter` sends SIGINT after
/// that many seconds.
package func runProcess(
    _ path: String, _ arguments: [String], environment: [String] = [], interruptAfter: Double? = nil
) -> ProcessResult {
    let merged = merging(environment, into: ProcessInfo.processInfo.environment)
    let child: ChildProcess
    do {
        child = try ChildProcess(path, arguments, environment: merged, watched: false)
    } catch {
        preconditionFailure("cannot run \(path): \(error)")
    }
    if let interruptAfter {
        usleep(UInt32(interruptAfter * 1_000_000))
        child.signal(SIGINT)
    }
    let status = child.wait()
    return ProcessResult(status: status, output: child.output, errors: child.errors)
}

/// Runs `pactl --server=SERVER ARGUMENTS` every 20 ms until its standard output satisfies
/// `satisfied` or `timeout` seconds have passed. Each run is bounded to 2 s: a server that hangs
/// (SIGSTOPped) answers nothing, and that run is killed, not waited for. `environment` entries
/// (`NAME=value`) are added to this process's environment.
/// - Returns: whether a run satisfied it, and the last run's output and errors (for the message).
package func waitForPactl(
    server: String, _ arguments: [String], environment: [String] = [], timeout: Double,
    until satisfied: (String) -> Bool
) -> (satisfied: Bool, last: String) {
    let merged = merging(environment, into: ProcessInfo.processInfo.environment)
    let deadline = MonotonicClock.now + timeout
    var last = ""
    repeat {
        if let child = try? ChildProcess("/usr/bin/pactl", ["--server=\(server)"] + arguments, environment: merged, watched: false) {
            let status = child.wait(timeout: 2)
            if status == 0, satisfied(child.output) { return (true, child.output) }
            last = child.output + child.errors + (status == nil ? "(pactl did not answer within 2 s)" : "")
        } else {
            last = "cannot run /usr/bin/pactl"
        }
        usleep(20_000)
    } while MonotonicClock.now < deadline
    return (false, last)
}

/// A program started for a test: its standard input held open when asked (a pipe the test
/// closes), its standard output and error in files. Killed (SIGKILL) and reaped when released if
/// it still runs, and, when `watched`, by a watchdog if the test run dies first.
///
/// Thread safety: one test at a time uses a child (see the locking rule).
package final class ChildProcess: @unchecked Sendable {
    // Locking rule: `status` and `stdinFD` change only in the owning test's calls, one at a time.
    /// Its process ID.
    package let pid: Int32
    private let directory = TemporaryDirectory()
    private var stdinFD: Int32 = -1
    private var status: Int32?

    /// Starts `path` with exactly `environment`.
    /// - Throws: `TestFailure` when it cannot be started.
    package init(
        _ path: String, _ arguments: [String], environment: [String: String], holdStdin: Bool = false,
        watched: Bool = true
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeFDs: [Int32] = [-1, -1]
        if holdStdin {
            guard pipe(&pipeFDs) == 0 else { throw TestFailure("pipe failed: \(Errno.current)") }
            // Other children started meanwhile must not hold the write end (stdin would never close).
            for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, directory.file("out"), O_WRONLY | O_CREAT, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, directory.file("err"), O_WRONLY | O_CREAT, 0o600)
        System.closeInheritedDescriptors(&actions)
        // A child of a pool thread would inherit its blocked signals; start it as a shell would.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        if holdStdin { close(pipeFDs[0]) }
        guard result == 0 else {
            if holdStdin { close(pipeFDs[1]) }
            throw TestFailure("cannot start \(path): \(Errno(rawValue: result))")
        }
        self.pid = pid
        stdinFD = holdStdin ? pipeFDs[1] : -1
        if watched { killWhenTestsEnd(pid) }
    }

    deinit {
        closeStdin()
        if status == nil {
            kill(pid, SIGKILL)
            _ = try? System.waitpid(pid)
        }
    }

    /// Closes its standard input (fbcli, for one, then ends its feedback).
    package func closeStdin() {
        if stdinFD >= 0 { close(stdinFD) }
        stdinFD = -1
    }

    /// Sends it `signal`, unless it has ended and been reaped: its process ID may then be
    /// another process's (IDs wrap at 32,768 here, within one test run).
    package func signal(_ signal: Int32) {
        guard status == nil else { return }
        kill(pid, signal)
    }

    /// Its exit status (128 + the signal that ended it), waiting for it to end.
    package func wait() -> Int32 {
        if let status { return status }
        let raw = (try? System.waitpid(pid))?.status ?? 0
        return record(raw)
    }

    /// Its exit status (128 + the signal that ended it), waiting up to `timeout` seconds; nil if it
    /// still runs then.
    @discardableResult
    package func wait(timeout: Double) -> Int32? {
        if let status { return status }
        let deadline = MonotonicClock.now + timeout
        repeat {
            if let (ended, raw) = try? System.waitpid(pid, options: WNOHANG), ended == pid { return record(raw) }
            usleep(2_000)
        } while MonotonicClock.now < deadline
        return nil
    }

    /// What it wrote to standard output so far.
    package var output: String { read("out") }
    /// What it wrote to standard error so far.
    package var errors: String { read("err") }

    /// Waits until its standard output has a whole line (one ended by a newline) containing
    /// `text`; returns that line. Never part of one: `python3 -u` writes each argument of a
    /// `print` on its own, so "ended 1" can be read before " finished played\n" is written.
    package func waitForOutput(containing text: String, timeout: Double) -> String? {
        let deadline = MonotonicClock.now + timeout
        repeat {
            let output = output
            let whole = output.lastIndex(of: "\n").map { output[...$0] } ?? ""
            if let line = whole.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            usleep(5_000)
        } while MonotonicClock.now < deadline
        return nil
    }

    private func record(_ raw: Int32) -> Int32 {
        let exited = (raw & 0x7f) == 0
        let value = exited ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        status = value
        return value
    }

    private func read(_ name: String) -> String {
        String(decoding: FileManager.default.contents(atPath: directory.file(name)) ?? Data(), as: UTF8.self)
    }
}
