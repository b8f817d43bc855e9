import Dispatch
import Foundation
import Glibc
import Synchronization

import FeedbackServices
import FeedbackTestSupport

@testable import FeedbackCLI

/// What one run of feedbackctl produced, in process or as a process.
typealias CommandResult = ProcessResult

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

/// Writes 10 s of quiet sound to `path`: long enough to be still playing when a test stops it.
func writeLongSound(to path: String) throws {
    let tone = try SoundDecoder().decode(samples: [Float](repeating: 0.1, count: 48_000 * 10), sampleRate: 48_000, channelCount: 1)
    try SoundFileWriter.write(tone, to: path, format: .wav16)
}

/// A runtime directory of the test's own (`/tmp/feedbackctl-NAME-PID`) holding a ten-second sound
/// (`writeLongSound`), and the environment of a player there: the PulseAudio at `server` and that
/// directory as `XDG_RUNTIME_DIR`. The caller removes `runtime`.
func longSoundRuntime(_ name: String, server: String) throws -> (runtime: String, source: String, environment: [String]) {
    let runtime = "/tmp/feedbackctl-\(name)-\(getpid())"
    mkdir(runtime, 0o700)
    let source = "\(runtime)/long.wav"
    try writeLongSound(to: source)
    return (runtime, source, ["PULSE_SERVER=\(server)", "XDG_RUNTIME_DIR=\(runtime)"])
}

/// Sends `child` SIGTERM and waits up to 5 s for it to end.
/// - Returns: its exit status (nil if it did not end) and the seconds it took.
func terminate(_ child: ChildProcess) -> (status: Int32?, seconds: Double) {
    let signalled = MonotonicClock.now
    child.signal(SIGTERM)
    let status = child.wait(timeout: 5)
    return (status, MonotonicClock.now - signalled)
}

/// Runs `body` on a thread of its own (not the test's cooperative pool, which a blocking wait
/// could fill); the returned function waits for its result.
func inBackground<T: Sendable>(_ body: @escaping @Sendable () -> T) -> () -> T {
    let result = Lock<T?>(nil)
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
    private static let started = Lock<String?>(nil)

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
