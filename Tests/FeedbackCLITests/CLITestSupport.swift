import Dispatch
import Foundation
import Glibc
import Synchronization

import FeedbackServices

@testable import FeedbackCLI

/// What one run of feedbackctl produced.
struct CommandResult: Sendable {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs feedbackctl in process.
func feedbackctl(_ arguments: String...) -> CommandResult {
    feedbackctl(arguments)
}

func feedbackctl(_ arguments: [String]) -> CommandResult {
    var output = ""
    var errors = ""
    let status = FeedbackCommand.run(arguments: arguments, output: &output, errors: &errors)
    return CommandResult(status: status, output: output, errors: errors)
}

/// Runs feedbackctl in process with `environment` added to (and overriding) this process's.
func feedbackctl(_ arguments: [String], environment: [String: String]) -> CommandResult {
    var output = ""
    var errors = ""
    let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let status = FeedbackCommand.run(arguments: arguments, environment: merged, output: &output, errors: &errors)
    return CommandResult(status: status, output: output, errors: errors)
}

/// The built feedbackctl binary, beside the test bundle in the build directory.
var feedbackctlBinary: String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(count > 0)
    var directory = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // The test runner may be inside a .xctest bundle directory or beside it.
    while !FileManager.default.isExecutableFile(atPath: directory + "/feedbackctl") && directory.count > 1 {
        directory = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
    }
    return directory + "/feedbackctl"
}

/// Runs a program to completion and collects its status and output; `environment` entries
/// (`NAME=value`) are added to this process's environment; `interruptAfter` sends SIGINT after
/// that many seconds.
func runProcess(
    _ path: String, _ arguments: [String], environment: [String] = [], interruptAfter: Double? = nil
) -> CommandResult {
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
    return CommandResult(status: exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output: read("out"), errors: read("err"))
}

/// Writes 10 s of quiet sound to `path`: long enough to be still playing when a test stops it.
func writeLongSound(to path: String) throws {
    let tone = try SoundDecoder().decode(samples: [Float](repeating: 0.1, count: 48_000 * 10), sampleRate: 48_000, channelCount: 1)
    try SoundFileWriter.write(tone, to: path, format: .wav16)
}

/// Runs `body` on a thread of its own (not the test's cooperative pool, which a blocking wait
/// could fill); the returned function waits for its result.
func inBackground<T: Sendable>(_ body: @escaping @Sendable () -> T) -> () -> T {
    let result = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }
    return {
        done.wait()
        done.signal()
        return result.withLock { $0! }
    }
}

/// The repository's root, from this file's path.
let repositoryRoot: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path
}()

/// A private PulseAudio server started with the project's own `scripts/private-pulseaudio`,
/// shared by the CLI tests and stopped when the test process exits.
enum PrivateSoundServer {
    private static let started = Mutex<String?>(nil)

    /// `PULSE_SERVER` for the server.
    static func address() throws -> String {
        try started.withLock { address in
            if let address { return address }
            let directory = "/tmp/feedbackctl-pulse-\(getpid())"
            let result = runProcess(
                "/bin/bash", ["\(repositoryRoot)/scripts/private-pulseaudio", "--until-exit", "\(getpid())", directory])
            guard result.status == 0 else { throw CLITestFailure("private-pulseaudio failed: \(result.errors)") }
            let server = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            address = server
            atexit {
                let directory = "/tmp/feedbackctl-pulse-\(getpid())"
                if let pid = (try? String(contentsOfFile: "\(directory)/pid", encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                    kill(pid, SIGKILL)
                }
                try? FileManager.default.removeItem(atPath: directory)
            }
            return server
        }
    }
}

struct CLITestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
