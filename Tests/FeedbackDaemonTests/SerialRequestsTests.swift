import FeedbackDaemon
import FeedbackServices
import Glibc
import Synchronization
import Testing

/// The daemon's SIGHUP reloads: one at a time, and the last one after the last request.
struct SerialRequestsTests {
    final class Shared: Sendable {
        /// Runs under way, the most seen at once, runs started, and when the last run started.
        let state = Lock((running: 0, most: 0, runs: 0, lastStart: 0.0))
        /// When the last request was made.
        let lastRequest = Lock(0.0)
    }

    @Test func runsOneAtATimeAndTheLastRunFollowsTheLastRequest() throws {
        let requests = SerialRequests(threadName: "fbs-test-serial")
        let shared = Shared()
        let work: @Sendable () -> Void = {
            shared.state.withLock {
                $0.running += 1
                $0.most = max($0.most, $0.running)
                $0.runs += 1
                $0.lastStart = MonotonicClock.now
            }
            usleep(5_000)
            shared.state.withLock { $0.running -= 1 }
        }
        // Four threads asking 50 times each, as fast as they can.
        let threads = try (0..<4).map { _ in
            try startThread(name: "fbs-test-asker") {
                for _ in 0..<50 {
                    let asked = MonotonicClock.now
                    requests.request(work)
                    shared.lastRequest.withLock { $0 = max($0, asked) }
                    usleep(200)
                }
            }
        }
        threads.forEach { $0.join() }
        let deadline = MonotonicClock.now + 5
        // Quiet: no run under way for 50 ms.
        var quietSince = MonotonicClock.now
        while MonotonicClock.now - quietSince < 0.05 && MonotonicClock.now < deadline {
            if shared.state.withLock({ $0.running > 0 }) { quietSince = MonotonicClock.now }
            usleep(1_000)
        }
        let seen = shared.state.withLock { $0 }
        #expect(seen.most == 1, "runs overlapped")
        #expect(seen.runs >= 2 && seen.runs < 200, "requests during a run fold into one: \(seen.runs) runs")
        #expect(seen.lastStart >= shared.lastRequest.withLock { $0 }, "a run started after the last request")
        requests.request(work)
        let again = MonotonicClock.now
        while shared.state.withLock({ $0.lastStart < again }) && MonotonicClock.now < deadline { usleep(1_000) }
        #expect(shared.state.withLock { $0.runs } == seen.runs + 1, "an idle request runs at once")
    }
}
