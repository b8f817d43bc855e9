public import Dispatch
import Synchronization

/// Where the manager's vibration goes. A value; safe to share across threads.
public enum VibratorSource: Sendable {
    /// The first vibrator this discovery finds, opened at the first vibration and kept open; looked
    /// for again at each play while there is none, and after the device went away.
    case discovery(VibratorDiscovery)
    /// This engine (the caller owns it and shuts it down).
    case engine(HapticEngine)
    /// No vibration: every vibration reports `.noVibrator`.
    case none
}

/// Alert feedback under the system profile: a sound, a vibration, or both, with one completion
/// that says what was actually done.
///
/// A play looks at the profile (`profileOverride`, else `FeedbackSettings`), decides which parts
/// run, starts them together and reports a `FeedbackResult` once both have ended:
///
/// | profile | `.audioOnly` | `.vibrateOnly` | `.audioAndVibrate` |
/// |---|---|---|---|
/// | full | sound | vibration | both |
/// | quiet | nothing | vibration | vibration only |
/// | silent | nothing | nothing | nothing |
///
/// Without a vibrator, vibration reports `.noVibrator` and the sound plays as the profile allows
/// (so audio-and-vibrate gives sound only in full, nothing in quiet). `kSystemSoundID_Vibrate` and
/// the IDs that only vibrate (1011, 1102, …) vibrate whatever the type, as on an iPhone.
///
/// Sounds: IDs 1000…1351 are looked up in the sound theme through `SystemSoundCatalog` at each play
/// (so a theme change applies at once); each file is decoded once and kept. Other IDs come from
/// `registry`. Without an injected output, the engine is chosen with
/// `AudioOutputSelection.automatic()` at the first sound (tried again at each sound until one
/// answers; once chosen, the engine reconnects by itself after a server restart).
///
/// Thread safety: every property and method may be used from any thread. `play` never blocks: the
/// lookup, decode and device opening run on a background queue. Completions run on the queue given,
/// exactly once per play.
public final class FeedbackManager: Sendable {
    /// The process-wide manager, on `SoundRegistry.shared` and the user's settings. The
    /// AudioServices functions play through it.
    public static let shared = FeedbackManager()

    /// Where sound IDs from 4097 up are looked up.
    public let registry: SoundRegistry
    /// Where the profile is read when `profileOverride` is nil.
    public let settings: FeedbackSettings

    private struct State {
        var feedbackType = FeedbackType.audioAndVibrate
        var soundID: SystemSoundID = 1007
        var profileOverride: FeedbackProfile?
        var output: (any AudioOutput)?
        var vibrator: VibratorSource
        /// An engine this manager opened from a discovery; shut down when replaced.
        var openedEngine: HapticEngine?
        var themeResolver: SoundThemeResolver?
        var active: [UInt64: FeedbackPlayback] = [:]
        var nextID: UInt64 = 1
    }
    private let state: Mutex<State>
    /// Decoded theme files by path.
    private let decoded = Mutex<[String: PCMBuffer]>([:])
    private let work = DispatchQueue(label: "FeedbackManager.work", qos: .userInitiated, attributes: .concurrent)

    /// Creates a manager.
    /// - Parameters:
    ///   - registry: where registered sound IDs are looked up.
    ///   - audioOutput: where sounds play; nil chooses the engine automatically when first needed.
    ///   - vibrator: where vibration goes (the first device in `/dev/input` by default).
    ///   - settings: where the profile is read.
    ///   - themeResolver: how system sounds are found; nil for `SoundThemeResolver.standard()` at each play.
    public init(
        registry: SoundRegistry = .shared, audioOutput: (any AudioOutput)? = nil,
        vibrator: VibratorSource = .discovery(VibratorDiscovery()), settings: FeedbackSettings = FeedbackSettings(),
        themeResolver: SoundThemeResolver? = nil
    ) {
        self.registry = registry
        self.settings = settings
        state = Mutex(State(output: audioOutput, vibrator: vibrator, themeResolver: themeResolver))
    }

    /// What `play()` gives: sound, vibration or both (`.audioAndVibrate` by default).
    public var feedbackType: FeedbackType {
        get { state.withLock { $0.feedbackType } }
        set { state.withLock { $0.feedbackType = newValue } }
    }

    /// The sound `play()` plays (1007, the tri-tone, by default).
    public var soundID: SystemSoundID {
        get { state.withLock { $0.soundID } }
        set { state.withLock { $0.soundID = newValue } }
    }

    /// A profile for this manager only, over the environment and the settings file; nil to follow them.
    public var profileOverride: FeedbackProfile? {
        get { state.withLock { $0.profileOverride } }
        set { state.withLock { $0.profileOverride = newValue } }
    }

    /// The profile the next play obeys.
    public var profile: FeedbackProfile {
        state.withLock { $0.profileOverride } ?? settings.profile
    }

    /// Where sounds play; nil chooses the engine automatically at the next sound.
    public var audioOutput: (any AudioOutput)? {
        get { state.withLock { $0.output } }
        set { state.withLock { $0.output = newValue } }
    }

    /// Where vibration goes. Replacing it shuts down an engine the manager opened itself (patterns
    /// playing on it complete `.stopped`) and waits for its thread, so it must not be set from a
    /// play's completion.
    public var vibrator: VibratorSource {
        get { state.withLock { $0.vibrator } }
        set {
            let old = state.withLock { state in
                state.vibrator = newValue
                defer { state.openedEngine = nil }
                return state.openedEngine
            }
            old?.shutdown()
        }
    }

    /// Plays `soundID` as `feedbackType`, without a completion.
    @discardableResult
    public func play() -> FeedbackPlayback {
        let (id, type) = state.withLock { ($0.soundID, $0.feedbackType) }
        return play(id, type: type, completion: nil)
    }

    /// Plays `soundID` as `feedbackType`; `completion` runs once on `queue` when both parts ended.
    @discardableResult
    public func play(
        queue: DispatchQueue = .global(), completion: @escaping @Sendable (FeedbackResult) -> Void
    ) -> FeedbackPlayback {
        let (id, type) = state.withLock { ($0.soundID, $0.feedbackType) }
        return play(id, type: type, queue: queue, completion: completion)
    }

    /// Plays `soundID` as `feedbackType` and returns what was done, once both parts ended.
    /// Cancelling the task stops the play (reported `.stopped`).
    public func play() async -> FeedbackResult {
        let (id, type) = state.withLock { ($0.soundID, $0.feedbackType) }
        return await play(id, type: type)
    }

    /// Plays `id` as `type` and returns what was done. Cancelling the task stops the play.
    public func play(_ id: SystemSoundID, type: FeedbackType) async -> FeedbackResult {
        let box = Mutex<(playback: FeedbackPlayback?, cancelled: Bool)>((nil, false))
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let playback = play(id, type: type) { continuation.resume(returning: $0) }
                if box.withLock({ box in
                    box.playback = playback
                    return box.cancelled
                }) { playback.stop() }
            }
        } onCancel: {
            box.withLock { box in
                box.cancelled = true
                return box.playback
            }?.stop()
        }
    }

    /// Plays `id` as `type`. Returns at once; `completion` runs exactly once on `queue`, after the
    /// sound and the vibration have both ended (or were not started), with what was done.
    @discardableResult
    public func play(
        _ id: SystemSoundID, type: FeedbackType, queue: DispatchQueue = .global(),
        completion: (@Sendable (FeedbackResult) -> Void)?
    ) -> FeedbackPlayback {
        let (playback, profile) = state.withLock { state in
            defer { state.nextID += 1 }
            let playback = FeedbackPlayback(id: state.nextID, soundID: id)
            state.active[playback.id] = playback
            return (playback, state.profileOverride)
        }
        work.async { [self] in
            start(playback, type: type, profile: profile ?? settings.profile, queue: queue, completion: completion)
        }
        return playback
    }

    /// Stops every play of `id` that is still running (FeedbackServices' addition: AudioServices
    /// cannot stop a system sound).
    /// - Returns: how many plays were stopped.
    @discardableResult
    public func stop(_ id: SystemSoundID) -> Int {
        let playing = state.withLock { $0.active.values.filter { $0.soundID == id } }
        for playback in playing { playback.stop() }
        return playing.count
    }

    /// Stops every play that is still running.
    public func stopAll() {
        for playback in state.withLock({ Array($0.active.values) }) { playback.stop() }
    }

    /// Re-registers the registered sound `id` at another level; see `SoundRegistry.setVolume(_:for:)`.
    @discardableResult
    public func setVolume(
        _ multiplier: Float, for id: SystemSoundID, limiting: VolumeAdjustment.Limiting = .clip
    ) throws(SoundError) -> RegisteredSound {
        try registry.setVolume(multiplier, for: id, limiting: limiting)
    }

    // MARK: - One play, on the work queue

    private func start(
        _ playback: FeedbackPlayback, type: FeedbackType, profile: FeedbackProfile, queue: DispatchQueue,
        completion: (@Sendable (FeedbackResult) -> Void)?
    ) {
        let id = playback.soundID
        let join = FeedbackJoin { [self] sound, vibration in
            state.withLock { _ = $0.active.removeValue(forKey: playback.id) }
            playback.markEnded()
            let result = FeedbackResult(soundID: id, feedbackType: type, profile: profile, sound: sound, vibration: vibration)
            if let completion { queue.async { completion(result) } }
        }
        let hasSound = Self.hasSound(id)
        let needsVibrator = profile.allowsVibration && (!hasSound || type.wantsVibration)
        var engine: HapticEngine?
        var vibratorError: HapticsError?
        if needsVibrator {
            switch hapticEngine() {
            case .success(let opened): engine = opened
            case .failure(let error): vibratorError = error
            }
        }
        let plan = FeedbackPlan.decide(type: type, profile: profile, hasSound: hasSound, vibrator: vibratorError)

        if let outcome = plan.sound {
            join.finish(sound: outcome)
        } else {
            startSound(id, playback: playback, join: join)
        }
        if let outcome = plan.vibration {
            join.finish(vibration: outcome)
        } else if let engine {
            let vibration = engine.play(.systemVibrate, priority: .high) { [self] completion in
                join.finish(vibration: vibrationOutcome(completion, engine: engine))
            }
            playback.attach(vibration: vibration)
        }
    }

    private func startSound(_ id: SystemSoundID, playback: FeedbackPlayback, join: FeedbackJoin) {
        let buffer: PCMBuffer
        switch soundBuffer(id) {
        case .failure(let failure):
            return join.finish(sound: failure.outcome)
        case .success(let found):
            buffer = found
        }
        let output: any AudioOutput
        switch audioOutputForPlay() {
        case .failure(let error): return join.finish(sound: .noAudioOutput(error))
        case .success(let found): output = found
        }
        let handle = output.play(buffer, options: PlaybackOptions(), queue: .global()) { end in
            join.finish(sound: Self.soundOutcome(end))
        }
        playback.attach(sound: handle)
    }

    static func hasSound(_ id: SystemSoundID) -> Bool {
        guard SoundRegistry.systemSoundIDs.contains(id) || id == kSystemSoundID_Vibrate else { return true }
        if case .vibrate = try? SystemSoundCatalog.action(for: id) { return false }
        return true
    }

    private func soundBuffer(_ id: SystemSoundID) -> Result<PCMBuffer, SoundOutcomeError> {
        guard SoundRegistry.systemSoundIDs.contains(id) else {
            guard let sound = registry.sound(id) else {
                return .failure(.init(.failed(.sound(SoundError(.unknownSoundID(id), source: "sound \(id)")))))
            }
            return .success(sound.buffer)
        }
        let sound: SystemSound
        do {
            sound = try SystemSoundCatalog.sound(for: id)
        } catch {
            return .failure(.init(.failed(.catalog(error))))
        }
        let resolver: SoundThemeResolver
        if let configured = state.withLock({ $0.themeResolver }) {
            resolver = configured
        } else {
            do {
                resolver = try SoundThemeResolver.standard()
            } catch {
                return .failure(.init(.failed(.theme(error.description))))
            }
        }
        switch resolver.resolve(sound) {
        case .notFound(let failure): return .failure(.init(.failed(.theme(failure.description))))
        case .disabled: return .failure(.init(.disabledByTheme))
        case .resolved(let file):
            if let cached = decoded.withLock({ $0[file.path] }) { return .success(cached) }
            do {
                let buffer = try registry.decoder.decode(fileAt: file.path).buffer
                decoded.withLock { $0[file.path] = buffer }
                return .success(buffer)
            } catch {
                return .failure(.init(.failed(.sound(error))))
            }
        }
    }

    private func audioOutputForPlay() -> Result<any AudioOutput, PlaybackError> {
        if let output = state.withLock({ $0.output }) { return .success(output) }
        do {
            let engine = try AudioOutputSelection.automatic(server: nil)
            return .success(state.withLock { state in
                if state.output == nil { state.output = engine }
                return state.output!
            })
        } catch {
            return .failure(error)
        }
    }

    private func hapticEngine() -> Result<HapticEngine, HapticsError> {
        let (source, opened) = state.withLock { ($0.vibrator, $0.openedEngine) }
        switch source {
        case .none:
            return .failure(HapticsError(.noDevice, source: "FeedbackManager", detail: "vibration is turned off for this manager"))
        case .engine(let engine):
            return .success(engine)
        case .discovery(let discovery):
            if let opened { return .success(opened) }
            do {
                let engine = try HapticEngine(.first, discovery: discovery)
                let kept = state.withLock { state -> HapticEngine? in
                    guard case .discovery = state.vibrator else { return nil }
                    if state.openedEngine == nil { state.openedEngine = engine }
                    return state.openedEngine
                }
                if kept !== engine { engine.shutdown() }
                guard let kept else { return .failure(HapticsError(.noDevice, source: discovery.directory)) }
                return .success(kept)
            } catch {
                return .failure(error)
            }
        }
    }

    /// The output is kept after a failure: the engine reconnects by itself at its next play, so
    /// choosing another would only lose the configuration it was given.
    private static func soundOutcome(_ end: PlaybackEnd) -> SoundOutcome {
        switch end {
        case .finished: .played
        case .stopped, .cancelled: .stopped
        case .failed(let error):
            switch error.reason {
            case .noAudioOutput, .serverUnavailable: .noAudioOutput(error)
            default: .failed(.playback(error))
            }
        }
    }

    private func vibrationOutcome(_ completion: HapticCompletion, engine: HapticEngine) -> VibrationOutcome {
        switch completion {
        case .finished: return .vibrated
        case .stopped, .preempted: return .stopped
        case .failed(let error):
            if error.reason == .deviceGone {
                let gone = state.withLock { state -> Bool in
                    guard state.openedEngine === engine else { return false }
                    state.openedEngine = nil
                    return true
                }
                // Not from here: shutdown waits for the engine's thread, which is running this completion.
                if gone { DispatchQueue.global().async { engine.shutdown() } }
            }
            return .failed(.haptics(error))
        }
    }
}

/// A sound outcome carried through `Result`.
private struct SoundOutcomeError: Error {
    let outcome: SoundOutcome
    init(_ outcome: SoundOutcome) { self.outcome = outcome }
}
