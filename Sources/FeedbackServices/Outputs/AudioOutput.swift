public import Dispatch
import Synchronization

/// How a sound is played.
public struct PlaybackOptions: Sendable, Equatable {
    /// Linear gain, 0 (silent) … 1 (as recorded) … `VolumeLimit.maximum` (4, +12 dB: louder; the
    /// output limiter keeps peaks in range). A larger gain plays at the maximum.
    public var volume: Float
    /// Balance: −1 left only, 0 centre (both at full level), 1 right only.
    public var pan: Float
    /// How many times the sound plays in all; `PlaybackOptions.forever` repeats until stopped.
    public var playCount: Int
    /// Seconds over which the sound rises from silence to `volume`; 0 starts at full level.
    public var fadeIn: Double
    /// The stream's media role, which the session's policy routes, corks and ducks by (PulseAudio's
    /// `media.role`: `event`, `alarm`, `phone`, …; feedbackd themes name one as `media-role`); nil
    /// for the output's own (`event`). On the engine's PulseAudio and PipeWire outputs a sound
    /// with another role plays on a second stream carrying it, opened at that role's first sound
    /// (as the first stream is) and idle-closed as it is; on PipeWire a PulseAudio role name is
    /// given as pipewire-pulse gives it (`event` is `Notification`, `phone` `Communication`, …).
    /// Four roles besides the output's own get a stream; a sound of a role past them plays on the
    /// output's own. libcanberra, which opens a stream per sound, gives each its role; the ALSA
    /// and file outputs have no roles and play every sound alike.
    public var mediaRole: String?

    /// The shape of the fade-in (the player's crossfades rise along an equal-power curve).
    package var fadeCurve: Envelope.Curve = .linear
    /// A play on the same output that fades out, along `fadeCurve`, over the same frames as this
    /// one fades in: a crossfade aligned to the frame, which two separate calls could not promise.
    package var replacing: UInt64?

    /// Repeat until stopped.
    public static let forever = Int.max

    /// Creates options; the defaults play the sound once, centred, at its own level, on the
    /// output's own stream.
    public init(volume: Float = 1, pan: Float = 0, playCount: Int = 1, fadeIn: Double = 0, mediaRole: String? = nil) {
        self.volume = volume
        self.pan = pan
        self.playCount = playCount
        self.fadeIn = fadeIn
        self.mediaRole = mediaRole
    }
}

/// Why a play ended. Every play reports exactly one of these, exactly once.
public enum PlaybackEnd: Sendable, Equatable {
    /// The last sample was played by the sound server (not merely mixed or sent); on a
    /// `FileOutput`, written to the file. On a live output, never reported sooner after the play
    /// than the sound's length (less 1 ms, and 0.2 ms a second for the device's clock): a
    /// position that runs faster than real time (a server catching up on the cycles it missed
    /// while it did not run) delays the finish instead.
    case finished
    /// `PlaybackHandle.stop()` ended it.
    case stopped
    /// The task awaiting it was cancelled, which stopped it.
    case cancelled
    /// It could not be played, or playing broke off.
    case failed(PlaybackError)
}

/// Why playback failed.
public struct PlaybackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Reason: Sendable, Equatable {
        /// No output could be used; `tried` names each one and why it was not usable.
        case noAudioOutput(tried: [String])
        /// The sound server could not be reached or refused the stream.
        case serverUnavailable
        /// The connection to the sound server broke while the sound was playing.
        case connectionLost
        /// The sound server or device stopped taking audio (it hung): the engine saw its read
        /// position stand still (on PipeWire, its graph stop asking for audio) for 2 s while the
        /// sound played (the same 2 s on every engine backend); with libcanberra, the play had not
        /// ended 2 s after the sound's length (`CanberraOutput.stallMargin`).
        case serverStalled
        /// libcanberra reported an error (its `CA_ERROR_*` code).
        case canberra(code: Int32)
        /// The output was closed.
        case outputClosed
        /// The output cannot play this sound (e.g. an unknown theme event).
        case unsupportedSound
        /// The audio device is held by another program and does not mix (an ALSA `hw` PCM: `EBUSY`).
        case deviceBusy
        /// The audio device could not be opened: there is no such device, or it cannot play
        /// stereo at the engine rate.
        case deviceUnavailable
        /// The audio device went away while the sound played (unplugged, its driver unbound).
        case deviceLost
        /// The library the output plays through (libpulse, libpipewire-0.3) cannot be loaded;
        /// `detail` says why and names the Debian package that provides it.
        case libraryUnavailable
    }

    /// What failed.
    public var reason: Reason
    /// The server's or library's message, where there is one.
    public var detail: String?

    /// Creates an error.
    public init(_ reason: Reason, detail: String? = nil) {
        self.reason = reason
        self.detail = detail
    }

    /// Whether the play had started when this ended it: its voice was queued to the server or
    /// device, which then went away or stopped taking audio. A caller must not play such a sound
    /// again from its start elsewhere: part of it may have been heard.
    package var endedAPlayInProgress: Bool {
        switch reason {
        case .connectionLost, .serverStalled, .deviceLost: true
        case .noAudioOutput, .serverUnavailable, .canberra, .outputClosed, .unsupportedSound, .deviceBusy,
            .deviceUnavailable, .libraryUnavailable:
            false
        }
    }

    /// A sentence for logs and the command line.
    public var description: String {
        let summary: String =
            switch reason {
            case .noAudioOutput(let tried): "no audio output is available (tried: \(tried.joined(separator: "; ")))"
            case .serverUnavailable: "the sound server is not available"
            case .connectionLost: "the connection to the sound server was lost"
            case .serverStalled: "the sound server stopped playing (it does not answer)"
            case .canberra(let code): "libcanberra failed (error \(code))"
            case .outputClosed: "the audio output was closed"
            case .unsupportedSound: "the output cannot play this sound"
            case .deviceBusy: "the audio device is busy (another program holds it)"
            case .deviceUnavailable: "the audio device cannot be opened"
            case .deviceLost: "the audio device went away"
            case .libraryUnavailable: "the output's library cannot be loaded"
            }
        guard let detail, !detail.isEmpty else { return summary }
        return "\(summary): \(detail)"
    }
}

/// Somewhere sounds can be played: the engine's PulseAudio stream or ALSA PCM, libcanberra, or a WAV file.
///
/// Every output reports each play's end exactly once, with its reason, on the queue given to `play`.
public protocol AudioOutput: AnyObject, Sendable {
    /// A short name for logs and `feedbackctl devices`.
    var name: String { get }

    /// The rate, in Hz, a buffer must have to be played here (decode sounds at it); nil when any
    /// rate plays (libcanberra converts whatever it is given).
    var requiredSampleRate: Int? { get }

    /// Connects now instead of at the first `play`, waiting up to `timeout` seconds for the output
    /// to be ready. Outputs with nothing to connect (a file, libcanberra, which connects when made)
    /// return at once; that is what the default implementation does.
    /// - Throws: `PlaybackError` if the output could not be made ready.
    func prepare(timeout: Double) throws(PlaybackError)

    /// Starts playing `buffer` and returns at once; it never waits on a server.
    ///
    /// - Parameters:
    ///   - buffer: the samples to play.
    ///   - options: volume, pan, how many times, fade-in.
    ///   - queue: where `completion` runs.
    ///   - completion: called exactly once when the play ends, with why.
    /// - Returns: a handle to stop the sound or change its volume and pan while it plays.
    @discardableResult
    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle

    /// Starts playing `source` `offset` seconds in (a seek), as `play(_:options:queue:completion:)`
    /// does; a repeating play wraps to the sound's start, not to the offset.
    ///
    /// The engine streams a streamed file in fixed memory and plays a buffer from the offset without
    /// copying it. The default implementation, for outputs with no streaming voice, decodes a
    /// streamed file whole (at `requiredSampleRate`, or 48 kHz) and plays a copy from the offset.
    /// A file that cannot be read ends the play `.failed` (`.unsupportedSound`). The decoding runs
    /// on the calling thread, as does the first half second of a stream's.
    @discardableResult
    func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle
}

/// An output that can also hand each play's end to a `Delivery` rather than a queue (the engine),
/// so that a caller running its own loop starts no Dispatch worker.
protocol DeliveringAudioOutput: AudioOutput {
    /// `play(_:options:queue:completion:)`, with `completion` handed to `delivery`.
    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, delivery: Delivery, completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle
}

extension AudioOutput {
    /// Nothing to connect: returns at once.
    public func prepare(timeout: Double) throws(PlaybackError) {}

    /// Decodes `source` whole and plays a copy from `offset` seconds on (see the requirement).
    @discardableResult
    public func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        let buffer: PCMBuffer
        do {
            buffer = try source.decoded(at: requiredSampleRate)
        } catch {
            return PlaybackHandle.failed(error, delivery: .queue(queue), completion: completion)
        }
        let frames = Int((max(0, offset) * Double(buffer.sampleRate)).rounded())
        return play(buffer.dropping(frames: frames), options: options, queue: queue, completion: completion)
    }

    /// Plays `buffer` and waits until it ends; cancelling the awaiting task stops the sound and
    /// returns `.cancelled`.
    public func play(_ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions()) async -> PlaybackEnd {
        let box = HandleBox()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let handle = play(buffer, options: options, queue: .global()) { end in
                    continuation.resume(returning: end)
                }
                box.set(handle)
            }
        } onCancel: {
            box.cancel()
        }
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

/// Holds the handle of an awaited play so that cancellation, which may come before `play` has
/// returned the handle, still stops it.
private final class HandleBox: Sendable {
    private let state = Lock<(handle: PlaybackHandle?, cancelled: Bool)>((nil, false))

    func set(_ handle: PlaybackHandle) {
        let cancelled = state.withLock { state in
            state.handle = handle
            return state.cancelled
        }
        if cancelled { handle.end(.cancelled) }
    }

    func cancel() {
        let handle = state.withLock { state in
            state.cancelled = true
            return state.handle
        }
        handle?.end(.cancelled)
    }
}

/// An output our engine drives (`PulseAudioOutput`, `PipeWireOutput`, `ALSAOutput`): what its
/// core counts, in one type for every backend. The player counts the underflows (each an audible
/// gap) to measure again a run that the machine's load spoiled.
package protocol EngineOutput: AudioOutput {
    /// What the engine did since the output was made.
    var statistics: EngineStatistics { get }
}

/// The outputs an engine output plays other media roles on (`PlaybackOptions.mediaRole`): one per
/// role, made at that role's first sound with the serving output's configuration but for the role,
/// and kept while that output lives. Each is a whole engine of its own (connection, stream, idle
/// close, statistics) with the same queue and rewinds, so a role's sounds start as the first
/// stream's do; its first sound waits for its stream to open, as a process's first sound does.
///
/// Thread safety: may be used from any thread.
package final class RoleOutputs<Output: AudioOutput>: Sendable {
    /// The most roles, besides the serving output's own, that get a stream.
    package static var maximum: Int { 4 }
    /// The longest role name, in bytes.
    package static var maximumRoleLength: Int { 64 }
    private let outputs = Lock<[String: Output]>([:])

    package init() {}

    /// The output whose stream carries `role`, made with `make` at the role's first sound; nil for
    /// an empty or over-long role name, or a role past `maximum`: the sound then plays on the
    /// serving output's own stream.
    package func output(for role: String, make: (String) -> Output) -> Output? {
        guard !role.isEmpty, role.utf8.count <= Self.maximumRoleLength else { return nil }
        return outputs.withLock { outputs in
            if let made = outputs[role] { return made }
            guard outputs.count < Self.maximum else { return nil }
            let made = make(role)
            outputs[role] = made
            return made
        }
    }

    /// The roles that have a stream, sorted.
    package var roles: [String] { outputs.withLock { $0.keys.sorted() } }
}
