import Dispatch
import FeedbackTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// What the ALSA output decides without a sound card: how libasound's errors become play
/// failures, which PCM the automatic choice falls back to, and the output's ends on a PCM that is
/// not there and on ALSA's `null` PCM (always in libasound's configuration). Playing into a real
/// card is proved in the VM (Tests/HapticsVMCases/AudioCases.swift).
struct ALSAOutputTests {
    @Test(arguments: [
        (EBUSY, true, PlaybackError.Reason.deviceBusy), (EBUSY, false, .deviceBusy),
        (ENOENT, true, .deviceUnavailable), (ENODEV, true, .deviceUnavailable), (EINVAL, true, .deviceUnavailable),
        (ENODEV, false, .deviceLost), (EIO, false, .deviceLost),
    ])
    func libasoundErrorsBecomeTypedPlaybackErrors(code: Int32, opening: Bool, reason: PlaybackError.Reason) {
        let error = PlaybackError(ALSAError(code: code, call: "snd_pcm_open"), device: "hw:3,0", opening: opening)
        #expect(error.reason == reason)
        #expect(error.description.contains("ALSA PCM hw:3,0: snd_pcm_open: \(String(cString: strerror(code)))"), "\(error)")
    }

    @Test func thePCMComesFromTheEnvironmentElseDefault() {
        #expect(AudioOutputSelection.alsaDevice(environment: [:]) == "default")
        #expect(AudioOutputSelection.alsaDevice(environment: ["FEEDBACKSERVICES_ALSA_PCM": ""]) == "default")
        #expect(AudioOutputSelection.alsaDevice(environment: ["FEEDBACKSERVICES_ALSA_PCM": "plughw:1,0"]) == "plughw:1,0")
    }

    /// No server and no such PCM: the error names both, in the order they were tried.
    @Test func theAutomaticChoiceTriesPulseAudioThenALSA() throws {
        let environment = ["FEEDBACKSERVICES_ALSA_PCM": "feedbackservices-no-such-pcm"]
        do {
            _ = try AudioOutputSelection.automatic(server: "unix:/nonexistent/native", timeout: 1, environment: environment)
            Issue.record("an output was found")
        } catch {
            guard case .noAudioOutput(let tried) = error.reason else { throw error }
            #expect(tried.count == 2, "\(tried)")
            #expect(tried.first?.hasPrefix("PulseAudio at unix:/nonexistent/native") == true, "\(tried)")
            #expect(tried.last?.hasPrefix("ALSA PCM feedbackservices-no-such-pcm: the audio device cannot be opened") == true, "\(tried)")
        }
    }

    @Test func theAutomaticChoiceFallsBackToALSA() throws {
        let output = try AudioOutputSelection.automatic(
            server: "unix:/nonexistent/native", timeout: 1, environment: ["FEEDBACKSERVICES_ALSA_PCM": "null"])
        let alsa = try #require(output as? ALSAOutput)
        #expect(alsa.configuration.device == "null")
        #expect(alsa.statistics.opens == 1)
    }

    /// A PCM that is not there fails `prepare` and every play, each play once; the output stays
    /// usable (it tries again at the next play).
    @Test func aMissingPCMFailsEachPlayOnce() async throws {
        let output = ALSAOutput(configuration: .init(device: "feedbackservices-no-such-pcm"))
        #expect { try output.prepare(timeout: 2) } throws: { ($0 as? PlaybackError)?.reason == .deviceUnavailable }
        let buffer = PCMBuffer(validSamples: [Float](repeating: 0.1, count: 960), channelCount: 1, sampleRate: 48_000)
        for _ in 0..<2 {
            let ends = Lock<[PlaybackEnd]>([])
            let end = await withCheckedContinuation { continuation in
                output.play(buffer) { end in
                    ends.withLock { $0.append(end) }
                    continuation.resume(returning: end)
                }
            }
            #expect(end == .failed(PlaybackError(.deviceUnavailable, detail: end.failure?.detail)), "\(end)")
            try await Task.sleep(for: .milliseconds(50))
            #expect(ends.withLock { $0.count } == 1)
        }
    }

    /// ALSA's `null` PCM takes whatever it is given: plays end `.finished`, or `.stopped` when
    /// stopped, once each. `null` has no clock: the engine's thread writes as fast as it renders,
    /// so a stopped play lasts 5 s, which no fill ends before the stop sent right after it arrives
    /// (a 0.1 s one sometimes did, when a parallel test held the CPU between the play and the stop).
    @Test func playsOnTheNullPCMEndOnce() async throws {
        let output = ALSAOutput(configuration: .init(device: "null"))
        try output.prepare(timeout: 2)
        let short = PCMBuffer(validSamples: [Float](repeating: 0.1, count: 4_800), channelCount: 1, sampleRate: 48_000)
        let long = PCMBuffer(validSamples: [Float](repeating: 0.1, count: 240_000), channelCount: 1, sampleRate: 48_000)
        let ends = Lock<[Int: [PlaybackEnd]]>([:])
        for index in 0..<10 {
            let stopped = index % 2 == 0
            let handle = output.play(stopped ? long : short, queue: .global()) { end in
                ends.withLock { $0[index, default: []].append(end) }
            }
            if stopped { handle.stop() }
        }
        for _ in 0..<500 where ends.withLock({ $0.count }) < 10 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        let seen = ends.withLock { $0 }
        for index in 0..<10 {
            #expect(seen[index] == [index % 2 == 0 ? .stopped : .finished], "play \(index): \(seen[index] ?? [])")
        }
        #expect(output.statistics.opens == 1)
    }
}

extension ALSAOutputTests {
    /// An open PCM writes nothing until its first sound, which then starts the device at frame 0:
    /// before, the silence queued while the output stood ready came first, and the sound had to
    /// be rewound into it (or, where rewinds are not allowed, waited behind it). Recorded through
    /// libasound's `tee` PCM (the `file` plugin in front of `null`), which writes every frame the
    /// device is given to a file.
    @Test func aPreparedPCMStartsWithItsFirstSoundNotWithSilence() async throws {
        let directory = TemporaryDirectory()
        let recording = directory.file("held.raw")
        let format: String
        do {
            let output = ALSAOutput(configuration: .init(device: "tee:null,'\(recording)',raw"))
            try output.prepare(timeout: 2)
            // Standing ready: the old engine queued its short queue of silence here.
            try await Task.sleep(for: .milliseconds(150))
            let buffer = PCMBuffer(validSamples: [Float](repeating: 0.5, count: 480), channelCount: 1, sampleRate: 48_000)
            let end = await withCheckedContinuation { continuation in
                output.play(buffer) { continuation.resume(returning: $0) }
            }
            #expect(end == .finished)
            format = output.statistics.sampleFormat
        }
        // The output is gone and its PCM closed: the file holds everything written.
        let bytes = try #require(FileManager.default.contents(atPath: recording).map { [UInt8]($0) })
        let samples: [Float] = bytes.withUnsafeBytes { raw in
            func word<T: FixedWidthInteger>(_ index: Int, _: T.Type) -> T {
                T(littleEndian: raw.loadUnaligned(fromByteOffset: index * MemoryLayout<T>.size, as: T.self))
            }
            return switch format {
            case "FLOAT_LE": (0..<raw.count / 4).map { Float(bitPattern: word($0, UInt32.self)) }
            case "S32_LE": (0..<raw.count / 4).map { Float(word($0, Int32.self)) / Float(Int32.max) }
            default: (0..<raw.count / 2).map { Float(word($0, Int16.self)) / Float(Int16.max) }
            }
        }
        let first = samples.firstIndex { abs($0) > 0.1 }
        #expect(first == 0, "\(format): the first sound's first sample at interleaved sample \(first.map(String.init) ?? "none") of \(samples.count)")
    }
}

extension PlaybackEnd {
    fileprivate var failure: PlaybackError? {
        if case .failed(let error) = self { error } else { nil }
    }
}
