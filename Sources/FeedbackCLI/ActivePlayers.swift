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
/// with one line saying what it plays, and an exclusive `flock` on it for as long as it runs. A
/// player announces itself first thing, before it looks up or decodes anything, so `stop` finds
/// it as soon as it exists (a `--no-wait` parent returns only once its player has announced). The
/// lock is what makes an entry live: the kernel drops it when the process ends however it ends,
/// so a file whose lock can be taken belongs to a dead process and is removed, and a process that
/// merely has a recycled ID is not signalled (short of the ID being reused in the microseconds
/// between `stop`'s lock check and its signal).
enum ActivePlayers {
    private static let enabled = Mutex<(directory: String, what: String)?>(nil)
    private static let current = Mutex<(fd: Int32, path: String)?>(nil)

    /// Lets this process announce itself when it plays (called by `main`; in-process runs, as in
    /// tests, never announce themselves).
    static func enable(arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) {
        let what = (["feedbackctl"] + arguments.filter { !SoundArguments.noWait.matches($0) }).joined(separator: " ")
        enabled.withLock { $0 = (directory(environment: environment), what) }
    }

    /// The directory this process announces itself in, once `enable` was called.
    static var enabledDirectory: String? { enabled.withLock { $0?.directory } }

    /// Waits (at most `timeout` seconds) until the player `pid`, a child of this process, has
    /// announced itself or has ended; returns at once when announcements cannot be made here.
    static func waitForAnnouncement(of pid: pid_t, timeout: Double = 2) {
        guard let directory = enabledDirectory, prepare(directory) else { return }
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
            prepare(directory)
        else { return }
        // Written and locked under a temporary name, then renamed: `stop` never sees the file unlocked.
        let path = "\(directory)/\(getpid())"
        let temporary = "\(directory)/.\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let line = Array((what + "\n").utf8)
        guard flock(fd, LOCK_EX | LOCK_NB) == 0, line.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == line.count,
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

    /// The live players in `directory`; files of players that have ended are removed on the way.
    /// A directory that is not the user's own (0700, owned by them, not a symlink) holds none.
    static func players(in directory: String) -> [Player] {
        guard isPrivate(directory), let stream = opendir(directory) else { return [] }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let pid = pid_t(name), pid > 0 { names.append(name) }
        }
        closedir(stream)
        var found: [Player] = []
        for name in names.sorted(by: { Int($0)! < Int($1)! }) {
            let path = "\(directory)/\(name)"
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_uid == getuid() else { continue }
            if flock(fd, LOCK_SH | LOCK_NB) == 0 {
                // Nobody holds it: that player is gone. Remove it unless a new player of the same
                // ID has just renamed its own file into place.
                var current = stat()
                if stat(path, &current) == 0 && current.st_ino == info.st_ino && current.st_dev == info.st_dev {
                    unlink(path)
                }
                continue
            }
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            let what = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self)
                .split(separator: "\n").first.map(String.init) ?? ""
            found.append(Player(pid: pid_t(name)!, what: what))
        }
        return found
    }

    /// Whether the player `pid` in `directory` still runs (holds its lock).
    static func isRunning(_ pid: pid_t, in directory: String) -> Bool {
        let fd = open("\(directory)/\(pid)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_SH | LOCK_NB) != 0
    }

    /// Makes the directory (0700) and checks that it is ours and not open to others.
    static func prepare(_ directory: String) -> Bool {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return false }
        return isPrivate(directory)
    }

    /// Whether `directory` is a real directory (not a symlink) owned by this user, closed to others.
    private static func isPrivate(_ directory: String) -> Bool {
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_uid == getuid(), info.st_mode & 0o077 == 0 else { return false }
        return (info.st_mode & 0o170000) == 0o040000
    }
}
