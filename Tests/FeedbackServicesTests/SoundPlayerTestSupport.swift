import Foundation
import Testing
import Glibc
import Synchronization

@testable import FeedbackServices
@testable import FeedbackPlayer

/// Private PulseAudio servers for the player suites, one per suite name: each has its own null
/// sink and recording, so the player suites and `EngineTests` never hear each other.
enum PlayerTestServers {
    /// The server for `suite`, started on first use and killed when the test process ends.
    static func server(for suite: String) throws -> PulseAudioTestServer {
        try PulseAudioTestServer.shared(named: "player-\(suite)")
    }
}

/// Observes `SoundDidFinishPlayingNotification` for one sound and counts the ends.
final class FinishObserver: @unchecked Sendable {
    // Locking rule: `token` is set in init and read in deinit only; `ends` is its own lock.
    private final class Ends: Sendable {
        let values = Lock<[Bool]>([])
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
        let deadline = MonotonicClock.now + timeout
        while all.count < count {
            if MonotonicClock.now > deadline { return false }
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

/// Levels of a recording in windows of `window` frames: mean square of each.
func windowPowers(_ samples: [Float], window: Int) -> [Double] {
    stride(from: 0, to: samples.count - window + 1, by: window).map { start in
        samples[start..<(start + window)].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window)
    }
}


/// The suites that play on a real server and assert on its recording. Nested under this one
/// `.serialized` suite they run one at a time: side by side on two cores, their servers under-run
/// and the recordings get gaps no engine could avoid (measured: a 10 ms gap in a crossfade, a
/// fade-in 11 ms long).
@Suite(.serialized) enum AudioServerSuites {}

/// A suite trait: once the suite's tests are done, the shared sound servers it named are shut
/// down, of every kind (`SoundServerKind.shutDownShared(named:)`). A shared server otherwise runs
/// to the end of the test process, its recorder on a 2 ms cycle and, on PipeWire, its graph on
/// real-time threads: under TSan, EngineTests' three servers left behind starved the recordings
/// of the suites after it in the same process (FeedbackManagerTests heard nothing within 0.3 s).
struct ShutsDownSoundServers: SuiteTrait, TestScoping {
    let names: [String]

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        defer {
            for name in names {
                for kind in SoundServerKind.allCases { kind.shutDownShared(named: name) }
            }
        }
        try await function()
    }
}

extension Trait where Self == ShutsDownSoundServers {
    /// Shuts down the shared servers named `names` when the suite ends.
    static func shutsDownSoundServers(named names: [String]) -> Self { Self(names: names) }
}
