internal import CSndFile

/// The down-mix of files with more than two channels to stereo.
///
/// The rule: each input channel feeds left and right by its speaker position — front left/right at
/// full level to their own side; centre at −3 dB (0.7071) to both; surround, side and rear
/// left/right at −3 dB to their own side; rear centre at −6 dB to both; the LFE channel is dropped;
/// a position we cannot place goes at −6 dB to both. Each side's weights are then scaled so they sum
/// to at most 1, so the down-mix never exceeds full scale (the normalisation ffmpeg applies by
/// default). Positions come from the file's channel map where it has one (WAVE_FORMAT_EXTENSIBLE,
/// CAF, …); otherwise from the usual order for the channel count: 3 = L R C, 4 = L R Ls Rs,
/// 5 = L R C Ls Rs, 6 = L R C LFE Ls Rs (5.1), 7 = L R C LFE Cs Ls Rs (6.1),
/// 8 = L R C LFE Lb Rb Ls Rs (7.1).
enum Downmix {
    /// The most channels a sound may have.
    static let maximumChannelCount = 8

    /// Down-mixes interleaved `channels`-channel samples to stereo; one and two channels pass through.
    static func toStereo(_ samples: [Float], channels: Int, map: [Int32]?) -> [Float] {
        guard channels > 2 else { return samples }
        let positions = map ?? defaultPositions(channels)
        var left = positions.map { weights(for: $0).left }
        var right = positions.map { weights(for: $0).right }
        normalise(&left)
        normalise(&right)
        let frames = samples.count / channels
        return [Float](unsafeUninitializedCapacity: frames * 2) { output, count in
            samples.withUnsafeBufferPointer { input in
                for frame in 0..<frames {
                    var l: Float = 0
                    var r: Float = 0
                    let base = frame * channels
                    for channel in 0..<channels {
                        let sample = input[base + channel]
                        l += sample * left[channel]
                        r += sample * right[channel]
                    }
                    output[frame * 2] = l
                    output[frame * 2 + 1] = r
                }
            }
            count = frames * 2
        }
    }

    private static func normalise(_ weights: inout [Float]) {
        let sum = weights.reduce(0, +)
        if sum > 1 { weights = weights.map { $0 / sum } }
    }

    private static func defaultPositions(_ channels: Int) -> [Int32] {
        let l = SF_CHANNEL_MAP_LEFT, r = SF_CHANNEL_MAP_RIGHT, c = SF_CHANNEL_MAP_CENTER
        let lfe = SF_CHANNEL_MAP_LFE, rc = SF_CHANNEL_MAP_REAR_CENTER
        let rl = SF_CHANNEL_MAP_REAR_LEFT, rr = SF_CHANNEL_MAP_REAR_RIGHT
        let sl = SF_CHANNEL_MAP_SIDE_LEFT, sr = SF_CHANNEL_MAP_SIDE_RIGHT
        let layout: [Int] =
            switch channels {
            case 3: [l, r, c]
            case 4: [l, r, rl, rr]
            case 5: [l, r, c, rl, rr]
            case 6: [l, r, c, lfe, rl, rr]
            case 7: [l, r, c, lfe, rc, sl, sr]
            default: [l, r, c, lfe, rl, rr, sl, sr]
            }
        return layout.map { Int32($0) }
    }

    private static func weights(for position: Int32) -> (left: Float, right: Float) {
        let minus3dB: Float = 0.70710677
        switch Int(position) {
        case SF_CHANNEL_MAP_LEFT, SF_CHANNEL_MAP_FRONT_LEFT, SF_CHANNEL_MAP_FRONT_LEFT_OF_CENTER:
            return (1, 0)
        case SF_CHANNEL_MAP_RIGHT, SF_CHANNEL_MAP_FRONT_RIGHT, SF_CHANNEL_MAP_FRONT_RIGHT_OF_CENTER:
            return (0, 1)
        case SF_CHANNEL_MAP_MONO, SF_CHANNEL_MAP_CENTER, SF_CHANNEL_MAP_FRONT_CENTER,
            SF_CHANNEL_MAP_TOP_CENTER, SF_CHANNEL_MAP_TOP_FRONT_CENTER:
            return (minus3dB, minus3dB)
        case SF_CHANNEL_MAP_REAR_LEFT, SF_CHANNEL_MAP_SIDE_LEFT, SF_CHANNEL_MAP_TOP_FRONT_LEFT,
            SF_CHANNEL_MAP_TOP_REAR_LEFT:
            return (minus3dB, 0)
        case SF_CHANNEL_MAP_REAR_RIGHT, SF_CHANNEL_MAP_SIDE_RIGHT, SF_CHANNEL_MAP_TOP_FRONT_RIGHT,
            SF_CHANNEL_MAP_TOP_REAR_RIGHT:
            return (0, minus3dB)
        case SF_CHANNEL_MAP_LFE:
            return (0, 0)
        default:
            return (0.5, 0.5)
        }
    }
}
