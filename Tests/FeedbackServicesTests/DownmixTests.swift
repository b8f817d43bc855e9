internal import CSndFile
import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

@Suite struct DownmixTests {
    /// 5.1 in the WAV order L R C LFE Ls Rs: each channel a constant, so the weights can be read off.
    @Test func fivePointOneFollowsTheDocumentedWeights() throws {
        let frame: [Float] = [0.1, 0.2, 0.3, 0.9, 0.4, 0.5]
        let samples = Array([[Float]](repeating: frame, count: 100).joined())
        let buffer = try SoundDecoder().decode(samples: samples, sampleRate: 48_000, channelCount: 6)
        #expect(buffer.channelCount == 2)
        let c: Float = 0.70710677
        let sum = 1 + c + c
        let left = (0.1 + c * 0.3 + c * 0.4) / sum
        let right = (0.2 + c * 0.3 + c * 0.5) / sum
        #expect(abs(buffer.samples[100] - left) < 1e-6)
        #expect(abs(buffer.samples[101] - right) < 1e-6)
    }

    @Test(arguments: 3...8)
    func fullScaleInEveryChannelNeverExceedsFullScale(channels: Int) throws {
        let samples = [Float](repeating: 1, count: channels * 64)
        let buffer = try SoundDecoder().decode(samples: samples, sampleRate: 48_000, channelCount: channels)
        #expect(buffer.channelCount == 2)
        #expect(buffer.peak <= 1.0001)
        #expect(buffer.peak > 0.5)
    }

    @Test func aFileChannelMapIsHonoured() throws {
        // Three channels declared as (right, left, LFE): the map, not the default order, decides.
        let map = [Int32(SF_CHANNEL_MAP_RIGHT), Int32(SF_CHANNEL_MAP_LEFT), Int32(SF_CHANNEL_MAP_LFE)]
        let samples: [Float] = [0.25, 0.5, 1.0]
        let stereo = Downmix.toStereo(samples, channels: 3, map: map)
        #expect(stereo == [0.5, 0.25])
    }

    @Test func monoAndStereoPassThrough() {
        #expect(Downmix.toStereo([0.1, 0.2, 0.3], channels: 1, map: nil) == [0.1, 0.2, 0.3])
        #expect(Downmix.toStereo([0.1, 0.2], channels: 2, map: nil) == [0.1, 0.2])
    }
}
