import Dispatch
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

@Suite(.serialized) struct EngineSmokeTests {
    @Test func playsAndFinishes() throws {
        let server = try PulseAudioTestServer.shared()
        let output = PulseAudioOutput(configuration: .init(server: server.server))
        try output.prepare()
        server.recorder.wait(seconds: 0.2)
        let mark = server.recorder.frameCount
        let tone = Signal.buffer(Signal.sines([1000], amplitude: 0.5, seconds: 0.3, rate: 48_000), channels: 1, rate: 48_000)
        let ends = Mutex<[PlaybackEnd]>([])
        let done = DispatchSemaphore(value: 0)
        let start = monotonicSeconds()
        output.play(tone, options: PlaybackOptions()) { end in
            ends.withLock { $0.append(end) }
            done.signal()
        }
        let returned = monotonicSeconds()
        #expect(done.wait(timeout: .now() + 3) == .success)
        let finished = monotonicSeconds()
        let first = try #require(server.recorder.firstSound(after: mark))
        let onset = try #require(server.recorder.arrivalTime(ofFrame: first))
        print("play returned in \((returned - start) * 1e6) µs; onset \((onset - start) * 1000) ms; finished after \((finished - start) * 1000) ms; stats \(output.statistics)")
        #expect(ends.withLock { $0 } == [.finished])
    }
}
