import FoundationEssentials
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// Volume re-registration: exact scaling from the original PCM, clipping, the limiter, atomic
/// replacement, export in the source format and loudness normalisation.
@Suite struct VolumeTests {
    let rate = 48_000
    /// Values chosen so that ×0.5, ×2 and ×3 are exact in Float and some of them clip.
    let ramp: [Float] = [0, 0.125, -0.25, 0.375, -0.5, 0.625, -0.75, 0.875, -1, 0.0625]

    func registered(_ samples: [Float], channels: Int = 1) throws -> (SoundRegistry, SystemSoundID) {
        let registry = SoundRegistry()
        let id = try registry.register(samples: samples, sampleRate: rate, channelCount: channels, name: "test")
        return (registry, id)
    }

    @Test(arguments: [Float(0), 0.5, 1, 2, 3])
    func scalingIsExactAndClipsAtFullScale(multiplier: Float) throws {
        let (registry, id) = try registered(ramp)
        let sound = try registry.setVolume(multiplier, for: id)
        #expect(sound.buffer.samples == ramp.map { min(1, max(-1, $0 * multiplier)) })
        #expect(sound.volume == VolumeAdjustment(multiplier: multiplier))
        #expect(sound.original.samples == ramp)
        #expect(registry.sound(id)?.buffer == sound.buffer)
    }

    @Test func tenSuccessiveChangesDoNotDrift() throws {
        let tone = Signal.sines([440, 660], amplitude: 0.8, seconds: 0.2, rate: rate)
        let (registry, id) = try registered(tone, channels: 2)
        for multiplier: Float in [0.3, 1.7, 0.01, 2.5, 0.9, 1.13, 0.5, 4, 0.77, 1.01] {
            try registry.setVolume(multiplier, for: id)
        }
        #expect(registry.sound(id)?.buffer.samples == tone.map { min(1, max(-1, $0 * 1.01)) })
        try registry.setVolume(1, for: id)
        #expect(registry.sound(id)?.buffer.samples == tone, "back to the original bit for bit")
    }

    @Test func peakLimiterKeepsPeaksUnderTheCeilingWithoutClicks() throws {
        // Quiet for 0.5 s, a loud burst, quiet again.
        var samples = Signal.sines([300], amplitude: 0.2, seconds: 1.5, rate: rate)
        for index in 24_000..<26_400 { samples[index] *= 4.5 }
        let (registry, id) = try registered(samples)
        let sound = try registry.setVolume(2, for: id, limiting: .peakLimiter(ceiling: 0.9))
        let out = sound.buffer.samples
        #expect(out.allSatisfy { abs($0) <= 0.9 })
        // Far from the burst the gain is exactly 2.
        for index in stride(from: 0, to: 20_000, by: 97) { #expect(out[index] == samples[index] * 2) }
        for index in stride(from: 40_000, to: samples.count, by: 97) { #expect(out[index] == samples[index] * 2) }
        // The gain moves in ramps: sample-to-sample change stays near what a 300 Hz sine does anyway.
        let steps = zip(out.dropFirst(), out).map { abs($0 - $1) }
        #expect(steps.max()! < 0.1)
    }

    @Test func playingVoicesKeepTheOldSamples() throws {
        let (registry, id) = try registered(ramp)
        let before = try #require(registry.sound(id))
        try registry.setVolume(0.5, for: id)
        #expect(before.buffer.samples == ramp, "a voice holds the buffer it started with")
        #expect(registry.sound(id)?.id == id)
        #expect(registry.soundIDs == [id])
    }

    @Test func concurrentChangesLeaveOneWholeAdjustment() throws {
        let tone = Signal.sines([440], amplitude: 0.5, seconds: 0.5, rate: rate)
        let (registry, id) = try registered(tone)
        let multipliers: [Float] = (1...16).map { Float($0) / 8 }
        onThreads(16) { index in
            _ = try? registry.setVolume(multipliers[index], for: id)
        }
        let sound = try #require(registry.sound(id))
        let expected = tone.map { min(1, max(-1, $0 * sound.volume.multiplier)) }
        #expect(multipliers.contains(sound.volume.multiplier))
        #expect(sound.buffer.samples == expected)
    }

    @Test func unknownIDsAreErrors() throws {
        let registry = SoundRegistry()
        let error = #expect(throws: RegistryError.self) { try registry.setVolume(0.5, for: 4097) }
        #expect(error?.reason == .unknownSoundID(4097))
        #expect(throws: RegistryError.self) { try registry.export(4097, to: "/tmp/none.wav") }
        #expect(throws: RegistryError.self) { try registry.normalizeLoudness(of: 4097, to: -16) }
    }

    static let losslessFormats: [(SoundFileFormat, String, Float)] = [
        (.wav16, "wav", 1.0 / 32_768), (.wav24, "wav", 1.0 / 8_388_608), (.wavFloat, "wav", 0),
        (.rf64_16, "rf64", 1.0 / 32_768), (.aiff16, "aiff", 1.0 / 32_768), (.caf16, "caf", 1.0 / 32_768),
        (.cafALAC16, "caf", 1.0 / 32_768), (.flac16, "flac", 1.0 / 32_768),
    ]

    @Test(arguments: losslessFormats)
    func exportRoundTripsInTheSourceFormat(format: SoundFileFormat, suffix: String, quantum: Float) throws {
        let directory = TemporaryDirectory()
        let source = directory.file("source.\(suffix)")
        let tone = Signal.sines([440, 550], amplitude: 0.6, seconds: 0.3, rate: rate)
        try SoundFileWriter.write(Signal.buffer(tone, channels: 2, rate: rate), to: source, format: format)
        let registry = SoundRegistry()
        let id = try registry.register(fileAt: source)
        let adjusted = try registry.setVolume(1.5, for: id)
        let exported = directory.file("adjusted.\(suffix)")
        try registry.export(id, to: exported)
        let decoded = try SoundDecoder().decode(fileAt: exported)
        #expect(decoded.sourceFormat == format)
        #expect(decoded.buffer.channelCount == 2)
        #expect(decoded.buffer.frameCount == adjusted.buffer.frameCount)
        let error = Analysis.maximumDifference(decoded.buffer.samples, adjusted.buffer.samples)
        #expect(error <= quantum, "\(format): error \(error)")
    }

    @Test func lossyExportKeepsItsFormatAndLevel() throws {
        let directory = TemporaryDirectory()
        let source = directory.file("source.ogg")
        let tone = Signal.sines([440, 550], amplitude: 0.4, seconds: 1, rate: rate)
        try SoundFileWriter.write(Signal.buffer(tone, channels: 2, rate: rate), to: source, format: .oggVorbis)
        let registry = SoundRegistry()
        let id = try registry.register(fileAt: source)
        let adjusted = try registry.setVolume(0.5, for: id)
        try registry.export(id, to: directory.file("adjusted.ogg"))
        let decoded = try SoundDecoder().decode(fileAt: directory.file("adjusted.ogg"))
        #expect(decoded.sourceFormat == .oggVorbis)
        let ratio = Analysis.rms(decoded.buffer.samples) / Analysis.rms(adjusted.buffer.samples)
        #expect(abs(20 * log10(ratio)) < 0.5, "level ratio \(ratio)")
    }

    @Test func exportOfAnInMemorySoundIsWAVUnlessTold() throws {
        let directory = TemporaryDirectory()
        let (registry, id) = try registered(ramp)
        try registry.export(id, to: directory.file("a.wav"))
        #expect(try SoundDecoder().decode(fileAt: directory.file("a.wav")).sourceFormat == .wav16)
        try registry.export(id, to: directory.file("a.flac"), format: .flac16)
        #expect(try SoundDecoder().decode(fileAt: directory.file("a.flac")).sourceFormat == .flac16)
    }

    @Test(arguments: [(-23.0, 1), (-16.0, 2), (-30.0, 2), (-14.0, 1)])
    func loudnessNormalisationHitsTheTarget(target: Double, channels: Int) throws {
        // A two-tone sound with an envelope, 3 s, well below full scale at every target here.
        let frames = 3 * rate
        var samples = [Float](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            let t = Double(frame) / Double(rate)
            let value = 0.05 * (sin(2 * .pi * 660 * t) + 0.5 * sin(2 * .pi * 1_320 * t)) * (0.6 + 0.4 * sin(2 * .pi * 2 * t))
            for channel in 0..<channels { samples[frame * channels + channel] = Float(value) }
        }
        let (registry, id) = try registered(samples, channels: channels)
        let before = try registry.loudness(of: id)
        try registry.normalizeLoudness(of: id, to: target)
        let after = try registry.loudness(of: id)
        print("loudness \(channels) ch: \(before) LUFS → \(after) LUFS (target \(target), error \(after - target) LU)")
        #expect(abs(after - target) <= 0.5)
        #expect(registry.sound(id)!.buffer.peak <= 1)
    }

    /// EBU Tech 3341's first test signal: a 1 kHz stereo sine at −23 dBFS reads −23 LUFS, which checks
    /// the meter itself rather than only the gain.
    @Test func meterReadsTheEBUReferenceSignal() throws {
        let amplitude = pow(10, -23.0 / 20)
        let (registry, id) = try registered(Signal.sines([1_000, 1_000], amplitude: amplitude, seconds: 5, rate: rate), channels: 2)
        let loudness = try registry.loudness(of: id)
        #expect(abs(loudness + 23) < 0.1, "\(loudness) LUFS")
    }

    @Test func silenceCannotBeNormalised() throws {
        let (registry, id) = try registered([Float](repeating: 0, count: rate))
        let error = #expect(throws: RegistryError.self) { try registry.normalizeLoudness(of: id, to: -16) }
        #expect(error?.reason == .loudnessUnmeasurable)
        #expect(registry.sound(id)?.volume == .unchanged)
    }

    @Test func decibelsMapToMultipliers() {
        #expect(abs(VolumeAdjustment.decibels(-6.0206).multiplier - 0.5) < 1e-4)
        #expect(VolumeAdjustment.decibels(0).multiplier == 1)
    }
}
