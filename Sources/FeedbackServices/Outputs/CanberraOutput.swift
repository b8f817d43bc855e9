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
///
/// Faults, each bounded in time. libcanberra has no progress API, and on a hung server (stopped,
/// deadlocked) its calls wait for libpulse's 30 s timeout and its finish callback never comes. So
/// every play has a watchdog: if it has not ended `stallMargin` (2 s) after the sound's length, it
/// ends `.failed(.serverStalled)` and is cancelled (a finish callback that comes later is dropped:
/// the end is reported exactly once). A sound whose length is unknown — a theme event, which
/// libcanberra finds itself — counts as `unknownLength` (30 s, the system-sound limit). Opening
/// waits at most `timeout` (see `init`). A server that dies or is gone fails plays at once with
/// libcanberra's error (`.canberra(code:)`).
public final class CanberraOutput: AudioOutput, PlaybackControl, @unchecked Sendable {
    // Locking rule: the `ca_context` is used only on `queue` (libcanberra also locks it inside);
    // its finish callbacks come on libcanberra's thread and touch only the handle passed to them.
    // Watchdogs run on a global queue and reach the context only through `queue`.

    /// Seconds past a sound's length after which a play that has not ended fails `.serverStalled`.
    public static let stallMargin: Double = 2
    /// The length a play is given when its sound's length is unknown (a theme event), in seconds.
    public static let unknownLength = SoundDecoder.systemSoundDurationLimit

    public let name = "libcanberra"
    /// Nil: libcanberra plays a buffer at any rate (it is written as a WAV file at its own rate).
    public var requiredSampleRate: Int? { nil }
    private let context: OpaquePointer
    private let queue = DispatchQueue(label: "FeedbackServices.canberra")
    /// Where sounds libcanberra cannot read from memory are written as WAV.
    public let cacheDirectory: String

    /// Opens a libcanberra context on its PulseAudio backend.
    ///
    /// `ca_context_open` waits for the server with no limit of its own (libpulse gives up after
    /// 30 s), so it runs on another thread and this waits for it at most `timeout` seconds; an open
    /// that does not return in time is left to that thread, which destroys the context when it does.
    /// - Parameters:
    ///   - applicationName: `application.name` for the server.
    ///   - cacheDirectory: where in-memory sounds are written as WAV; by default
    ///     `$XDG_CACHE_HOME/feedbackservices/canberra` (`~/.cache/…`).
    ///   - timeout: how long to wait for the server, in seconds.
    /// - Throws: `PlaybackError`: libcanberra's (`.canberra(code:)`, e.g. when no server answers or
    ///   its PulseAudio backend, libcanberra-pulse, is not installed), or `.serverUnavailable` when
    ///   the open did not finish in time.
    public init(
        applicationName: String = "FeedbackServices", cacheDirectory: String? = nil, timeout: Double = 2
    ) throws(PlaybackError) {
        context = try Self.openContext(applicationName: applicationName, timeout: timeout)
        self.cacheDirectory = cacheDirectory ?? Self.defaultCacheDirectory()
    }

    deinit {
        ca_context_destroy(context)
    }

    /// Whether libcanberra can play here: opens a context as `init` does, waiting at most `timeout`
    /// seconds, and closes it.
    /// - Throws: `PlaybackError`, as `init` does.
    public static func checkAvailability(timeout: Double = 2) throws(PlaybackError) {
        _ = try CanberraOutput(timeout: timeout)
    }

    /// A context on the PulseAudio backend, opened within `timeout` seconds (see `init`).
    private static func openContext(applicationName: String, timeout: Double) throws(PlaybackError) -> OpaquePointer {
        var created: OpaquePointer?
        var status = ca_context_create(&created)
        guard status == 0, let context = created else { throw error(status) }
        _ = ca_context_set_driver(context, "pulse")
        status = withProperties(["application.name": applicationName]) { ca_context_change_props_full(context, $0) }
        guard status == 0 else {
            ca_context_destroy(context)
            throw error(status)
        }
        let opening = ContextOpening(context)
        DispatchQueue.global().async { opening.open() }
        guard let opened = opening.wait(timeout: timeout) else {
            throw PlaybackError(
                .serverUnavailable, detail: "libcanberra did not open within \(timeout) s (the server may be hung)")
        }
        guard opened == 0 else {
            ca_context_destroy(context)
            throw error(opened)
        }
        return context
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
        start(
            ["event.id": event, "canberra.cache-control": "volatile"], length: nil, volume: volume, queue: queue,
            completion: completion)
    }

    /// Plays a file libcanberra reads (16-bit PCM WAV or Ogg Vorbis) through the server's sample
    /// cache under `cacheKey`, or uncached when `cacheKey` is nil. Its watchdog takes the file's
    /// length from its header; a length the header does not give credibly (none, or over an hour)
    /// counts as `unknownLength`.
    @discardableResult
    public func play(
        fileAt path: String, cacheKey: String? = nil, volume: Float = 1, queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        play(fileAt: path, cacheKey: cacheKey, length: Self.length(ofFileAt: path), volume: volume, queue: queue,
             completion: completion)
    }

    private func play(
        fileAt path: String, cacheKey: String?, length: Double?, volume: Float, mediaRole: String? = nil, queue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        var properties = ["media.filename": path]
        if let mediaRole, !mediaRole.isEmpty, mediaRole.utf8.count <= RoleOutputs<CanberraOutput>.maximumRoleLength {
            properties["media.role"] = mediaRole
        }
        if let cacheKey {
            properties["event.id"] = cacheKey
            properties["canberra.cache-control"] = "permanent"
        }
        return start(properties, length: length, volume: volume, queue: queue, completion: completion)
    }

    /// Plays a buffer: written once as WAV into `cacheDirectory` (named by its content), then played
    /// through the sample cache. Only volume and the media role are honoured; pan and repeats are
    /// the engine's.
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
                    PlaybackError(.unsupportedSound, detail: "cannot cache the sound as WAV: \(error)"),
                    delivery: .queue(queue),
                    completion: completion)
            }
        }
        return play(
            fileAt: path, cacheKey: key, length: buffer.duration, volume: options.volume, mediaRole: options.mediaRole,
            queue: queue, completion: completion)
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

    /// Starts a play of a sound `length` seconds long (nil: unknown) and its watchdog.
    private func start(
        _ properties: [String: String], length: Double?, volume: Float, queue completionQueue: DispatchQueue,
        completion: (@Sendable (PlaybackEnd) -> Void)?
    ) -> PlaybackHandle {
        let handle = PlaybackHandle(id: nextPlaybackID(), control: self, delivery: .queue(completionQueue), completion: completion)
        var playProperties = properties
        if volume != 1 {
            let decibels = volume > 0 ? 20 * log10(Double(volume)) : -96
            playProperties["canberra.volume"] = "\((decibels * 100).rounded() / 100)"
        }
        let finalProperties = playProperties
        queue.async { [self] in startOnQueue(finalProperties, handle: handle) }
        let limit = (length ?? Self.unknownLength) + Self.stallMargin
        DispatchQueue.global().asyncAfter(deadline: .now() + limit) { [weak self] in
            let detail = "the play had not ended \(Self.stallMargin) s after the sound's length"
            // Exactly once: if the play already ended, this does nothing; if it ends it, a finish
            // callback that comes later does nothing.
            guard handle.end(.failed(PlaybackError(.serverStalled, detail: detail))) else { return }
            self?.stop(handle.id)
        }
        return handle
    }

    /// Runs on `queue`. The retained handle is what the finish callback gets; it is released exactly
    /// once, by the callback or, if libcanberra refused the play and will never call back, here.
    /// A play that ended before its turn (stopped, or failed by its watchdog while an earlier call
    /// was stuck on a hung server) is not started.
    private func startOnQueue(_ properties: [String: String], handle: PlaybackHandle) {
        guard handle.isPlaying else { return }
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

    /// A file's length from its header, when it gives one credibly (over 0 s, at most an hour).
    private static func length(ofFileAt path: String) -> Double? {
        do {
            let file = try SoundFileReader(path: path)
            let length = file.duration
            return length > 0 && length <= 3_600 ? length : nil
        } catch {
            return nil
        }
    }

    private static func defaultCacheDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? "\(environment["HOME"] ?? "/tmp")/.cache"
        return "\(base)/feedbackservices/canberra"
    }

    /// A name for a buffer's content: FNV-1a over its samples, rate and channel count.
    static func fingerprint(_ buffer: PCMBuffer) -> String {
        var hash = FNV1a()
        hash.mix(UInt64(buffer.sampleRate))
        hash.mix(UInt64(buffer.channelCount))
        for sample in buffer.samples { hash.mix(UInt64(sample.bitPattern)) }
        return String(hash.value, radix: 16)
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

/// A `ca_context_open` running on another thread, which the opener may stop waiting for.
///
/// Thread safety: the opening thread uses `context` until it has stored the status; from then on
/// the context belongs to the waiter if it was still waiting, otherwise to the opening thread,
/// which destroys it. `state` (a Mutex) decides which; that is what makes this `@unchecked Sendable`.
private final class ContextOpening: @unchecked Sendable {
    private let context: OpaquePointer
    private let state = Lock<(status: Int32?, abandoned: Bool)>((nil, false))
    private let done = DispatchSemaphore(value: 0)

    init(_ context: OpaquePointer) { self.context = context }

    /// Opens the context (blocking); on the opening thread.
    func open() {
        let status = ca_context_open(context)
        let abandoned = state.withLock { state in
            state.status = status
            return state.abandoned
        }
        if abandoned { ca_context_destroy(context) } else { done.signal() }
    }

    /// The open's status (0 on success); nil if it did not finish within `timeout` seconds, in which
    /// case the context is left to the opening thread.
    func wait(timeout: Double) -> Int32? {
        _ = done.wait(timeout: .now() + timeout)
        return state.withLock { state in
            if state.status == nil { state.abandoned = true }
            return state.status
        }
    }
}
