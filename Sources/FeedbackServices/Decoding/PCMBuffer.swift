/// Decoded audio held in memory: interleaved 32-bit float samples, mono or stereo, at one rate.
///
/// A buffer is immutable and cheap to share: copies share one array, so a registered sound and every
/// voice playing it use the same storage. Samples are nominally in −1…1 and always finite.
public struct PCMBuffer: Sendable, Equatable {
    /// Interleaved samples: `frameCount × channelCount` values.
    public let samples: [Float]
    /// 1 (mono) or 2 (stereo, left first).
    public let channelCount: Int
    /// Frames per second.
    public let sampleRate: Int

    /// Wraps samples that are already valid: a whole number of frames, 1 or 2 channels, finite values.
    package init(validSamples samples: [Float], channelCount: Int, sampleRate: Int) {
        precondition(channelCount == 1 || channelCount == 2)
        precondition(samples.count % channelCount == 0)
        self.samples = samples
        self.channelCount = channelCount
        self.sampleRate = sampleRate
    }

    /// The number of frames (samples per channel).
    public var frameCount: Int { samples.count / channelCount }

    /// The length in seconds.
    public var duration: Double { Double(frameCount) / Double(sampleRate) }

    /// The largest absolute sample value.
    public var peak: Float {
        samples.reduce(0) { max($0, abs($1)) }
    }
}
