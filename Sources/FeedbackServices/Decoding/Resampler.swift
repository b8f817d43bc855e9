internal import CSoxr
import Synchronization

/// Sample-rate conversion with libsoxr at its "high quality" recipe (`SOXR_HQ`: 20-bit precision,
/// linear phase, pass band to 91 % of Nyquist), the quality SoX's `rate` effect uses by default.
///
/// A stereo sound longer than `parallelThreshold` frames has each channel converted on its own
/// thread: soxr's own OpenMP threading does not speed up one-shot conversion (measured: 77 ms with
/// one thread, 92 ms with two, for 30 s of 44.1 kHz stereo), while one converter per channel on two
/// cores takes 50–60 ms.
enum Resampler {
    /// Below this many input frames, threads cost more than they save.
    static let parallelThreshold = 48_000

    /// Converts interleaved float samples from `inputRate` to `outputRate`.
    ///
    /// The output holds `round(frames × outputRate / inputRate)` frames: soxr flushes its filter,
    /// so the end of the sound is not cut.
    static func resample(
        _ samples: [Float], channels: Int, from inputRate: Int, to outputRate: Int, source: String
    ) throws(SoundError) -> [Float] {
        guard inputRate != outputRate, !samples.isEmpty else { return samples }
        let inputFrames = samples.count / channels
        let capacity = Int((Double(inputFrames) * Double(outputRate) / Double(inputRate)).rounded()) + 64
        if channels == 1 || inputFrames < parallelThreshold {
            return try oneshot(samples, channels: channels, inputRate, outputRate, capacity, source)
        }
        let planes = samples.withUnsafeBufferPointer { interleaved in
            (0..<channels).map { channel in
                [Float](unsafeUninitializedCapacity: inputFrames) { plane, count in
                    for frame in 0..<inputFrames { plane[frame] = interleaved[frame * channels + channel] }
                    count = inputFrames
                }
            }
        }
        let results = Lock<[Int: Result<[Float], SoundError>]>([:])
        let convert: @Sendable (Int) -> Void = { channel in
            let result = Result { () throws(SoundError) in
                try oneshot(planes[channel], channels: 1, inputRate, outputRate, capacity, source)
            }
            results.withLock { $0[channel] = result }
        }
        // Threads of our own rather than `concurrentPerform`: a Dispatch worker would start
        // libdispatch's 1 Hz workqueue monitor for the rest of the process (see `Delivery`). The
        // first channel runs here; a channel whose thread cannot start runs here too.
        var helpers: [Thread] = []
        for channel in 1..<channels {
            if let helper = try? startThread(name: "fbs-resample", { convert(channel) }) {
                helpers.append(helper)
            } else {
                convert(channel)
            }
        }
        convert(0)
        for helper in helpers { helper.join() }
        let converted = try results.withLock { table throws(SoundError) in
            try (0..<channels).map { channel throws(SoundError) in try table[channel]!.get() }
        }
        let frames = converted.map(\.count).min() ?? 0
        return [Float](unsafeUninitializedCapacity: frames * channels) { output, count in
            let out = output.baseAddress!
            for channel in 0..<channels {
                converted[channel].withUnsafeBufferPointer { plane in
                    let source = plane.baseAddress!
                    for frame in 0..<frames { out[frame * channels + channel] = source[frame] }
                }
            }
            count = frames * channels
        }
    }

    private static func oneshot(
        _ samples: [Float], channels: Int, _ inputRate: Int, _ outputRate: Int, _ capacity: Int, _ source: String
    ) throws(SoundError) -> [Float] {
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var runtime = soxr_runtime_spec(1)
        var failure: soxr_error_t?
        let output = [Float](unsafeUninitializedCapacity: capacity * channels) { buffer, count in
            var done = 0
            failure = samples.withUnsafeBufferPointer { input in
                soxr_oneshot(
                    Double(inputRate), Double(outputRate), UInt32(channels),
                    input.baseAddress, samples.count / channels, nil,
                    buffer.baseAddress, capacity, &done,
                    &io, &quality, &runtime)
            }
            count = failure == nil ? min(done, capacity) * channels : 0
        }
        if let failure {
            throw SoundError(.malformed, source: source, detail: "resampling failed: \(String(cString: failure))")
        }
        return output
    }
}
