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

    /// Starts one play `offset` seconds in, on whatever output: the engine plays a buffer from the
    /// offset without copying it and streams a long file; outputs with no streaming voice decode
    /// it whole first (see `AudioOutput.play(_:from:options:queue:completion:)`).
    func play(
        on output: any AudioOutput, path: String, offset: Double, options: PlaybackOptions, manager: SoundManager,
        completion: @escaping @Sendable (PlaybackEnd) -> Void
    ) -> PlaybackHandle {
        var source: VoiceSource
        switch self {
        case .buffer(let buffer):
            source = .buffer(buffer)
        case .stream:
            source = .streamed(fileAt: path)
            source.streamStarted = { [weak manager] ring in manager?.noteStream(ring) }
        }
        return output.play(source, from: offset, options: options, queue: .global(), completion: completion)
    }
}
