import Glibc

/// Where a voice's samples come from, once an output has resolved a `VoiceSource` at its rate.
enum VoiceSamples: Sendable {
    /// A decoded sound held whole in memory.
    case buffer(PCMBuffer)
    /// A long sound decoded ahead by another thread into a bounded ring (see `StreamingSource`).
    case stream(StreamingSource)

    /// Frames in one pass through the sound, at the engine rate.
    var frameCount: Int64 {
        switch self {
        case .buffer(let buffer): Int64(buffer.frameCount)
        case .stream(let stream): stream.frameCount
        }
    }

    /// Stops a stream's feeder: its voice is gone, or will never start.
    func cancel() {
        if case .stream(let stream) = self { stream.cancel() }
    }
}

/// A sound placed on the engine's timeline.
struct Voice: Sendable {
    /// The engine's handle for it.
    let id: UInt64
    /// The samples it plays, at the engine rate.
    let source: VoiceSamples
    /// The timeline frame at which it starts sounding.
    let start: Int64
    /// The frame of the sound heard at `start` (a seek): 0 plays it from the beginning.
    let offset: Int64
    /// How many times it plays in all: 1 plays once; `Int.max` repeats until stopped.
    let playCount: Int
    /// Linear gain over the timeline (fades are ramps of it).
    var gain: Envelope
    /// Balance −1 (left only) … 0 (both at full level) … 1 (right only) over the timeline.
    var pan: Envelope
    /// The first frame after its last audible one; `Int64.max` for a voice that repeats forever, or
    /// so many times that its last frame cannot be numbered (it plays on as if forever).
    var end: Int64

    init(id: UInt64, buffer: PCMBuffer, start: Int64, playCount: Int, gain: Envelope, pan: Envelope) {
        self.init(id: id, source: .buffer(buffer), start: start, offset: 0, playCount: playCount, gain: gain, pan: pan)
    }

    init(
        id: UInt64, source: VoiceSamples, start: Int64, offset: Int64, playCount: Int, gain: Envelope, pan: Envelope
    ) {
        self.id = id
        self.source = source
        self.start = start
        let length = max(1, source.frameCount)
        self.offset = min(max(0, offset), length - 1)
        self.playCount = max(1, playCount)
        self.gain = gain
        self.pan = pan
        let (total, overflow) = length.multipliedReportingOverflow(by: Int64(self.playCount))
        // total − offset ≥ 0: the offset lies within the first pass.
        let (last, late) = start.addingReportingOverflow(total - self.offset)
        self.end = overflow || late || self.playCount == .max ? .max : last
    }

    /// Ends the voice at `frame` with a ramp to silence over `ramp` frames (a click-free stop when
    /// short, a fade-out when long).
    mutating func stop(at frame: Int64, ramp: Int64, curve: Envelope.Curve = .linear) {
        guard frame < end else { return }
        gain.ramp(at: frame, to: 0, over: ramp, curve: curve)
        end = min(end, frame + max(1, ramp))
    }
}

/// Sums voices into interleaved stereo Float32: a pure function of the voices and the range asked
/// for, so any range can be rendered again with the same result.
///
/// Mono voices feed both channels at full level; pan is a balance: moving right lowers the left
/// side by cos(pan·π/2) and leaves the right at full level (and the reverse). After summing, a
/// stateless soft limiter keeps the output inside ±1: samples up to ±`limiterKnee` pass unchanged,
/// louder ones bend smoothly (tanh) towards ±1, so a sum of voices never wraps or clips harshly.
///
/// Real-time contract: `render` allocates nothing, locks nothing, and never throws.
enum Mixer {
    /// Where the soft limiter starts bending: −1.9 dBFS.
    static let limiterKnee: Float = 0.8

    /// Renders `frameCount` frames starting at timeline frame `start` into `output`
    /// (`2 × frameCount` interleaved floats), overwriting what was there.
    static func render(
        _ voices: UnsafeBufferPointer<Voice>, from start: Int64, frameCount: Int,
        into output: UnsafeMutablePointer<Float>
    ) {
        output.update(repeating: 0, count: frameCount * 2)
        let rangeEnd = start + Int64(frameCount)
        guard let base = voices.baseAddress else { return }
        // Voices are read in place: copying one would retain and release its arrays every block.
        for index in 0..<voices.count where base[index].start < rangeEnd && base[index].end > start {
            let voice = base + index
            add(voice, from: max(start, voice.pointee.start), to: min(rangeEnd, voice.pointee.end), origin: start, into: output)
        }
        limit(output, count: frameCount * 2)
    }

    private static func add(
        _ voice: UnsafePointer<Voice>, from first: Int64, to last: Int64, origin: Int64,
        into output: UnsafeMutablePointer<Float>
    ) {
        switch voice.pointee.source {
        case .buffer(let buffer):
            buffer.samples.withUnsafeBufferPointer { samples in
                let source = samples.baseAddress!
                let length = Int64(buffer.frameCount)
                let channels = buffer.channelCount
                var frame = first
                while frame < last {
                    let position = (frame - voice.pointee.start + voice.pointee.offset) % length
                    let runEnd = min(last, frame + (length - position))
                    add(voice, source + Int(position) * channels, channels: channels, from: frame, to: runEnd,
                        origin: origin, into: output)
                    frame = runEnd
                }
            }
        case .stream(let stream):
            // A stream is indexed by frames since the voice started; the feeder has already applied
            // the offset and the looping. Frames not decoded yet (or already recycled) are silent.
            stream.noteDemand(upTo: last - voice.pointee.start)
            var frame = first
            while frame < last {
                let index = frame - voice.pointee.start
                let run = stream.readableRun(at: index, limit: last - frame)
                if let pointer = run.samples {
                    add(voice, pointer, channels: stream.channelCount, from: frame, to: frame + run.count,
                        origin: origin, into: output)
                }
                frame += run.count
            }
        }
    }

    /// Adds `input` (contiguous frames for `first..<last`) with the voice's gain and pan.
    private static func add(
        _ voice: UnsafePointer<Voice>, _ input: UnsafePointer<Float>, channels: Int, from first: Int64,
        to last: Int64, origin: Int64, into output: UnsafeMutablePointer<Float>
    ) {
        var frame = first
        var input = input
        while frame < last {
            let gain = voice.pointee.gain.segment(at: frame)
            let pan = voice.pointee.pan.segment(at: frame)
            let runEnd = min(last, gain.until, pan.until)
            let count = Int(runEnd - frame)
            let (leftStart, rightStart) = balance(pan.value)
            let out = output + Int(frame - origin) * 2
            let l = gain.value * leftStart
            let r = gain.value * rightStart
            if gain.slope == 0 && pan.slope == 0 {
                mix(input, channels: channels, count: count, left: l, right: r, into: out)
            } else {
                // Gains move linearly across the run, computed per sample (no carried sum, so the
                // loop still vectorises).
                let (leftEnd, rightEnd) = balance(pan.value + pan.slope * Float(count))
                let gainEnd = gain.value + gain.slope * Float(count)
                let dl = (gainEnd * leftEnd - l) / Float(count)
                let dr = (gainEnd * rightEnd - r) / Float(count)
                ramp(input, channels: channels, count: count, left: (l, dl), right: (r, dr), into: out)
            }
            input += count * channels
            frame = runEnd
        }
    }

    @inline(__always)
    private static func mix(
        _ input: UnsafePointer<Float>, channels: Int, count: Int, left: Float, right: Float,
        into out: UnsafeMutablePointer<Float>
    ) {
        if channels == 1 {
            for index in 0..<count {
                let sample = input[index]
                out[2 * index] += sample * left
                out[2 * index + 1] += sample * right
            }
        } else {
            for index in 0..<count {
                out[2 * index] += input[2 * index] * left
                out[2 * index + 1] += input[2 * index + 1] * right
            }
        }
    }

    @inline(__always)
    private static func ramp(
        _ input: UnsafePointer<Float>, channels: Int, count: Int, left: (Float, Float), right: (Float, Float),
        into out: UnsafeMutablePointer<Float>
    ) {
        if channels == 1 {
            for index in 0..<count {
                let sample = input[index]
                let step = Float(index)
                out[2 * index] += sample * (left.0 + left.1 * step)
                out[2 * index + 1] += sample * (right.0 + right.1 * step)
            }
        } else {
            for index in 0..<count {
                let step = Float(index)
                out[2 * index] += input[2 * index] * (left.0 + left.1 * step)
                out[2 * index + 1] += input[2 * index + 1] * (right.0 + right.1 * step)
            }
        }
    }

    /// Left and right gains for a balance value.
    /// Fully to one side is exactly silent on the other (cos(π/2) is not exactly 0 in floating point).
    static func balance(_ pan: Float) -> (left: Float, right: Float) {
        let clamped = min(1, max(-1, pan))
        let far = abs(clamped) == 1 ? 0 : Float(cos(Double(abs(clamped)) * .pi / 2))
        return clamped >= 0 ? (far, 1) : (1, far)
    }

    /// The soft limiter, in place.
    static func limit(_ samples: UnsafeMutablePointer<Float>, count: Int) {
        let knee = limiterKnee
        let room = 1 - knee
        for index in 0..<count {
            let x = samples[index]
            let magnitude = abs(x)
            if magnitude > knee {
                let bent = knee + room * Float(tanh(Double((magnitude - knee) / room)))
                samples[index] = x < 0 ? -bent : bent
            }
        }
    }
}

/// The mixer, for the package's benchmark executable.
package enum MixerBenchmark {
    /// Renders `blocks` consecutive blocks of `frames` frames of the given sounds, all playing
    /// from frame 0 at `gain` with the given balances, into `output` (`2 × frames` floats).
    package static func render(
        _ buffers: [PCMBuffer], gain: Float, pans: [Float], frames: Int, blocks: Int,
        into output: UnsafeMutablePointer<Float>
    ) {
        let voices = buffers.indices.map { index in
            Voice(id: UInt64(index), buffer: buffers[index], start: 0, playCount: .max, gain: Envelope(gain),
                  pan: Envelope(pans[index % pans.count]))
        }
        voices.withUnsafeBufferPointer { voices in
            for block in 0..<blocks {
                Mixer.render(voices, from: Int64(block * frames), frameCount: frames, into: output)
            }
        }
    }
}
