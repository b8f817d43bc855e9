import Glibc

/// A change of level applied to a registered sound: a linear multiplier, and what happens to
/// samples the multiplier pushes past full scale.
///
/// An adjustment is always applied to the sound's original decoded samples, never to an earlier
/// adjusted copy, so setting 0.5 and then 2 gives back the original exactly (for samples that were
/// not clipped on the way, and those are re-derived too).
///
/// A value; safe to use from any thread.
public struct VolumeAdjustment: Sendable, Hashable {
    /// What to do with samples beyond the ceiling after scaling.
    public enum Limiting: Sendable, Hashable {
        /// Clamp every sample to −1…1 (the classic "scale the WAV samples and clamp"): exact for every
        /// sample within range, hard distortion on the peaks beyond it.
        case clip
        /// A look-ahead peak limiter: where a peak would pass `ceiling`, the gain ramps down over
        /// 5 ms before it and recovers over 50 ms after, so no sample exceeds `ceiling` and nothing
        /// clicks. Sections that stay below `ceiling` are scaled exactly.
        case peakLimiter(ceiling: Float = 1)
    }

    /// The linear gain: 0 silences, 1 keeps the original, 2 is +6 dB.
    public var multiplier: Float
    /// How peaks beyond full scale are handled.
    public var limiting: Limiting

    /// The original level.
    public static let unchanged = VolumeAdjustment(multiplier: 1)

    /// Creates an adjustment. `multiplier` must be finite and not negative (a programmer error traps).
    public init(multiplier: Float, limiting: Limiting = .clip) {
        precondition(multiplier.isFinite && multiplier >= 0, "a volume multiplier is finite and ≥ 0")
        if case .peakLimiter(let ceiling) = limiting {
            precondition(ceiling > 0 && ceiling <= 1, "a limiter ceiling is in 0<…≤1")
        }
        self.multiplier = multiplier
        self.limiting = limiting
    }

    /// The multiplier for a change of `decibels` (+6 dB ≈ 2×).
    public static func decibels(_ decibels: Double, limiting: Limiting = .clip) -> VolumeAdjustment {
        VolumeAdjustment(multiplier: Float(pow10(decibels / 20)), limiting: limiting)
    }

    /// `buffer` with this adjustment applied.
    func apply(to buffer: PCMBuffer) -> PCMBuffer {
        PCMBuffer(
            validSamples: scale(buffer.samples, channelCount: buffer.channelCount, sampleRate: buffer.sampleRate),
            channelCount: buffer.channelCount, sampleRate: buffer.sampleRate)
    }

    /// Interleaved samples of any channel count with this adjustment applied.
    func scale(_ samples: [Float], channelCount: Int, sampleRate: Int) -> [Float] {
        switch limiting {
        case .clip: Self.scaleAndClip(samples, by: multiplier)
        case .peakLimiter(let ceiling):
            Self.scaleAndLimit(
                samples, by: multiplier, ceiling: ceiling, channelCount: channelCount, sampleRate: sampleRate)
        }
    }

    /// The limiter's gain for each frame of `samples`, the multiplier included; nil when clipping
    /// (every frame then gets the multiplier).
    func limiterGains(_ samples: [Float], channelCount: Int, sampleRate: Int) -> [Float]? {
        guard case .peakLimiter(let ceiling) = limiting else { return nil }
        return Self.frameGains(samples, by: multiplier, ceiling: ceiling, channelCount: channelCount, sampleRate: sampleRate)
    }

    /// The largest magnitude a sample may have after the adjustment: the limiter's ceiling, or
    /// full scale (1) when clipping.
    var ceiling: Float {
        if case .peakLimiter(let ceiling) = limiting { ceiling } else { 1 }
    }

    static func scaleAndClip(_ input: [Float], by gain: Float) -> [Float] {
        [Float](unsafeUninitializedCapacity: input.count) { output, initialized in
            input.withUnsafeBufferPointer { input in
                for index in 0..<input.count {
                    output[index] = min(1, max(-1, input[index] * gain))
                }
            }
            initialized = input.count
        }
    }

    /// Gain per frame: the largest gain that keeps the frame under the ceiling, lowered further by a
    /// backward pass (the attack ramp, which starts before the peak) and a forward pass (the release
    /// ramp). Both passes only ever lower the gain, so no frame can exceed the ceiling.
    static func scaleAndLimit(
        _ input: [Float], by gain: Float, ceiling: Float, channelCount: Int, sampleRate: Int
    ) -> [Float] {
        let frameScale = frameGains(input, by: gain, ceiling: ceiling, channelCount: channelCount, sampleRate: sampleRate)
        return [Float](unsafeUninitializedCapacity: input.count) { output, initialized in
            input.withUnsafeBufferPointer { input in
                for frame in 0..<frameScale.count {
                    for channel in 0..<channelCount {
                        let index = frame * channelCount + channel
                        // The clamp only catches the last rounding step of ceiling / peak × peak.
                        output[index] = min(ceiling, max(-ceiling, input[index] * frameScale[frame]))
                    }
                }
            }
            initialized = input.count
        }
    }

    /// `gain` times the limiter's gain for each frame (see `scaleAndLimit`).
    static func frameGains(
        _ input: [Float], by gain: Float, ceiling: Float, channelCount: Int, sampleRate: Int
    ) -> [Float] {
        let frames = input.count / channelCount
        let attackStep = 1 / Float(max(1, sampleRate / 200))
        let releaseStep = 1 / Float(max(1, sampleRate / 20))
        var frameGain = [Float](repeating: 1, count: frames)
        input.withUnsafeBufferPointer { input in
            frameGain.withUnsafeMutableBufferPointer { frameGain in
                for frame in 0..<frames {
                    var peak: Float = 0
                    for channel in 0..<channelCount {
                        peak = max(peak, abs(input[frame * channelCount + channel] * gain))
                    }
                    if peak > ceiling { frameGain[frame] = ceiling / peak }
                }
                guard frames > 1 else { return }
                for frame in stride(from: frames - 2, through: 0, by: -1) {
                    frameGain[frame] = min(frameGain[frame], frameGain[frame + 1] + attackStep)
                }
                for frame in 1..<frames {
                    frameGain[frame] = min(frameGain[frame], frameGain[frame - 1] + releaseStep)
                }
            }
        }
        return frameGain.map { gain * $0 }
    }
}

func pow10(_ exponent: Double) -> Double {
    Glibc.pow(10, exponent)
}
