import FeedbackServices
import FoundationEssentials
import Glibc
import Synchronization

/// The `feedbackctl` processes that are playing a sound or vibrating right now, so that
/// `feedbackctl stop` can find and stop them (the detached players of `--no-wait` included).
///
/// Each player holds a file named by its process ID in the runtime directory
/// (`$XDG_RUNTIME_DIR/feedbackctl`, else `/tmp/feedbackctl-UID`, mode 0700, owned by the user —
/// checked both when announcing and when `stop` reads it, since anyone may create a name in /tmp)
/// with its start time (`/proc/PID/stat`, field 22) and what it plays, and an exclusive POSIX
/// record lock (`F_SETLK`) on it for as long as it runs. A player announces itself first thing,
/// before it looks up or decodes anything, so `stop` finds it as soon as it exists (a `--no-wait`
/// parent returns only once its player has announced). The lock is what makes an entry live: the
/// kernel drops it when the process ends however it ends, so a file whose lock nobody holds
/// belongs to a dead process and is removed.
///
/// A file is never trusted to name a process to signal: an entry is a player only if the lock on
/// it is held by the process its name gives (`F_GETLK` reports the holder), that process belongs
/// to this user, runs an executable named `feedbackctl` (`/proc/PID/exe`), and started at the time
/// the file records (so a recycled ID is never signalled). Entries are opened with
/// `O_NOFOLLOW | O_NONBLOCK` and must be regular files, so a planted symlink or FIFO is skipped,
/// never followed or waited on.
enum ActivePlayers {
    private static let enabled = Lock<(directory: String, what: String)?>(nil)
    private static let current = Lock<(fd: Int32, path: String)?>(nil)

    /// Lets this process announce itself when it plays (called by `main`; in-process runs, as in
    /// tests, never announce themselves).
    static func enable(arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) {
        // Concatenated, not `joined(separator:)`: the standard library's generic `joined` looks its
        // types up by mangled name at run time, ~3 % of a `fire`'s main thread (perf).
        var what = "feedbackctl"
        for argument in arguments where !SoundArguments.noWait.matches(argument) { what += " " + argument }
        enabled.withLock { $0 = (directory(environment: environment), what) }
    }

    /// The directory this process announces itself in, once `enable` was called.
    static var enabledDirectory: String? { enabled.withLock { $0?.directory } }

    /// Waits (at most `timeout` seconds) until the player `pid`, a child of this process, has
    /// announced itself or has ended; returns at once when announcements cannot be made here.
    static func waitForAnnouncement(of pid: pid_t, timeout: Double = 2) {
        guard let directory = enabledDirectory, prepare(directory) == nil else { return }
        let deadline = MonotonicClock.now + timeout
        while MonotonicClock.now < deadline && !isRunning(pid, in: directory) {
            if (try? System.waitpid(pid, options: WNOHANG))?.pid == pid { return }
            usleep(1_000)
        }
    }

    /// The directory player files live in.
    static func directory(environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/feedbackctl" }
        return "/tmp/feedbackctl-\(getuid())"
    }

    /// Announces that this process plays (its command line) until `leave()` or its end. Best
    /// effort: a runtime directory that cannot be used only means `stop` cannot find this player.
    static func enter() {
        guard let (directory, what) = enabled.withLock({ $0 }), current.withLock({ $0 }) == nil,
            prepare(directory) == nil, let started = processStartTime(getpid())
        else { return }
        // Written and locked under a temporary name, then renamed: `stop` never sees the file unlocked.
        let path = "\(directory)/\(getpid())"
        let temporary = "\(directory)/.\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        let text = Array("\(started)\n\(what)\n".utf8)
        guard fcntl(fd, F_SETLK, &lock) == 0,
            text.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == text.count,
            rename(temporary, path) == 0
        else {
            unlink(temporary)
            close(fd)
            return
        }
        current.withLock { $0 = (fd, path) }
    }

    /// Removes this process's announcement.
    static func leave() {
        guard let (fd, path) = current.withLock({ entry in defer { entry = nil }; return entry }) else { return }
        unlink(path)
        close(fd)
    }

    /// One player found in the directory.
    struct Player: Sendable, Equatable {
        let pid: pid_t
        let what: String
    }

    /// The live players in `directory`; files of players that have ended are removed on the way,
    /// and entries that are not players (see above) are skipped. A directory that is not the
    /// user's own (`directoryProblem`) holds none.
    static func players(in directory: String) -> [Player] {
        guard directoryProblem(directory) == nil, let stream = opendir(directory) else { return [] }
        var pids: [pid_t] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let pid = pid_t(name), pid > 0, String(pid) == name { pids.append(pid) }
        }
        closedir(stream)
        return pids.sorted().compactMap { pid in
            if case .player(let player) = entry(pid, in: directory, removingDead: true) { player } else { nil }
        }
    }

    /// Whether the player `pid` in `directory` still runs (holds its lock, and is the player it was).
    static func isRunning(_ pid: pid_t, in directory: String) -> Bool {
        if case .player = entry(pid, in: directory, removingDead: false) { true } else { false }
    }

    private enum Entry {
        case player(Player)
        /// No file, or a file whose lock nobody holds: that player has ended.
        case gone
        /// A file that does not prove a live `feedbackctl` player: never signalled.
        case notAPlayer
    }

    /// Reads the entry for `pid` with every check the type's documentation lists.
    private static func entry(_ pid: pid_t, in directory: String, removingDead: Bool) -> Entry {
        let path = "\(directory)/\(pid)"
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return errno == ENOENT ? .gone : .notAPlayer }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_uid == getuid(), info.st_mode & S_IFMT == S_IFREG else { return .notAPlayer }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_GETLK, &lock) == 0 else { return .notAPlayer }
        if lock.l_type == Int16(F_UNLCK) {
            // Nobody holds it: that player is gone. Remove it unless a new player of the same ID
            // has just renamed its own file into place.
            var now = stat()
            if removingDead && stat(path, &now) == 0 && now.st_ino == info.st_ino && now.st_dev == info.st_dev {
                unlink(path)
            }
            return .gone
        }
        guard lock.l_pid == pid, ownedByThisUser(pid), isFeedbackctl(pid) else { return .notAPlayer }
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        let lines = buffer.prefix(max(count, 0)).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard lines.count >= 2, let recorded = UInt64(String(decoding: lines[0], as: UTF8.self)),
            recorded == processStartTime(pid)
        else { return .notAPlayer }
        return .player(Player(pid: pid, what: String(decoding: lines[1], as: UTF8.self)))
    }

    private static func ownedByThisUser(_ pid: pid_t) -> Bool {
        var info = stat()
        return stat("/proc/\(pid)", &info) == 0 && info.st_uid == getuid()
    }

    /// Whether `pid` runs an executable named `feedbackctl` (a rebuilt one shows as
    /// `feedbackctl (deleted)`).
    private static func isFeedbackctl(_ pid: pid_t) -> Bool {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return false }
        let path = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        return name == "feedbackctl" || name == "feedbackctl (deleted)"
    }

    /// Makes the directory (0700) if it is missing; returns why it cannot be used, or nil.
    static func prepare(_ directory: String) -> String? {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            return "cannot create \(directory): \(String(cString: strerror(errno)))"
        }
        return directoryProblem(directory)
    }

    /// Why `directory` cannot hold player files, or nil when it is a real directory (not a
    /// symlink) owned by this user and closed to others, or does not exist (no player has made it).
    static func directoryProblem(_ directory: String) -> String? {
        var info = stat()
        guard lstat(directory, &info) == 0 else { return nil }
        if info.st_mode & S_IFMT != S_IFDIR {
            return "\(directory) is not a directory"
        }
        if info.st_uid != getuid() {
            return "\(directory) belongs to user \(info.st_uid), not to this user (\(getuid()))"
        }
        if info.st_mode & 0o077 != 0 {
            return "\(directory) is open to other users (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        }
        return nil
    }
}
