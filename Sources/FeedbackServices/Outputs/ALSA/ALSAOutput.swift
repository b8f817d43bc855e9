public import Dispatch

/// The engine on an ALSA PCM: our mixer rendering the shared timeline straight into a device, for
/// machines with no sound server (kiosks, panels, minimal images).
///
/// Latency. The PCM runs with small periods (5 ms) on a thread of its own, which polls the PCM's
/// descriptors and an eventfd that `play` signals. Where the device lets written audio be taken
/// back (`snd_pcm_rewindable` > 0: `hw`, `plughw`), the ring keeps a safe `bufferDuration` queued
/// and a change rewinds it (`snd_pcm_rewind`) to just ahead of the device's position and renders
/// the region again with the change applied, so a new sound starts at once. Where it does not
/// (or with `rewinds` off), the ring is kept only `shortQueueDuration` full instead. dmix always
/// gets the short queue, also behind `plug` (as `default` often is), which passes rewinds down to
/// it: in the VM it reported 0 rewindable frames at some opens and 336-480 at others, and after
/// its rewinds one new sound in five came a ring late, or now and then was never heard.
///
/// Lifecycle. The PCM opens on the first `play` (or `prepare()`), closes after `idleTimeout`
/// without sound, and opens again on the next `play`. An open PCM is held (prepared, nothing
/// written) until its first sound, which then starts the device at its own frame 0. Completions:
/// `.finished` once the device has played the voice's last frame (its position from
/// `snd_pcm_delay`), exactly once per play, on the caller's queue.
///
/// Faults. An underrun or a suspend is recovered (`snd_pcm_recover`) and counted; the sounds play
/// on. A device another program holds fails the play `.deviceBusy`; no such device, or one that
/// cannot play stereo at the engine rate, `.deviceUnavailable` (use a `plughw:` or `plug:` PCM to
/// convert). A device that goes away mid-play fails every sound playing `.deviceLost`, once, and
/// the next play opens it again. A device whose position stands still for 2 s while sounds play
/// fails them `.serverStalled`.
///
/// Threads. `play` and the handle methods never wait on the device: they queue a command under a
/// short lock and wake the output's thread through a non-blocking eventfd.
public final class ALSAOutput: AudioOutput, Sendable {
    /// Which PCM, and how it is driven.
    public struct Configuration: Sendable, Equatable {
        /// The PCM name: `default`, `hw:CARD,DEV`, `plughw:…`, `dmix:…`, or one from asound.conf.
        public var device: String
        /// The engine rate, in Hz; sounds must be at this rate (the device must take it: `plughw`
        /// converts for one that does not).
        public var sampleRate: Int
        /// Audio kept queued in the device's ring where it can be rewound, in seconds.
        public var bufferDuration: Double
        /// Audio kept queued where it cannot (or with `rewinds` off), in seconds.
        public var shortQueueDuration: Double
        /// The device's period: how often it wakes the output's thread, in seconds.
        public var periodDuration: Double
        /// Seconds without sound after which the PCM is closed (releasing a `hw` device).
        public var idleTimeout: Double
        /// Whether changes may rewind queued audio; false keeps the short queue on every device.
        public var rewinds: Bool

        /// Creates a configuration: the `default` PCM, 48 kHz, a 40 ms queue (10 ms where rewinds
        /// are not possible), 5 ms periods, a 10 s idle timeout.
        public init(
            device: String = "default", sampleRate: Int = 48_000, bufferDuration: Double = 0.04,
            shortQueueDuration: Double = 0.01, periodDuration: Double = 0.005, idleTimeout: Double = 10,
            rewinds: Bool = true
        ) {
            self.device = device
            self.sampleRate = sampleRate
            self.bufferDuration = bufferDuration
            self.shortQueueDuration = shortQueueDuration
            self.periodDuration = periodDuration
            self.idleTimeout = idleTimeout
            self.rewinds = rewinds
        }
    }

    public var name: String { "engine (ALSA \(configuration.device))" }
    /// The configuration it was made with.
    public let configuration: Configuration
    private let engine: ALSAEngine

    /// Creates the output; nothing opens until the first `play` or `prepare()`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        engine = ALSAEngine(configuration: configuration)
    }

    deinit {
        engine.shutdown()
    }

    /// The engine rate (`configuration.sampleRate`): a buffer at another rate fails `.unsupportedSound`.
    public var requiredSampleRate: Int? { configuration.sampleRate }

    /// Counters since the output was made.
    package var statistics: EngineStatistics { engine.core.statistics }

    /// Opens the PCM now instead of on the first `play`, waiting up to `timeout` seconds.
    /// - Throws: `PlaybackError` `.deviceBusy`, `.deviceUnavailable` (with libasound's message).
    public func prepare(timeout: Double = 2) throws(PlaybackError) {
        try engine.prepare(timeout: timeout)
    }

    @discardableResult
    public func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(), queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        engine.play(.buffer(buffer), from: 0, options: options, delivery: .queue(queue), completion: completion)
    }

    /// Starts a voice `offset` seconds into `source`: a buffer plays from there without a copy, a
    /// streamed file is decoded ahead on a feeder thread into a fixed-size ring (as on PulseAudio).
    @discardableResult
    public func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions = PlaybackOptions(),
        queue: DispatchQueue = .global(), completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        engine.play(source, from: offset, options: options, delivery: .queue(queue), completion: completion)
    }
}

extension ALSAOutput: EngineOutput {}

extension ALSAOutput: DeliveringAudioOutput {
    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, delivery: Delivery, completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        engine.play(.buffer(buffer), from: 0, options: options, delivery: delivery, completion: completion)
    }
}
