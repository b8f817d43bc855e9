public import Dispatch
import Glibc

/// The engine on PipeWire's own protocol: our mixer rendering the timeline inside a `pw_stream`'s
/// process callback, at PipeWire's latency.
///
/// Latency. PipeWire asks for each buffer just before the graph needs it, so the process callback
/// renders the timeline at that moment: a sound started now is in the next buffer, one quantum
/// (`node.latency`, 256/48000 = 5.3 ms by default) later, with no queue to rewrite.
///
/// Classification. The stream says `media.role = Notification`, `media.category = Playback`,
/// `media.type = Audio`: what pipewire-pulse turns libcanberra's `media.role = event` into, so that
/// WirePlumber's per-role stream settings (the desktop's "System Sounds" volume and mute, kept
/// under `Output/Audio:media.role:Notification`) apply to it as to libcanberra's sounds.
///
/// Lifecycle. The connection opens on the first `play` (or `prepare()`), closes after
/// `idleTimeout` without sound, and opens again on the next `play`: a daemon that restarted is used
/// again. If the daemon goes away mid-play, every sound playing ends `.failed(.connectionLost)`.
/// A stream that does not start within 5 s (`EngineTimeouts.open`) fails its plays
/// `.serverUnavailable`; one whose graph stops calling it for 2 s (`EngineTimeouts.stall`) while
/// sounds play fails them `.serverStalled`.
///
/// Threads. `play` and the handle methods never wait: they queue a command under a short lock,
/// which the real-time thread takes without waiting (a try-lock: a command that finds the lock busy
/// is heard one quantum later). Completions run on the caller's queue, exactly once per play,
/// `.finished` once the stream's clock says the graph has played the sound's last frame. The
/// process callback runs on the context's data-loop thread, which is real-time where the system
/// allows it (see `ThreadScheduling`; `statistics.streamThread` says how it ran); where it is not,
/// the output plays all the same and writes one line saying so to standard error, once per process.
public final class PipeWireOutput: AudioOutput, Sendable {
    /// How the stream is made.
    public struct Configuration: Sendable {
        /// The daemon's socket (`remote.name`: a name in `$XDG_RUNTIME_DIR` or an absolute path);
        /// nil for the default (`PIPEWIRE_REMOTE`, then `pipewire-0`).
        public var remote: String?
        /// The engine rate, in Hz; sounds must be at this rate.
        public var sampleRate: Int
        /// Frames per buffer the stream asks the graph for (`node.latency` = frames/rate).
        public var latencyFrames: Int
        /// Seconds without sound after which the connection is closed.
        public var idleTimeout: Double
        /// `application.name` the daemon shows for the stream.
        public var applicationName: String
        /// The stream's `media.role` in PipeWire's spelling: `Notification` for alerts and event
        /// sounds (pipewire-pulse's name for PulseAudio's `event`), `Music`, `Game`, … A sound
        /// whose `PlaybackOptions.mediaRole` names another plays on a stream of that role.
        public var mediaRole: String

        /// Creates a configuration: default daemon, 48 kHz, 256 frames, 10 s idle timeout, role
        /// `Notification`.
        public init(
            remote: String? = nil, sampleRate: Int = 48_000, latencyFrames: Int = 256, idleTimeout: Double = 10,
            applicationName: String = "FeedbackServices", mediaRole: String = "Notification"
        ) {
            self.remote = remote
            self.sampleRate = sampleRate
            self.latencyFrames = latencyFrames
            self.idleTimeout = idleTimeout
            self.applicationName = applicationName
            self.mediaRole = mediaRole
        }
    }

    /// How a thread is scheduled: what `PipeWireOutput` reports of the thread its stream's
    /// process callback runs on (the PipeWire context's data-loop thread).
    ///
    /// When the process may make a thread `SCHED_FIFO` at priority 88 itself (root,
    /// `CAP_SYS_NICE`, or `RLIMIT_RTPRIO` ≥ 88), the output does so, with a context that loads no
    /// configuration file and only the modules a stream needs. Otherwise the context reads
    /// `client-rt.conf`, as `pw-play` does, and libpipewire-module-rt raises the thread: itself
    /// at a lower priority when `RLIMIT_RTPRIO` allows one (≥ 11), else through RTKit (or the
    /// desktop portal) on D-Bus; when nothing works, it stays `SCHED_OTHER` and the output plays
    /// all the same.
    package struct ThreadScheduling: Sendable, Equatable, CustomStringConvertible {
        /// The policy as `sched_getscheduler(2)` numbers it (`SCHED_OTHER` 0, `SCHED_FIFO` 1,
        /// `SCHED_RR` 2, `SCHED_BATCH` 3, `SCHED_IDLE` 5, `SCHED_DEADLINE` 6), without the
        /// `SCHED_RESET_ON_FORK` flag module-rt adds.
        package let policy: Int32
        /// The real-time priority (`sched_param.sched_priority`): 1–99 under `SCHED_FIFO` and
        /// `SCHED_RR`, 0 under the others.
        package let priority: Int32

        /// Creates a value from a policy number and a priority.
        package init(policy: Int32, priority: Int32) {
            self.policy = policy
            self.priority = priority
        }

        /// Whether the policy is a real-time one: `SCHED_FIFO` or `SCHED_RR`.
        package var isRealTime: Bool { policy == SCHED_FIFO || policy == SCHED_RR }

        /// The policy's name: `SCHED_FIFO`, `SCHED_OTHER`, …
        package var policyName: String {
            switch policy {
            case 0: "SCHED_OTHER"
            case 1: "SCHED_FIFO"
            case 2: "SCHED_RR"
            case 3: "SCHED_BATCH"
            case 5: "SCHED_IDLE"
            case 6: "SCHED_DEADLINE"
            default: "policy \(policy)"
            }
        }

        /// "real-time (SCHED_FIFO, priority 88)" or "not real-time (SCHED_OTHER)".
        package var description: String {
            isRealTime ? "real-time (\(policyName), priority \(priority))" : "not real-time (\(policyName))"
        }
    }

    public let name = "engine (PipeWire)"
    /// The configuration it was made with.
    public let configuration: Configuration
    /// The engine, or why there is none: libpipewire-0.3 cannot be loaded.
    private let engine: Result<PipeWireEngine, PlaybackError>

    /// Creates the output. Nothing connects until the first `play` or `prepare()`. libpipewire-0.3
    /// is loaded here, if no output loaded it before; when it cannot be, every `prepare` and `play`
    /// fails `.libraryUnavailable`, naming the Debian package that provides it.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        engine = Result(loading: .pipeWire) { PipeWireEngine(configuration: configuration) }
    }

    deinit {
        if case .success(let engine) = engine { engine.shutdown() }
    }

    /// A media role as PipeWire names it: PulseAudio's names as pipewire-pulse hands a PulseAudio
    /// client's role to PipeWire (`event` → `Notification`, `phone` → `Communication`, `music` →
    /// `Music`, …), any other as given; so a role means the same on both outputs.
    package static func pipeWireRole(_ role: String) -> String {
        switch role {
        case "video", "animation": "Movie"
        case "music": "Music"
        case "game": "Game"
        case "event": "Notification"
        case "phone": "Communication"
        case "production": "Production"
        case "a11y": "Accessibility"
        case "test": "Test"
        default: role
        }
    }

    /// The outputs for the other media roles sounds ask for.
    private let roleOutputs = RoleOutputs<PipeWireOutput>()

    /// This output, or the one whose stream carries the media role `options` asks for.
    private func output(for options: PlaybackOptions) -> PipeWireOutput {
        guard let asked = options.mediaRole else { return self }
        let role = Self.pipeWireRole(asked)
        guard role != configuration.mediaRole else { return self }
        return roleOutputs.output(for: role) { role in
            var configuration = configuration
            configuration.mediaRole = role
            return PipeWireOutput(configuration: configuration)
        } ?? self
    }

    /// The engine rate (`configuration.sampleRate`): a buffer at another rate fails `.unsupportedSound`.
    public var requiredSampleRate: Int? { configuration.sampleRate }

    /// Counters since the output was made.
    package var statistics: EngineStatistics { (try? engine.get())?.statistics ?? EngineStatistics() }

    /// How the thread that would run a stream's process callback is scheduled in this process,
    /// found without connecting to a daemon: a context made as this output makes one, asked on
    /// its data-loop thread (the thread a stream's callback runs on). What `feedbackctl devices`
    /// reports. Takes a few milliseconds (libpipewire loads its modules).
    /// - Returns: nil if libpipewire cannot be loaded or its data thread could not be asked.
    package static func streamThreadScheduling() -> ThreadScheduling? {
        guard OptionalLibrary.pipeWire.unavailableReason == nil else { return nil }
        return PipeWireEngine.probeStreamThreadScheduling()
    }

    /// Opens the connection now instead of on the first `play`, and waits up to `timeout` seconds
    /// for the stream to stream.
    /// - Throws: `PlaybackError` (`.serverUnavailable`) if it does not.
    public func prepare(timeout: Double = 2) throws(PlaybackError) {
        try engine.get().prepare(timeout: timeout)
    }

    @discardableResult
    public func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(), queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        output(for: options).engine.play(delivery: .queue(queue), completion: completion) {
            $0.play(.buffer(buffer), from: 0, options: options, delivery: .queue(queue), completion: completion)
        }
    }

    /// Starts a voice `offset` seconds into `source`: a buffer is played from there without a copy,
    /// a streamed file is decoded ahead on a feeder thread and read from a fixed-size ring.
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

extension PipeWireOutput: EngineOutput {}

extension PipeWireOutput: DeliveringAudioOutput {
    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, delivery: Delivery, completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        output(for: options).engine.play(delivery: delivery, completion: completion) {
            $0.play(.buffer(buffer), from: 0, options: options, delivery: delivery, completion: completion)
        }
    }
}
