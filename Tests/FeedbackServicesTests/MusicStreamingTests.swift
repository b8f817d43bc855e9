internal import CSndFile
import Foundation
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices
@testable import FeedbackPlayer

/// A 10-minute FLAC, written in chunks so that making it does not itself hold ten minutes in
/// memory: mono 48 kHz, a sine whose frequency says which minute it is (300 Hz + 50 Hz × minute).
enum TenMinuteMusic {
    static let seconds = 600
    static let rate = 48_000

    static func frequency(atMinute minute: Int) -> Double { 300 + 50 * Double(minute) }

    private static let file = Lock<(TemporaryDirectory, String)?>(nil)

    /// The file, written on first use.
    static func path() throws -> String {
        try file.withLock { file in
            if let file { return file.1 }
            let directory = TemporaryDirectory()
            let path = directory.file("ten-minutes.flac")
            var info = SF_INFO()
            info.samplerate = Int32(rate)
            info.channels = 1
            info.format = Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16)
            guard let handle = sf_open(path, Int32(SFM_WRITE), &info) else {
                throw TestFailure("cannot write \(path): \(String(cString: sf_strerror(nil)))")
            }
            defer { sf_close(handle) }
            var chunk = [Float](repeating: 0, count: rate)
            var phase = 0.0
            for second in 0..<seconds {
                let step = 2 * .pi * frequency(atMinute: second / 60) / Double(rate)
                for index in 0..<rate {
                    chunk[index] = Float(0.3 * sin(phase))
                    phase += step
                }
                phase = phase.truncatingRemainder(dividingBy: 2 * .pi)
                guard sf_writef_float(handle, chunk, sf_count_t(rate)) == sf_count_t(rate) else {
                    throw TestFailure("short write to \(path)")
                }
            }
            file = (directory, path)
            return path
        }
    }
}

extension AudioServerSuites {
    /// Streaming a 10-minute file through the feeder and the mixer, with no server: memory stays flat
    /// over the whole length.
    ///
    /// The measurement runs in a child process (an exit test): resident memory is per process, and in
    /// this one other suites allocate at the same time. It holds the audio-server gate because decoding
    /// ten minutes flat out would starve the suites that record real-time output.
    @Suite struct MusicStreamingMemoryTests {
        @Test func tenMinutesStreamThroughTheMixerInFlatMemory() async throws {
            let result = try await #require(processExitsWith: .success, observing: [\.standardOutputContent]) {
                exit(Self.streamTenMinutes() ? EXIT_SUCCESS : EXIT_FAILURE)
            }
            print(String(decoding: result.standardOutputContent, as: UTF8.self), terminator: "")
        }

        /// Renders the whole file as fast as it decodes, sampling resident memory every 10 s of audio
        /// and the tone once a minute; prints what it measured.
        /// - Returns: whether memory stayed flat and every minute held its tone.
        static func streamTenMinutes() -> Bool {
            guard let path = try? TenMinuteMusic.path(),
                  let feeder = try? StreamFeeder(path: path, engineRate: TenMinuteMusic.rate, offset: 0, looping: false)
            else {
                print("cannot open the 10-minute file")
                return false
            }
            let rate = TenMinuteMusic.rate
            feeder.prefill(seconds: 0.5, engineRate: rate)
            feeder.start()
            let voice = Voice(id: 1, source: .stream(feeder.source), start: 0, offset: 0, playCount: 1,
                              gain: Envelope(1), pan: Envelope(0))
            let block = 4_800
            let scratch = UnsafeMutablePointer<Float>.allocate(capacity: block * 2)
            defer { scratch.deallocate() }
            let left = UnsafeMutableBufferPointer<Float>.allocate(capacity: block)
            defer { left.deallocate() }
            var frequencies = [Double](repeating: 0, count: 10)
            let baseline = residentMemory()
            var peak = baseline
            var afterFirstMinute = 0
            var frame: Int64 = 0
            let total = feeder.source.frameCount
            [voice].withUnsafeBufferPointer { voices in
                while frame < total {
                    let deadline = MonotonicClock.now + 2
                    while feeder.source.decodedFrames < min(total, frame + Int64(block)) && MonotonicClock.now < deadline {
                        feeder.source.noteDemand(upTo: frame)
                        usleep(100)
                    }
                    Mixer.render(voices, from: frame, frameCount: block, into: scratch)
                    // Half a second into each minute, check what is there.
                    if frame % Int64(60 * rate) == Int64(rate / 2) {
                        for index in 0..<block { left[index] = scratch[2 * index] }
                        frequencies[Int(frame) / (60 * rate)] = Analysis.frequency(of: Array(left), rate: rate)
                    }
                    if frame % Int64(10 * rate) == 0 { peak = max(peak, residentMemory()) }
                    if frame == Int64(60 * rate) { afterFirstMinute = residentMemory() }
                    frame += Int64(block)
                }
            }
            let mebibyte = 1_048_576.0
            let growth = Double(peak - baseline) / mebibyte
            let laterGrowth = Double(peak - afterFirstMinute) / mebibyte
            let ring = Double(feeder.source.capacity * feeder.source.channelCount * 4) / mebibyte
            let whole = Double(TenMinuteMusic.seconds * rate * 4) / mebibyte
            print("10-minute stream: resident memory grew \(growth) MiB at most, \(laterGrowth) MiB after the first minute (ring \(ring) MiB; decoded whole it would be \(whole) MiB); high-water \(feeder.source.highWaterMark) of \(feeder.source.capacity) frames; \(feeder.source.starvations) starved runs")
            var ok = growth < 8 && laterGrowth < 1
            ok = ok && feeder.source.highWaterMark <= Int64(feeder.source.capacity)
            ok = ok && feeder.source.decodedFrames == total
            for (minute, frequency) in frequencies.enumerated()
            where abs(frequency - TenMinuteMusic.frequency(atMinute: minute)) >= 1 {
                print("minute \(minute): \(frequency) Hz")
                ok = false
            }
            return ok
        }
    }

    /// The 10-minute file played as music on a real server: it starts at once, streams with a bounded
    /// ring, seeks to its last minute, and memory stays flat.
    @Suite(.serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
    struct MusicStreamingTests {
        @Test func aTenMinuteTrackPlaysSeeksAndStaysSmall() throws {
            let path = try TenMinuteMusic.path()
            let server = try PlayerTestServers.server(for: "MusicStreamingTests")
            let manager = SoundManager(configuration: .init(server: server.server))
            manager.prepareToPlay(with: [])
            let rate = TenMinuteMusic.rate
            let recorded = MonitorRecorder.reservedBytes
            let baseline = residentMemory()
            let music = try #require(manager.sound(for: path))
            #expect(music.content.isStreamed)
            #expect(abs(music.duration - 600) < 1e-6)
            let mark = server.recorder.frameCount
            manager.playMusic(music, fadeIn: false)
            #expect(manager.isPlayingMusic)
            usleep(1_500_000)
            let onset = try #require(server.recorder.firstSound(after: mark), "\(server.recorder.heard(after: mark))")
            let start = Array(server.recorder.channel(0, from: onset).prefix(rate))
            // Tone amplitudes rather than zero crossings: a server under-run on a loaded machine leaves
            // a short gap, which barely changes an amplitude over a second.
            #expect(Analysis.amplitude(of: 300, in: start, rate: rate) > 0.25, "minute 0 plays 300 Hz")
            #expect(Analysis.amplitude(of: 750, in: start, rate: rate) < 0.01)

            // The last minute, by seeking.
            let seeked = MonotonicClock.now
            music.currentTime = 570
            // Half a second from 0.3 s after the seek (the seek and the server's latency well
            // within it), however long the sleep took on a loaded machine.
            let afterSeek = server.recorder.frameCount + rate * 3 / 10
            server.recorder.wait(seconds: 0.8)
            let late = Array(server.recorder.channel(0, from: afterSeek).prefix(rate / 2))
            #expect(late.count == rate / 2)
            #expect(Analysis.amplitude(of: TenMinuteMusic.frequency(atMinute: 9), in: late, rate: rate) > 0.25, "minute 9")
            #expect(Analysis.amplitude(of: 300, in: late, rate: rate) < 0.01)
            let position = music.currentTime
            let elapsed = MonotonicClock.now - seeked
            #expect(position > 570.7 && position < 570.05 + elapsed, "\(position) after \(elapsed) s")

            let ring = try #require(manager.lastStream)
            // The recorders (this suite's and any other suite's running beside it) keep their whole
            // runs in this process: take their growth out.
            let recording = MonitorRecorder.reservedBytes - recorded
            let growth = Double(residentMemory() - baseline - recording) / 1_048_576
            print("10-minute track on the server: memory grew \(growth) MiB beyond the recording, high-water \(ring.highWaterMark) of \(ring.capacity) frames, \(ring.starvations) starved runs")
            #expect(growth < 16)
            #expect(ring.highWaterMark <= Int64(ring.capacity))
            #expect(ring.starvations == 0, "the feeder kept ahead of the engine")
            manager.stopMusic(fadeOut: false)
            usleep(100_000)
            #expect(!manager.isPlayingMusic)
            #expect(ring.isCancelled, "the feeder stops with the voice")
        }
    }
}
