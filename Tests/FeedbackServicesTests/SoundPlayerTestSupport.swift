import Foundation
import Testing
import Glibc
import Synchronization

@testable import FeedbackServices

/// Private PulseAudio servers for the player suites, one per suite name: each has its own null
/// sink and recording, so the player suites and `EngineTests` can run side by side without hearing
/// each other.
enum PlayerTestServers {
    private static let servers = Mutex<[String: PulseAudioTestServer]>([:])

    /// The server for `suite`, started on first use and killed when the test process exits.
    static func server(for suite: String) throws -> PulseAudioTestServer {
        try servers.withLock { servers in
            if let server = servers[suite] { return server }
            let server = PulseAudioTestServer()
            try server.start()
            if servers.isEmpty {
                atexit {
                    // The servers and recorders must not outlive the test run.
                    PlayerTestServers.servers.withLock { $0.values.forEach { $0.kill() } }
                }
            }
            servers[suite] = server
            return server
        }
    }
}

/// Observes `SoundDidFinishPlayingNotification` for one sound and counts the ends.
final class FinishObserver: @unchecked Sendable {
    // Locking rule: `token` is set in init and read in deinit only; `ends` is its own lock.
    private final class Ends: Sendable {
        let values = Mutex<[Bool]>([])
    }

    private let ends = Ends()
    private let token: any NSObjectProtocol

    init(_ sound: Sound) {
        let ends = self.ends
        token = NotificationCenter.default.addObserver(
            forName: SoundDidFinishPlayingNotification, object: sound, queue: nil
        ) { notification in
            let didFinish = notification.userInfo?[Sound.didFinishUserInfoKey] as? Bool ?? false
            ends.values.withLock { $0.append(didFinish) }
        }
    }

    deinit {
        NotificationCenter.default.removeObserver(token)
    }

    /// The ends so far (true: natural end).
    var all: [Bool] { ends.values.withLock { $0 } }

    /// Waits until `count` ends have been seen; false on time-out.
    func wait(for count: Int, timeout: Double = 5) -> Bool {
        let deadline = monotonicSeconds() + timeout
        while all.count < count {
            if monotonicSeconds() > deadline { return false }
            usleep(2_000)
        }
        return true
    }
}

/// The process's resident memory in bytes (`/proc/self/statm`, second field, in pages).
func residentMemory() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Runs `pactl` against `server` and returns its standard output.
func pactl(_ server: PulseAudioTestServer, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/pactl")
    process.arguments = ["--server=\(server.server)"] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// Levels of a recording in windows of `window` frames: mean square of each.
func windowPowers(_ samples: [Float], window: Int) -> [Double] {
    stride(from: 0, to: samples.count - window + 1, by: window).map { start in
        samples[start..<(start + window)].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window)
    }
}

/// Runs the suites that record a sound server one at a time, across suites.
///
/// `.serialized` orders the tests inside one suite only. Suites that record real-time output on
/// their own servers still compete for two shared cores when they run side by side: the servers
/// then under-run, and the recordings get gaps that no engine could avoid (measured: a 10 ms gap
/// in a crossfade, a fade-in 11 ms long). The gate is a suite trait, so a whole suite holds it.
struct AudioServerGate: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Self.lock.acquire()
        do {
            try await function()
        } catch {
            await Self.lock.release()
            throw error
        }
        await Self.lock.release()
    }

    private static let lock = AsyncGate()
}

extension Trait where Self == AudioServerGate {
    /// Holds the process-wide audio-server gate while the suite runs.
    static var audioServerGate: Self { AudioServerGate() }
}

/// A first-come, first-served lock for async code.
actor AsyncGate {
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !held {
            held = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty {
            held = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
