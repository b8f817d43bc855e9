internal import CCanberra
public import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Plays through libcanberra, for desktops that want their own sound theme and settings applied.
///
/// Three kinds of sound: theme events by name (`event.id`, resolved by libcanberra in the
/// desktop's theme), files libcanberra reads (plain 16-bit PCM WAV and Ogg Vorbis), and any
/// `PCMBuffer` — libcanberra has no in-memory API, so a buffer is written once as a 16-bit WAV into
/// a private cache directory and played from there. Registered sounds go through the server's
/// sample cache (`canberra.cache-control=permanent`), so replaying one costs no upload.
///
/// Completion: libcanberra calls its finish callback exactly once when `ca_context_play_full`
/// succeeded and never when it failed; this output turns both into exactly one `PlaybackEnd`.
/// `ca_context_play_full` blocks (0.6–14 ms measured), so it runs on a private serial queue and
/// `play` returns at once.
public final class CanberraOutput: AudioOutput, PlaybackControl, @unchecked Sendable {
    // Locking rule: the `ca_context` is used only on `queue` (libcanberra also locks it inside);
    // its finish callbacks come on libcanberra's thread and touch only the handle passed to them.

    public let name = "libcanberra"
    /// Nil: libcanberra plays a buffer at any rate (it is written as a WAV file at its own rate).
    public var requiredSampleRate: Int? { nil }
    private let context: OpaquePointer
    private let queue = DispatchQueue(label: "FeedbackServices.canberra")
    /// Where sounds libcanberra cannot read from memory are written as WAV.
    public let cacheDirectory: String

    /// Opens a libcanberra context on its PulseAudio backend.
    /// - Parameters:
    ///   - applicationName: `application.name` for the server.
    ///   - cacheDirectory: where in-memory sounds are written as WAV; by default
    ///     `$XDG_CACHE_HOME/feedbackservices/canberra` (`~/.cache/…`).
    /// - Throws: `PlaybackError` with libcanberra's code if the context cannot be opened.
    public init(applicationName: String = "FeedbackServices", cacheDirectory: String? = nil) throws(PlaybackError) {
        var context: OpaquePointer?
        var status = ca_context_create(&context)
        guard status == 0, let context else { throw Self.error(status) }
        self.context = context
        self.cacheDirectory = cacheDirectory ?? Self.defaultCacheDirectory()
        _ = ca_context_set_driver(context, "pulse")
        status = Self.withProperties(["application.name": applicationName]) { ca_context_change_props_full(context, $0) }
        if status == 0 { status = ca_context_open(context) }
        // Every stored property is set, so throwing runs deinit, which destroys the context.
        guard status == 0 else { throw Self.error(status) }
    }

    deinit {
        ca_context_destroy(context)
    }

    /// Whether libcanberra can play here: opens a context on its PulseAudio backend, as `init`
    /// does, and closes it. `ca_context_open` waits for the server with no limit of its own, so the
    /// open runs on a global queue and this waits for it at most `timeout` seconds (an open that
    /// never returns keeps that queue's thread).
    /// - Throws: `PlaybackError`: libcanberra's (`.canberra(code:)`, e.g. when no server answers
    ///   or its PulseAudio backend, libcanberra-pulse, is not installed), or `.serverUnavailable`
    ///   when the open did not finish in time.
    public static func checkAvailability(timeout: Double = 2) throws(PlaybackError) {
        final class Outcome: Sendable {
            let error = Mutex<PlaybackError?>(nil)
            let done = DispatchSemaphore(value: 0)
        }
        let outcome = Outcome()
        DispatchQueue.global().async {
            let result = Result { () throws(PlaybackError) in try CanberraOutput() }
            if case .failure(let error) = result { outcome.error.withLock { $0 = error } }
            outcome.done.signal()
        }
        guard outcome.done.wait(timeout: .now() + timeout) == .success else {
            throw PlaybackError(.serverUnavailable, detail: "libcanberra did not open within \(timeout) s")
        }
        if let error = outcome.error.withLock({ $0 }) { throw error }
    }

    /// Plays the theme sound for an event name (`event.id`, e.g. "message-new-instant").
    /// - Parameters:
    ///   - event: the event name, looked up by libcanberra in the desktop's sound theme.
    ///   - volume: linear gain, sent as `canberra.volume` in dB.
    ///   - queue: where `completion` runs.
    ///   - completion: called exactly once when the play ends, with why.
    @discardableResult
    public func play(
        event: String, volume: Float = 1, queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        start(["event.id": event, "canberra.cache-control": "volatile"], volume: volume, queue: queue, completion: completion)
    }

    /// Plays a file libcanberra reads (16-bit PCM WAV or Ogg Vorbis) through the server's sample
    /// cache under `cacheKey`, or uncached when `cacheKey` is nil.
    @discardableResult
    public func play(
        fileAt path: String, cacheKey: String? = nil, volume: Float = 1, queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        var properties = ["media.filename": path]
        if let cacheKey {
            properties["event.id"] = cacheKey
            properties["canberra.cache-control"] = "permanent"
        }
        return start(properties, volume: volume, queue: queue, completion: completion)
    }

    /// Plays a buffer: written once as WAV into `cacheDirectory` (named by its content), then played
    /// through the sample cache. Only volume is honoured; pan and repeats are the engine's.
    @discardableResult
    public func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(), queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        let key = "feedbackservices-\(Self.fingerprint(buffer))"
        let path = "\(cacheDirectory)/\(key).wav"
        if access(path, R_OK) != 0 {
            do {
                try AtomicFile.makeDirectories(cacheDirectory, mode: 0o700)
                try SoundFileWriter.write(buffer, to: path, format: .wav16)
            } catch {
                return PlaybackHandle.failed(
                    PlaybackError(.unsupportedSound, detail: "cannot cache the sound as WAV: \(error)"), queue: queue,
                    completion: completion)
            }
        }
        return play(fileAt: path, cacheKey: key, volume: options.volume, queue: queue, completion: completion)
    }

    func stop(_ id: UInt64) {
        queue.async { [self] in _ = ca_context_cancel(context, UInt32(truncatingIfNeeded: id)) }
    }

    func setVolume(_ id: UInt64, _ volume: Float, ramp: Double, curve: Envelope.Curve) {}

    /// libcanberra cannot change a playing sound's level, so the sound plays on at full level and
    /// is cancelled when the fade would have ended; its finish callback then reports `.stopped`.
    func fadeOut(_ id: UInt64, duration: Double, curve: Envelope.Curve) {
        queue.asyncAfter(deadline: .now() + duration) { [self] in
            _ = ca_context_cancel(context, UInt32(truncatingIfNeeded: id))
        }
    }

    func setPan(_ id: UInt64, _ pan: Float, ramp: Double) {}

    private func start(
        _ properties: [String: String], volume: Float, queue completionQueue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        let handle = PlaybackHandle(id: nextPlaybackID(), control: self, queue: completionQueue, completion: completion)
        var playProperties = properties
        if volume != 1 {
            let decibels = volume > 0 ? 20 * log10(Double(volume)) : -96
            playProperties["canberra.volume"] = "\((decibels * 100).rounded() / 100)"
        }
        let finalProperties = playProperties
        queue.async { [self] in startOnQueue(finalProperties, handle: handle) }
        return handle
    }

    /// Runs on `queue`. The retained handle is what the finish callback gets; it is released exactly
    /// once, by the callback or, if libcanberra refused the play and will never call back, here.
    private func startOnQueue(_ properties: [String: String], handle: PlaybackHandle) {
        let userdata = Unmanaged.passRetained(handle).toOpaque()
        let status = Self.withProperties(properties) { list in
            ca_context_play_full(context, UInt32(truncatingIfNeeded: handle.id), list, canberraFinished, userdata)
        }
        if status != 0 {
            Unmanaged<PlaybackHandle>.fromOpaque(userdata).release()
            handle.end(.failed(Self.error(status)))
        }
    }

    private static func withProperties(_ properties: [String: String], _ body: (OpaquePointer?) -> Int32) -> Int32 {
        var list: OpaquePointer?
        let status = ca_proplist_create(&list)
        guard status == 0 else { return status }
        defer { ca_proplist_destroy(list) }
        for (key, value) in properties { _ = ca_proplist_sets(list, key, value) }
        return body(list)
    }

    static func error(_ code: Int32) -> PlaybackError {
        PlaybackError(.canberra(code: code), detail: String(cString: ca_strerror(code)))
    }

    private static func defaultCacheDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? "\(environment["HOME"] ?? "/tmp")/.cache"
        return "\(base)/feedbackservices/canberra"
    }

    /// A name for a buffer's content: FNV-1a over its samples, rate and channel count.
    static func fingerprint(_ buffer: PCMBuffer) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ value: UInt64) {
            hash = (hash ^ value) &* 0x0000_0100_0000_01b3
        }
        mix(UInt64(buffer.sampleRate))
        mix(UInt64(buffer.channelCount))
        for sample in buffer.samples { mix(UInt64(sample.bitPattern)) }
        return String(hash, radix: 16)
    }
}

/// libcanberra's finish callback: may run on libcanberra's thread, must not call libcanberra.
private func canberraFinished(_ context: OpaquePointer?, _ id: UInt32, _ code: Int32, _ userdata: UnsafeMutableRawPointer?) {
    let handle = Unmanaged<PlaybackHandle>.fromOpaque(userdata!).takeRetainedValue()
    let end: PlaybackEnd =
        switch code {
        case Int32(CA_SUCCESS): .finished
        case Int32(CA_ERROR_CANCELED): .stopped
        default: .failed(CanberraOutput.error(code))
        }
    handle.end(end)
}
