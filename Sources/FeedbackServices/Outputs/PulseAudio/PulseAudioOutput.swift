public import Dispatch

/// The engine: our mixer feeding one always-open PulseAudio playback stream.
///
/// Latency. The stream keeps a safe 50 ms of audio queued at the server (small buffers under-run
/// under load). When a sound starts, stops or changes, the engine re-renders the queued region with
/// the change applied and writes it from the server's read pointer (`PA_SEEK_RELATIVE_ON_READ`), so
/// a new sound is heard at once instead of after the queue. This works because the mix is a pure
/// function of the timeline (see `Timeline`). Servers that do not honour such rewrites (pipewire-pulse,
/// detected by name) get a 20 ms queue written in order instead. A stream opened before anything
/// plays (`prepare()`) is held unstarted, writing nothing; its first sound starts it, written in
/// order from its first frame, as `paplay` starts a stream.
///
/// Lifecycle. The connection opens on the first `play` (or `prepare()`), closes after
/// `idleTimeout` without sound, and opens again on the next `play`: a sound server that went away
/// and came back is used again. If the server dies mid-play, every sound playing ends `.failed`.
///
/// Faults, each bounded in time. A server that dies ends every sound playing `.failed`
/// (`.connectionLost`) at once; one that is not there fails them `.serverUnavailable` at once. A
/// server that hangs (stopped, deadlocked) is noticed by its read position: a healthy server reads
/// the stream continuously, silence included, so once it has stood still for 2 s while a sound
/// plays, every sound fails `.serverStalled` and the connection closes; a connection the server
/// does not answer fails `.serverUnavailable` after 5 s (the same bounds on every engine backend).
/// `.finished` is reported only on a report from the server that it has played the sound's last
/// frame.
///
/// Threads. `play` and the handle methods never wait on the server and never take PulseAudio's
/// lock: they queue a command under a short lock and wake the PulseAudio thread through a
/// non-blocking eventfd. Completions run on the caller's queue, exactly once per play.
public final class PulseAudioOutput: AudioOutput, Sendable {
    /// How stale the server's last timing report may get while sounds play before another is
    /// asked for: what keeps the stall clock honest on a healthy server.
    static let timingRefresh = 0.25

    /// How the engine connects and buffers.
    public struct Configuration: Sendable {
        /// The server to connect to (e.g. `unix:/run/user/1000/pulse/native`); nil for the
        /// default (`PULSE_SERVER`, then the user's socket).
        public var server: String?
        /// The engine rate, in Hz; sounds must be at this rate.
        public var sampleRate: Int
        /// Audio kept queued at the server, in seconds.
        public var bufferDuration: Double
        /// Seconds without sound after which the connection is closed.
        public var idleTimeout: Double
        /// `application.name` the server shows for the stream.
        public var applicationName: String
        /// The stream's `media.role`, which the server's policy modules act on (module-role-cork,
        /// module-role-ducking, per-role volumes): `event` for alerts and effects, `music`, `game`, …
        /// A sound whose `PlaybackOptions.mediaRole` names another plays on a stream of that role.
        public var mediaRole: String

        /// Creates a configuration: default server, 48 kHz, 50 ms queue, 10 s idle timeout, role
        /// `event`.
        public init(
            server: String? = nil, sampleRate: Int = 48_000, bufferDuration: Double = 0.05,
            idleTimeout: Double = 10, applicationName: String = "FeedbackServices", mediaRole: String = "event"
        ) {
            self.server = server
            self.sampleRate = sampleRate
            self.bufferDuration = bufferDuration
            self.idleTimeout = idleTimeout
            self.applicationName = applicationName
            self.mediaRole = mediaRole
        }
    }

    public let name = "engine (PulseAudio)"
    /// The configuration it was made with.
    public let configuration: Configuration
    /// The engine, or why there is none: libpulse cannot be loaded.
    private let engine: Result<PulseAudioEngine, PlaybackError>

    /// Creates the engine output. Nothing connects until the first `play` or `prepare()`. libpulse
    /// is loaded here, if no output loaded it before; when it cannot be, every `prepare` and `play`
    /// fails `.libraryUnavailable`, naming the Debian package that provides it.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        engine = Result(loading: .pulse) { PulseAudioEngine(configuration: configuration) }
    }

    /// The engine rate (`configuration.sampleRate`): a buffer at another rate fails `.unsupportedSound`.
    public var requiredSampleRate: Int? { configuration.sampleRate }

    deinit {
        if case .success(let engine) = engine { engine.shutdown() }
    }

    /// The outputs for the other media roles sounds ask for.
    private let roleOutputs = RoleOutputs<PulseAudioOutput>()

    /// This output, or the one whose stream carries the media role `options` asks for.
    private func output(for options: PlaybackOptions) -> PulseAudioOutput {
        guard let role = options.mediaRole, role != configuration.mediaRole else { return self }
        return roleOutputs.output(for: role) { role in
            var configuration = configuration
            configuration.mediaRole = role
            return PulseAudioOutput(configuration: configuration)
        } ?? self
    }

    /// Counters since the output was made.
    package var statistics: EngineStatistics { (try? engine.get())?.core.statistics ?? EngineStatistics() }

    /// Opens the connection now instead of on the first `play`, and waits up to `timeout` seconds
    /// (at most 5 s, when the attempt itself gives up) for the stream
    /// to be ready. A server that accepts the connection but never answers (a hung one) is no
    /// longer waited for once that time is up.
    /// - Throws: `PlaybackError` (`.serverUnavailable` with the server's message) if it is not.
    public func prepare(timeout: Double = 2) throws(PlaybackError) {
        try engine.get().prepare(timeout: timeout)
    }

    @discardableResult
    public func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(), queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        output(for: options).engine.play(delivery: .queue(queue), completion: completion) {
            $0.play(buffer, options: options, delivery: .queue(queue), completion: completion)
        }
    }

    /// Starts a voice `offset` seconds into `source`: a buffer is played from there without a copy,
    /// a streamed file is decoded a few seconds ahead on a feeder thread (its first half second
    /// before this returns) and read from a fixed-size ring; the feeder stops when the voice ends.
    @discardableResult
    public func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions = PlaybackOptions(),
        queue: DispatchQueue = .global(), completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        output(for: options).engine.play(delivery: .queue(queue), completion: completion) {
            $0.play(source, from: offset, options: options, delivery: .queue(queue), completion: completion)
        }
    }
}

extension PulseAudioOutput: DeliveringAudioOutput {
    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, delivery: Delivery, completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        output(for: options).engine.play(delivery: delivery, completion: completion) {
            $0.play(buffer, options: options, delivery: delivery, completion: completion)
        }
    }
}

extension PulseAudioOutput: EngineOutput {}

