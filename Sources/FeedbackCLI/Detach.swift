import FeedbackServices
import Glibc
import Synchronization

/// `--no-wait` for commands that play: the sound must outlive this process, so the command starts
/// a copy of itself in a new session (its own process group, stdio on /dev/null and no other
/// descriptor of its caller's, signals reset) that plays and waits, and returns at once.
enum Detach {
    /// This executable and its arguments, when running as the real `feedbackctl` (set by `main`);
    /// nil in process (tests), where there is nothing to re-run.
    private static let invocation = Lock<(executable: String, arguments: [String])?>(nil)

    static func record(arguments: [String]) {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return }
        let executable = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        invocation.withLock { $0 = (executable, arguments) }
    }

    /// Starts the current command again without `--no-wait`, detached.
    /// - Returns: the new process's ID.
    static func relaunch() throws(CommandError) -> pid_t {
        guard let (executable, arguments) = invocation.withLock({ $0 }) else {
            throw CommandError(message: "--no-wait needs the feedbackctl executable", exitCode: .software)
        }
        // A player that cannot announce itself could not be stopped by `feedbackctl stop`:
        // refuse rather than report "started" for a sound nothing can end.
        if let directory = ActivePlayers.enabledDirectory, let problem = ActivePlayers.prepare(directory) {
            throw CommandError(
                message: "--no-wait: 'feedbackctl stop' could not find the player: \(problem); set XDG_RUNTIME_DIR to a directory of your own",
                exitCode: .noPermission)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in Int32(0)...2 { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        // Nothing else the caller passed down: a pipe held by the player would keep its reader
        // (a shell's `$(…)`, a supervisor) waiting until the sound ends.
        System.closeInheritedDescriptors(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(spawnSetSID | POSIX_SPAWN_SETSIGMASK))
        let argv = ([executable] + arguments.filter { !SoundArguments.noWait.matches($0) && $0 != Option.jsonName }).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard status == 0 else {
            throw CommandError(message: "cannot start the player: \(Errno(rawValue: status))", exitCode: .software)
        }
        // Return only once `feedbackctl stop` can find the player.
        ActivePlayers.waitForAnnouncement(of: pid)
        return pid
    }
}

/// glibc's `POSIX_SPAWN_SETSID` (a GNU extension Swift does not import): start a new session.
private let spawnSetSID: Int32 = 0x80
