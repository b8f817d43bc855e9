import FeedbackServices
import Dispatch

/// What a `Sound` plays: a decoded buffer shared through the manager's cache, or a file too long
/// to hold, streamed from disk on every play.
enum SoundContent: Sendable {
    case buffer(PCMBuffer)
    case stream(duration: Double)

    var duration: Double {
        switch self {
        case .buffer(let buffer): buffer.duration
        case .stream(let duration): duration
        }
    }

    /// Whether it is read from disk as it plays.
    var isStreamed: Bool {
        if case .stream = self { true } else { false }
    }

    /// Seconds decoded before a streamed voice starts, so its first frames are there.
    static let streamPrefill = 0.5

    /// Starts one play `offset` seconds in.
    ///
    /// The engine plays a buffer from the offset without copying it and a stream through a
    /// `StreamFeeder`. Other outputs (libcanberra, a file) get a copy of the buffer from the offset,
    /// and a stream decoded whole first: they have no streaming voice.
    func play(
        on output: any AudioOutput, path: String, offset: Double, options: PlaybackOptions, manager: SoundManager,
        completion: @escaping @Sendable (PlaybackEnd) -> Void
    ) -> PlaybackHandle {
        switch self {
        case .buffer(let buffer):
            let frames = Int((offset * Double(buffer.sampleRate)).rounded())
            if let engine = output as? PulseAudioOutput, buffer.sampleRate == engine.configuration.sampleRate {
                return engine.play(.buffer(buffer), offset: Int64(frames), options: options, queue: .global(),
                                   completion: completion)
            }
            return output.play(buffer.dropping(frames: frames), options: options, queue: .global(), completion: completion)
        case .stream:
            if let engine = output as? PulseAudioOutput {
                let rate = engine.configuration.sampleRate
                do {
                    let feeder = try StreamFeeder(
                        path: path, engineRate: rate, offset: Int64((offset * Double(rate)).rounded()),
                        looping: options.playCount != 1)
                    feeder.prefill(seconds: Self.streamPrefill, engineRate: rate)
                    feeder.start()
                    manager.noteStream(feeder.source)
                    return engine.play(.stream(feeder.source), offset: 0, options: options, queue: .global(),
                                       completion: completion)
                } catch {
                    return Self.failed(error, completion: completion)
                }
            }
            do {
                let decoded = try SoundDecoder(maximumDuration: nil).decode(fileAt: path)
                let frames = Int((offset * Double(decoded.buffer.sampleRate)).rounded())
                return output.play(
                    decoded.buffer.dropping(frames: frames), options: options, queue: .global(), completion: completion)
            } catch {
                return Self.failed(error, completion: completion)
            }
        }
    }

    private static func failed(_ error: SoundError, completion: @escaping @Sendable (PlaybackEnd) -> Void)
        -> PlaybackHandle
    {
        let handle = PlaybackHandle(id: nextPlaybackID(), queue: .global(), completion: completion)
        handle.end(.failed(PlaybackError(.unsupportedSound, detail: error.description)))
        return handle
    }
}

extension PCMBuffer {
    /// The buffer without its first `frames` frames (at least one frame is kept).
    func dropping(frames: Int) -> PCMBuffer {
        let kept = min(max(0, frames), frameCount - 1)
        guard kept > 0 else { return self }
        return PCMBuffer(
            validSamples: Array(samples[(kept * channelCount)...]), channelCount: channelCount, sampleRate: sampleRate)
    }
}
