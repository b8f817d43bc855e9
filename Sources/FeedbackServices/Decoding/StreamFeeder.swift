internal import CSoxr
import Glibc

/// Decodes a long sound file into a `StreamingSource` on its own thread, ahead of the mixer:
/// libsndfile reads a chunk, more than two channels are down-mixed, libsoxr converts the rate
/// (streaming, `soxr_process`, the same `SOXR_HQ` recipe as one-shot decoding), and the frames go
/// into the ring. Memory stays flat: one chunk of scratch space plus the ring, whatever the length.
///
/// A looping feeder goes back to the file's first frame at its end without flushing the
/// resampler, so the converter sees one continuous signal and the seam is as smooth as the file.
/// A decoding error part-way ends the stream early (the rest of the voice renders silent).
package final class StreamFeeder: @unchecked Sendable {
    // Locking rule: `reader`, `resampler` and the scratch buffers are used by one thread at a time:
    // the creating thread until `start()` (for `prefill`), then only the feeder thread. The ring
    // they fill is shared through its own atomics (see `StreamingSource`).

    /// Input frames read per step.
    static let chunkFrames = 4_096

    /// The ring the mixer reads.
    package let source: StreamingSource
    private let reader: SoundFileReader
    private let resampler: OpaquePointer?
    private let fileChannels: Int
    private let channelMap: [Int32]?
    private let looping: Bool
    private let ratio: Double
    private var input: [Float]
    private var output: [Float]
    private var finished = false

    /// Opens `path` for streaming at `engineRate`, starting `offset` engine frames in.
    ///
    /// - Parameters:
    ///   - bufferDuration: seconds of audio the ring holds (decoded ahead plus kept for rewrites).
    ///   - history: seconds kept behind the mixer for rewrites; more than the engine's queue.
    /// - Throws: `SoundError` if the file cannot be opened, read or seeked, or the converter fails.
    package init(
        path: String, engineRate: Int, offset: Int64, looping: Bool, bufferDuration: Double = 4, history: Double = 1
    ) throws(SoundError) {
        let reader = try SoundFileReader(path: path)
        let rate = Int(reader.info.samplerate)
        let channels = Int(reader.info.channels)
        try SoundDecoder.validate(sampleRate: rate, channelCount: channels, source: path)
        guard reader.info.frames > 0 else { throw SoundError(.empty, source: path, detail: "zero frames") }
        ratio = Double(engineRate) / Double(rate)
        let engineFrames = Int64((Double(reader.info.frames) * ratio).rounded())
        let start = min(max(0, offset), engineFrames - 1)
        try reader.seek(toFrame: Int64((Double(start) / ratio).rounded(.down)))
        channelMap = channels > 2 ? reader.channelMap() : nil
        fileChannels = channels
        self.looping = looping
        let outChannels = min(2, channels)
        if rate != engineRate {
            var error: soxr_error_t?
            var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
            var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
            var runtime = soxr_runtime_spec(1)
            resampler = soxr_create(Double(rate), Double(engineRate), UInt32(outChannels), &error, &io, &quality, &runtime)
            if let error {
                throw SoundError(.malformed, source: path, detail: "resampler: \(String(cString: error))")
            }
        } else {
            resampler = nil
        }
        self.reader = reader
        input = [Float](repeating: 0, count: Self.chunkFrames * channels)
        output = [Float](repeating: 0, count: (Int(Double(Self.chunkFrames) * ratio) + 256) * outChannels)
        let capacity = Int(bufferDuration * Double(engineRate))
        source = StreamingSource(
            channelCount: outChannels, frameCount: engineFrames - start, capacity: capacity,
            history: Int(history * Double(engineRate)))
    }

    deinit {
        if let resampler { soxr_delete(resampler) }
    }

    /// Frames one step can produce at most: what `output` holds.
    private var stepFrames: Int { output.count / source.channelCount }

    /// Decodes up to `seconds` ahead on the calling thread, so the first frames are there before
    /// the voice starts. Call before `start()`.
    package func prefill(seconds: Double, engineRate: Int) {
        let target = Int64(seconds * Double(engineRate))
        while !finished, source.decodedFrames < target, source.writableFrames >= stepFrames { step() }
    }

    /// Starts the feeder thread. It ends at the end of a non-looping file or when the source is
    /// cancelled. If no thread can be started, the voice plays what `prefill` decoded, then silence.
    package func start() {
        (try? startThread(name: "fbs-feeder") { [self] in run() })?.detach()
    }

    private func run() {
        while !finished, !source.isCancelled {
            if source.writableFrames >= stepFrames {
                step()
            } else {
                // A quarter of the ring is seconds of audio: polling every 10 ms keeps it full
                // without the mixer ever having to signal (which a real-time thread should not).
                usleep(10_000)
            }
        }
    }

    /// Reads, converts and queues one chunk.
    private func step() {
        do {
            let got = try input.withUnsafeMutableBufferPointer { buffer throws(SoundError) in
                try reader.read(into: buffer.baseAddress!, frameCount: Self.chunkFrames)
            }
            if got == 0 {
                if looping {
                    try reader.seek(toFrame: 0)
                    return
                }
                finishStream()
                return
            }
            var frames = Array(input[0..<(got * fileChannels)])
            if fileChannels > 2 { frames = Downmix.toStereo(frames, channels: fileChannels, map: channelMap) }
            convertAndWrite(frames, count: got)
        } catch {
            finished = true
        }
    }

    private func convertAndWrite(_ frames: [Float], count: Int) {
        guard let resampler else {
            frames.withUnsafeBufferPointer { write($0.baseAddress!, count) }
            return
        }
        let capacity = stepFrames
        let channels = source.channelCount
        output.withUnsafeMutableBufferPointer { out in
            frames.withUnsafeBufferPointer { input in
                var consumed = 0
                while consumed < count {
                    var used = 0
                    var done = 0
                    soxr_process(
                        resampler, input.baseAddress! + consumed * channels, count - consumed, &used,
                        out.baseAddress, capacity, &done)
                    if done > 0 { write(out.baseAddress!, done) }
                    consumed += used
                    if used == 0 && done == 0 { break }
                }
            }
        }
    }

    /// Writes into the ring, first waiting for room if the mixer has not caught up.
    private func write(_ samples: UnsafePointer<Float>, _ count: Int) {
        while source.writableFrames < count {
            if source.isCancelled { return }
            usleep(5_000)
        }
        source.write(samples, frameCount: count)
    }

    /// The file ended: drains the converter's last frames, then stops.
    private func finishStream() {
        finished = true
        guard let resampler else { return }
        let capacity = stepFrames
        output.withUnsafeMutableBufferPointer { out in
            while true {
                var done = 0
                soxr_process(resampler, nil, 0, nil, out.baseAddress, capacity, &done)
                guard done > 0 else { break }
                write(out.baseAddress!, done)
            }
        }
    }
}
