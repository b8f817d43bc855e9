import Dispatch
import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

extension AudioServerSuites {
    /// libcanberra against a real PulseAudio server: what it played is recorded from the monitor.
    @Suite(
        .serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"),
        .shutsDownSoundServers(named: ["canberra"]))
    struct CanberraOutputTests {
        let cache = TemporaryDirectory()

        /// This suite's server of `kind` (PulseAudio, or PipeWire through pipewire-pulse) and
        /// libcanberra playing to it.
        func rig(_ kind: SoundServerKind) throws -> (server: any SoundTestServer, output: CanberraOutput) {
            let server = try kind.shared(named: "canberra")
            // libcanberra's PulseAudio backend connects to the default server, which PULSE_SERVER names.
            setenv("PULSE_SERVER", server.server, 1)
            return (server, try CanberraOutput(cacheDirectory: cache.file("cache")))
        }

        /// `body` measured again on PipeWire while `acceptable` rejects its result
        /// (`measuredAgainAfterUnderflows(on:)`; libcanberra reports no underflows of its own). On
        /// PulseAudio nothing is measured again, so a second attempt of the first, uncached play,
        /// which is a play from the cache, cannot hide a fault of the uncached path there.
        func measured<Result>(
            on kind: SoundServerKind, acceptable: @escaping (Result) -> Bool, _ body: () throws -> Result
        ) throws -> Result {
            try measuredAgainAfterUnderflows(on: kind, underflows: { 0 }, acceptable: acceptable, body)
        }

        func chirp() -> PCMBuffer {
            let frames = 14_400
            return Signal.buffer((0..<frames).map { frame in
                let t = Double(frame) / 48_000
                return Float(0.4 * min(1, t * 50, (0.3 - t) * 50) * sin(2 * .pi * (300 * t + 1_500 * t * t)))
            }, channels: 1, rate: 48_000)
        }

        @Test(arguments: SoundServerKind.testable)
        func playsAFileAndTheRecordingMatches(_ kind: SoundServerKind) throws {
            let (server, output) = try rig(kind)
            let sound = chirp()
            let path = cache.file("chirp.wav")
            try SoundFileWriter.write(sound, to: path, format: .wav16)
            let (ends, match) = try measured(on: kind, acceptable: { $0.1.value >= 0.99 }) {
                let mark = server.recorder.frameCount
                let ends = EndRecorder()
                output.play(fileAt: path, completion: ends.completion)
                _ = ends.wait()
                let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
                return (ends, Analysis.bestCorrelation(sound.samples, server.recorder.channel(0, from: onset), lags: -200...200))
            }
            #expect(match.value >= 0.99, "correlation \(match.value)")
            usleep(100_000)
            #expect(ends.all == [.finished])
        }

        @Test(arguments: SoundServerKind.testable)
        func playsABufferThroughTheCacheAndTheSampleCache(_ kind: SoundServerKind) throws {
            let (server, output) = try rig(kind)
            let sound = chirp()
            for _ in 0..<2 {
                let (end, match) = try measured(on: kind, acceptable: { $0.1.value >= 0.99 }) {
                    let mark = server.recorder.frameCount
                    let ends = EndRecorder()
                    output.play(sound, completion: ends.completion)
                    let end = ends.wait()?.end
                    let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
                    return (end, Analysis.bestCorrelation(sound.samples, server.recorder.channel(1, from: onset), lags: -200...200))
                }
                #expect(end == .finished)
                #expect(match.value >= 0.99, "correlation \(match.value)")
            }
            let cached = try FileManager.default.contentsOfDirectory(atPath: cache.file("cache"))
            #expect(cached == ["feedbackservices-\(CanberraOutput.fingerprint(sound)).wav"], "written once, as WAV")
        }

        @Test(arguments: SoundServerKind.testable)
        func stopCancelsAndReportsOnce(_ kind: SoundServerKind) throws {
            let (_, output) = try rig(kind)
            let long = Signal.buffer(Signal.sines([500], amplitude: 0.2, seconds: 3, rate: 48_000), channels: 1, rate: 48_000)
            let ends = EndRecorder()
            let handle = output.play(long, completion: ends.completion)
            usleep(300_000)
            handle.stop()
            handle.stop()
            #expect(ends.wait()?.end == .stopped)
            usleep(300_000)
            #expect(ends.all == [.stopped])
        }

        /// A play's media role goes with it (`media.role`): libcanberra makes a stream per play.
        /// The play runs to its end: cancelled after pactl had listed it, on pipewire-pulse 0.3.65,
        /// the next libcanberra context of the suite was refused ("Not available") in 5 of 8 runs
        /// beside two busy loops (0 of 5 played to the end; 0 of 6 without this test). Not
        /// root-caused; `stopCancelsAndReportsOnce` covers the cancel.
        @Test(arguments: SoundServerKind.testable)
        func aPlaysMediaRoleReachesTheServer(_ kind: SoundServerKind) throws {
            let (server, output) = try rig(kind)
            let long = Signal.buffer(Signal.sines([450], amplitude: 0.2, seconds: 2, rate: 48_000), channels: 1, rate: 48_000)
            let ends = EndRecorder()
            output.play(long, options: PlaybackOptions(mediaRole: "alarm"), completion: ends.completion)
            let listing = waitForPactl(server: server.server, ["list", "sink-inputs"], timeout: 2) {
                $0.contains("media.role = \"alarm\"")
            }
            #expect(listing.satisfied, "\(listing.last)")
            #expect(ends.wait()?.end == .finished)
        }

        @Test(arguments: SoundServerKind.testable)
        func aFileLibcanberraCannotReadFailsOnce(_ kind: SoundServerKind) throws {
            let (_, output) = try rig(kind)
            let ends = EndRecorder()
            output.play(fileAt: "/nonexistent/sound.wav", completion: ends.completion)
            guard case .failed(let error) = ends.wait()?.end else {
                Issue.record("expected .failed")
                return
            }
            guard case .canberra = error.reason else {
                Issue.record("expected a libcanberra error, got \(error)")
                return
            }
            usleep(100_000)
            #expect(ends.all.count == 1)
        }

        @Test(arguments: SoundServerKind.testable)
        func volumeIsSentInDecibels(_ kind: SoundServerKind) throws {
            let (server, output) = try rig(kind)
            let tone = Signal.buffer(Signal.sines([800], amplitude: 0.4, seconds: 0.3, rate: 48_000), channels: 1, rate: 48_000)
            let mark = server.recorder.frameCount
            let ends = EndRecorder()
            output.play(tone, options: PlaybackOptions(volume: 0.5), completion: ends.completion)
            #expect(ends.wait()?.end == .finished)
            let onset = try #require(server.recorder.firstSound(after: mark, threshold: 0.005))
            let middle = server.recorder.channel(0, from: onset, frames: 2_400..<9_600)
            let level = Analysis.amplitude(of: 800, in: middle, rate: 48_000)
            // Measured: pipewire-pulse 0.3.65 plays libcanberra's sounds at full level whatever
            // volume the play asks for (heard 0.4 for 0.4 × 0.5).
            withKnownIssue("pipewire-pulse ignores libcanberra's volume") {
                #expect(abs(level - 0.2) < 0.02, "heard amplitude \(level) for 0.4 × 0.5")
            } when: {
                kind == .pipeWire
            }
        }
    }
}
