@testable import FeedbackServices
import FeedbackTestSupport
import Synchronization
import Testing

extension AudioServerSuites {
    /// `PlaybackHandle.whenHeard` on a real server: the instant each engine route reckons a sound's
    /// first frame reaches the device, against when its server's monitor delivered that frame to
    /// the recorder (`MonitorRecorder.arrivalTime(ofFrame:)`). What a vibration meant to be felt
    /// with its sound starts by (the VM measures it against a real vibrator: alsa-vibration-skew).
    @Suite(
        .serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"),
        .shutsDownSoundServers(named: EngineRoute.serverNames("onset")))
    struct OnsetServerTests {
        @Test(arguments: EngineRoute.testable)
        func theReckonedOnsetIsWhenTheServerPlaysTheSound(_ route: EngineRoute) throws {
            // 20 beeps, one at a time: each one's reckoned onset against its monitor arrival.
            let server = try route.server(named: "onset")
            let output = route.output(on: server)
            try output.prepare(timeout: 2)
            let beep = Signal.buffer(Signal.sines([1_000], amplitude: 0.5, seconds: 0.04, rate: 48_000), channels: 1, rate: 48_000)
            var reckoned: [Double] = []
            var called: [Double] = []
            for _ in 0..<20 {
                let mark = server.recorder.frameCount
                let onset = Lock<Double??>(nil)
                let ends = EndRecorder()
                let call = MonotonicClock.now
                let handle = output.play(beep, completion: ends.completion)
                handle.whenHeard { time in onset.withLock { $0 = .some(time) } }
                #expect(ends.wait()?.end == .finished)
                let frame = try #require(server.recorder.firstSound(after: mark, timeout: 1), "nothing reached the server")
                let arrival = try #require(server.recorder.arrivalTime(ofFrame: frame))
                let heard = try #require(onset.withLock { $0 }, "no answer by the end")
                let time = try #require(heard, "the engine route did not reckon the onset")
                reckoned.append((arrival - time) * 1_000)
                called.append((arrival - call) * 1_000)
                server.recorder.wait(seconds: 0.03)
            }
            // Measured here (ms, median): PulseAudio −2.5 (the reckoning adds the null sink's
            // reported latency, which its monitor does not wait for), the play call −0.8 (a
            // rewrite at the read position); pipewire-pulse 2.2, the call 24.5; PipeWire 0.1, the
            // call 9.8.
            let errors = reckoned.map(abs).sorted()
            let waits = called.map(abs).sorted()
            let describe = "arrival − reckoned onset \(reckoned.sorted().map { Int($0 * 10) }), − play call \(called.sorted().map { Int($0 * 10) }) (0.1 ms)"
            #expect(errors[errors.count / 2] <= 5, "\(describe)")
            if route != .pulseAudio {
                // Behind a queue the play call is no guide; the reckoning is.
                #expect(errors[errors.count / 2] * 3 < waits[waits.count / 2], "\(describe)")
            }
        }
    }
}
