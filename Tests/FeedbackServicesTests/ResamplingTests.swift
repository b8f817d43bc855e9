import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

@Suite struct ResamplingTests {
    /// A 1 kHz sine at 44.1 kHz stays 1 kHz ± 0.1 Hz and within 0.1 dB at 48 kHz.
    @Test(arguments: [1, 2])
    func sineKeepsFrequencyAndLevel(channels: Int) throws {
        let input = Signal.sines(Array(repeating: 1000, count: channels), amplitude: 0.5, seconds: 2, rate: 44_100)
        let buffer = try SoundDecoder().decode(samples: input, sampleRate: 44_100, channelCount: channels)
        #expect(buffer.sampleRate == 48_000)
        #expect(buffer.frameCount == 96_000)
        for channel in 0..<channels {
            let output = Signal.channel(channel, of: buffer.samples, channels: channels)
            let frequency = Analysis.frequency(of: output, rate: 48_000)
            #expect(abs(frequency - 1000) <= 0.1, "measured \(frequency) Hz")
            let inputLevel = Analysis.rms(Signal.channel(channel, of: input, channels: channels))
            let gain = 20 * log10(Analysis.rms(output) / inputLevel)
            #expect(abs(gain) <= 0.1, "level changed by \(gain) dB")
        }
    }

    @Test func theParallelPathMatchesTheSingleCall() throws {
        // Above the threshold each channel is resampled on its own thread; it must give the same
        // samples as one interleaved conversion.
        let frames = Resampler.parallelThreshold * 2
        let input = Signal.sines([700, 1900], seconds: Double(frames) / 44_100, rate: 44_100)
        let parallel = try Resampler.resample(input, channels: 2, from: 44_100, to: 48_000, source: "t")
        let left = try Resampler.resample(
            Signal.channel(0, of: input, channels: 2), channels: 1, from: 44_100, to: 48_000, source: "t")
        #expect(parallel.count / 2 == left.count)
        #expect(Analysis.maximumDifference(Signal.channel(0, of: parallel, channels: 2), left) < 1e-6)
    }

    @Test func downsamplingRemovesWhatCannotBeRepresented() throws {
        // 30 kHz cannot exist at 48 kHz; it must be filtered out, not folded to 18 kHz.
        let input = Signal.sines([30_000], amplitude: 0.5, seconds: 0.5, rate: 96_000)
        let buffer = try SoundDecoder().decode(samples: input, sampleRate: 96_000, channelCount: 1)
        #expect(Analysis.amplitude(of: 18_000, in: buffer.samples, rate: 48_000) < 0.001)
    }

    @Test func theEngineRateIsPassedThroughUntouched() throws {
        let input = Signal.sines([440, 880], seconds: 0.1, rate: 48_000)
        let buffer = try SoundDecoder().decode(samples: input, sampleRate: 48_000, channelCount: 2)
        #expect(buffer.samples == input)
    }

    @Test(arguments: [8_000, 11_025, 22_050, 32_000, 44_100, 88_200, 96_000, 192_000])
    func lengthFollowsTheRateRatio(rate: Int) throws {
        let frames = rate / 4 + 1
        let input = [Float](repeating: 0.1, count: frames)
        let buffer = try SoundDecoder().decode(samples: input, sampleRate: rate, channelCount: 1)
        #expect(buffer.frameCount == Int((Double(frames) * 48_000 / Double(rate)).rounded()))
    }
}
