import Dispatch
import FeedbackServices
import FeedbackTestSupport
import Glibc

/// The in-process rows of the first sound on a stream that is just coming to be. Each row
/// makes a new stream the way it comes to be in use — a play issued 0, 1, 5 or 20 ms after the
/// output starts opening, or 0…30 ms after it became ready (the stream held unstarted until its
/// first sound), the first play after the idle close, the first play after the sound
/// server restarted — and times its first sample at the server's monitor from the later of the
/// play call and the moment the stream became ready (before that, nothing can be heard).
struct StreamStartBenchmark {
    let plays: Int

    func run() {
        guard let server = benchmarkServer(for: "stream start") else { return }
        let beep = makeBeep()
        var rows: [(String, Timings)] = []
        for delay in [0, 1, 5, 20] {
            rows.append(("play \(delay) ms after opening starts", Timings(samples: (0..<plays).map { _ in
                server.recorder.wait(seconds: 0.1)
                let output = PulseAudioOutput(configuration: .init(server: server.server))
                if delay > 0 {
                    DispatchQueue.global().async { try? output.prepare() }
                    usleep(UInt32(delay * 1_000))
                }
                return onset(server, output) { output.play(beep) }
            })))
        }
        for delay in [0, 2, 5, 10, 30] {
            rows.append(("play \(delay) ms after the stream is ready", Timings(samples: (0..<plays).map { _ in
                server.recorder.wait(seconds: 0.1)
                let output = PulseAudioOutput(configuration: .init(server: server.server))
                do { try output.prepare() } catch { fatalError("engine: \(error)") }
                if delay > 0 { usleep(UInt32(delay * 1_000)) }
                return onset(server, output) { output.play(beep) }
            })))
        }
        let idle = PulseAudioOutput(configuration: .init(server: server.server, idleTimeout: 0.05))
        rows.append(("first play after the idle close", Timings(samples: (0..<plays).map { _ in
            // Closed when idle: the next play opens a new stream.
            usleep(150_000)
            return onset(server, idle) { idle.play(beep) }
        })))
        let restarts = max(plays / 4, 10)
        let survivor = PulseAudioOutput(configuration: .init(server: server.server))
        rows.append(("first play after the server restarted", Timings(samples: (0..<restarts).map { _ in
            server.recorder.wait(seconds: 0.1)
            _ = onset(server, survivor) { survivor.play(beep) }
            server.recorder.wait(seconds: 0.1)
            server.kill()
            do { try server.restart() } catch { fatalError("the server did not come back: \(error)") }
            return onset(server, survivor) { survivor.play(beep) }
        })))

        print("first sample at the server after the later of the play call and the stream's readiness")
        print("(\(plays) new streams a row, \(restarts) restarts; the queue stays \(Int(PulseAudioOutput.Configuration().bufferDuration * 1000)) ms)")
        for (name, timings) in rows {
            print("  \(padded(name)) \(timings.summary)  \(timings.p99 <= 0.003 ? "meets" : "MISSES") p99 ≤ 3 ms")
        }
    }

    /// Plays with `trigger` and returns the time from the later of the call and the stream's
    /// readiness to the first sample at the monitor.
    private func onset(_ server: PulseAudioTestServer, _ output: PulseAudioOutput, trigger: () -> Void) -> Double {
        let start = MonotonicClock.now
        guard let arrival = server.recorder.arrivalOfFirstSound(after: trigger) else {
            fatalError("a play never reached the server")
        }
        let ready = output.statistics.readyTime ?? start
        return arrival - max(start, ready)
    }

}
