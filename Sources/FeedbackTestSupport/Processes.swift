import FeedbackServices
import FoundationEssentials
import Glibc

/// What one run of a program produced.
public struct ProcessResult: Sendable {
    /// The exit status, or 128 + the signal that ended it.
    public var status: Int32
    /// What it printed on standard output.
    public var output: String
    /// What it printed on standard error.
    public var errors: String

    /// Creates a result.
    public init(status: Int32, output: String, errors: String) {
        self.status = status
        self.output = output
        self.errors = errors
    }
}

/// The built feedbackctl binary, beside the test bundle in the build directory.
public var feedbackctlBinary: String { builtProduct("feedbackctl") }

/// The built executable `name` (`feedbackctl`, `feedbackservicesd`), beside the test bundle in the
/// build directory.
public func builtProduct(_ name: String) -> String {
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

/// Runs a program to completion and collects its status and output; `environment` entries
/// (`NAME=value`) are added to this process's environment; `interruptAfter` sends SIGINT after
/// that many seconds.
public func runProcess(
    _ path: String, _ arguments: [String], environment: [String] = [], interruptAfter: Double? = nil
) -> ProcessResult {
    let directory = "/tmp/feedbackctl-run-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    mkdir(directory, 0o700)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, directory + "/out", O_WRONLY | O_CREAT, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, directory + "/err", O_WRONLY | O_CREAT, 0o600)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let names = Set(environment.map { $0.prefix { $0 != "=" } })
    let inherited = ProcessInfo.processInfo.environment.filter { !names.contains(Substring($0.key)) }
    let envp = (inherited.map { "\($0.key)=\($0.value)" } + environment).map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
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
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    precondition(spawned == 0, "cannot run \(path): \(Errno(rawValue: spawned))")
    if let interruptAfter {
        usleep(UInt32(interruptAfter * 1_000_000))
        kill(pid, SIGINT)
    }
    let status = (try? System.waitpid(pid))?.status ?? 0
    let read = { (name: String) in
        String(decoding: FileManager.default.contents(atPath: "\(directory)/\(name)") ?? Data(), as: UTF8.self)
    }
    let exited = (status & 0x7f) == 0
    return ProcessResult(status: exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output: read("out"), errors: read("err"))
}
