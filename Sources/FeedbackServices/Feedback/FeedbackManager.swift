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
/// that says what was actually done. This is the one route for an alert: the AudioServices
/// functions, `feedbackctl fire` and the session service all play through a `FeedbackManager`.
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
/// When both play, the vibration is felt when the sound is heard: it is made ready at once and
/// started at the instant the audio output says the sound's first frame reaches the device (the
/// engine's ALSA, PulseAudio and PipeWire outputs know it; with libcanberra or a file the
/// vibration starts as soon as its vibrator is ready). On an ALSA PCM with an 80 ms queue the two
/// now begin ~0.1 ms apart (p99 under 2 ms), where they were ~44 ms apart (p99 49–76 ms;
/// docs/benchmarks.md).
///
/// Sounds (`AlertSound`): IDs 1000…1351 and event names are looked up in the sound theme at each
/// play (so a theme change applies at once); theme files and files are decoded once and kept while
/// they are unchanged. Other IDs come from `registry`: its own sounds, and the persistent registry's
/// (`SoundRegistry.persistentRegistry`), so a sound `feedbackctl register` made plays here by its
/// number. `resolve(_:)` does the lookup alone, for callers that want to report on the sound before
/// it plays.
///
/// The audio output: without an injected one, the first sound opens one with `openAudioOutput`
/// (`AudioOutputSelection.automatic()`: the engine) — in the background, while the sound is looked
/// up and decoded, so the two overlap; `prepareAudioOutput()` starts it earlier still. A failed
/// open is tried again at the next sound; once open, the engine reconnects by itself after a server
/// restart.
///
/// Thread safety: every property and method may be used from any thread. `play` never blocks: the
/// lookup, decode and device opening run on a background queue. Completions run on the queue given,
/// exactly once per play.
public final class FeedbackManager: Sendable {
    /// How a manager runs each play's lookup and decode, and where the parts report their ends.
    package enum Scheduling: Sendable {
        /// On Dispatch: a concurrent work queue, the sound's end on the global queue (the default).
        case dispatch
        /// Each play's lookup and decode on a thread of its own (a play of a sound already
        /// resolved that opens no vibrator starts on the caller's thread: it does not block), and
        /// the sound's end handed to `loop`: for a caller that runs its own loop and must never
        /// start a Dispatch worker (`Delivery` says why; the session service, idle, makes no
        /// wake-ups). The engine hands its ends over so; another output reports on the global
        /// queue. A thread that cannot be started leaves the work to Dispatch after all.
        case threads(loop: Delivery)
    }

    /// The process-wide manager, on `SoundRegistry.shared` and the user's settings. The
    /// AudioServices functions play through it.
    public static let shared = FeedbackManager()

    /// Where registered sound IDs are looked up.
    public let registry: SoundRegistry
    /// Where the profile is read when `profileOverride` is nil.
    public let settings: FeedbackSettings

    /// Waits for the audio output being opened.
    private typealias OutputWaiter = @Sendable (Result<any AudioOutput, PlaybackError>) -> Void

    private struct State {
        var feedbackType = FeedbackType.audioAndVibrate
        var soundID: SystemSoundID = 1007
        var profileOverride: FeedbackProfile?
        var output: (any AudioOutput)?
        /// Plays waiting for the output being opened; nil when none is being opened.
        var outputWaiters: [OutputWaiter]?
        var vibrator: VibratorSource
        /// An engine this manager opened from a discovery; shut down when replaced.
        var openedEngine: HapticEngine?
        var themeResolver: SoundThemeResolver?
        var soundTheme: String?
        var active: [UInt64: FeedbackPlayback] = [:]
        var nextID: UInt64 = 1
        var alignsVibration = true
        var lights = LEDDiscovery()
    }
    private let state: Lock<State>
    private let sounds: AlertSoundResolver
    private let openAudioOutput: @Sendable () throws(PlaybackError) -> any AudioOutput
    private let work = DispatchQueue(label: "FeedbackManager.work", qos: .userInitiated, attributes: .concurrent)
    private let scheduling: Scheduling

    /// Creates a manager.
    /// - Parameters:
    ///   - registry: where registered sound IDs are looked up.
    ///   - audioOutput: where sounds play; nil opens one with `openAudioOutput` when first needed.
    ///   - openAudioOutput: how the output is opened when there is none (the engine, connected, by
    ///     default; libcanberra's `CanberraOutput.init` is another choice). It may block: it runs on
    ///     a background queue.
    ///   - vibrator: where vibration goes (the first device in `/dev/input` by default).
    ///   - settings: where the profile is read.
    ///   - soundTheme: the sound theme system sounds and events are found in (`soundTheme`); nil
    ///     follows the session's at each play.
    public convenience init(
        registry: SoundRegistry = .shared, audioOutput: (any AudioOutput)? = nil,
        openAudioOutput: @escaping @Sendable () throws(PlaybackError) -> any AudioOutput = {
            try AudioOutputSelection.automatic(server: nil)
        },
        vibrator: VibratorSource = .discovery(VibratorDiscovery()), settings: FeedbackSettings = FeedbackSettings(),
        soundTheme: String? = nil
    ) {
        self.init(
            registry: registry, audioOutput: audioOutput, openAudioOutput: openAudioOutput, vibrator: vibrator,
            settings: settings, themeResolver: nil, scheduling: .dispatch)
        self.soundTheme = soundTheme
    }

    /// A manager whose system sounds and events are found by `themeResolver` (its theme, search
    /// path, profile and locale); the other parameters are the public initializer's.
    package convenience init(
        registry: SoundRegistry = .shared, audioOutput: (any AudioOutput)? = nil,
        openAudioOutput: @escaping @Sendable () throws(PlaybackError) -> any AudioOutput = {
            try AudioOutputSelection.automatic(server: nil)
        },
        vibrator: VibratorSource = .discovery(VibratorDiscovery()), settings: FeedbackSettings = FeedbackSettings(),
        themeResolver: SoundThemeResolver?
    ) {
        self.init(
            registry: registry, audioOutput: audioOutput, openAudioOutput: openAudioOutput, vibrator: vibrator,
            settings: settings, themeResolver: themeResolver, scheduling: .dispatch)
    }

    /// Creates a manager that runs its work as `scheduling` says; the other parameters are the
    /// public initializer's.
    package init(
        registry: SoundRegistry = .shared, audioOutput: (any AudioOutput)? = nil,
        openAudioOutput: @escaping @Sendable () throws(PlaybackError) -> any AudioOutput,
        vibrator: VibratorSource = .discovery(VibratorDiscovery()), settings: FeedbackSettings = FeedbackSettings(),
        themeResolver: SoundThemeResolver? = nil, scheduling: Scheduling
    ) {
        self.scheduling = scheduling
        self.registry = registry
        self.settings = settings
        self.openAudioOutput = openAudioOutput
        sounds = AlertSoundResolver(registry: registry)
        state = Lock(State(output: audioOutput, vibrator: vibrator, themeResolver: themeResolver))
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

    /// Where sounds play; nil opens one at the next sound.
    public var audioOutput: (any AudioOutput)? {
        get { state.withLock { $0.output } }
        set { state.withLock { $0.output = newValue } }
    }

    /// The sound theme system sounds and events are played from, by its directory name
    /// (`freedesktop`, `feedbackservices`, a theme of your own in `~/.local/share/sounds`); a sound
    /// it lacks comes from the themes it inherits, then from `freedesktop`. Nil, the default,
    /// follows the session's at each play: `FEEDBACK_SOUND_THEME`, else GTK's
    /// `gtk-sound-theme-name`, else `feedbackservices`. Setting it applies from the next play; a
    /// name no theme can have (empty, or holding a `/`, `..`, a space, a comma or a control
    /// character) makes those plays fail with a `FeedbackError` that says so.
    public var soundTheme: String? {
        get { state.withLock { $0.themeResolver?.theme.name ?? $0.soundTheme } }
        set { state.withLock { $0.soundTheme = newValue } }
    }

    /// How system sounds and events are found; nil for the `soundTheme`'s, or the session's, at
    /// each play. Setting it applies from the next play (the session service sets it when the
    /// desktop's sound theme changes).
    package var themeResolver: SoundThemeResolver? {
        get { state.withLock { $0.themeResolver } }
        set { state.withLock { $0.themeResolver = newValue } }
    }

    /// Whether the vibration of a play with a sound starts when the sound is heard (true, the
    /// default): it is made ready at once and started at the instant the audio output says the
    /// sound's first frame reaches the device (`PlaybackHandle.whenHeard`; at once on outputs that
    /// cannot tell). False starts it as soon as the vibrator is open, as before: what the skew
    /// benchmark measures "before" with.
    package var alignsVibrationWithSound: Bool {
        get { state.withLock { $0.alignsVibration } }
        set { state.withLock { $0.alignsVibration = newValue } }
    }

    /// Where a haptic pattern's lights are looked for (`/sys/class/leds` by default): each light
    /// on the first LED that shows its colour, one udev tagged for feedback first.
    public var lights: LEDDiscovery {
        get { state.withLock { $0.lights } }
        set { state.withLock { $0.lights = newValue } }
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

    /// Starts opening the audio output now, if there is none and none is being opened, and returns
    /// at once: the next sound then does not wait for the connection (the first play of a process
    /// otherwise opens it while it decodes).
    public func prepareAudioOutput() {
        withAudioOutput { _ in }
    }

    /// Opens the vibrator now, if none is open, as the first vibration would: to learn whether
    /// there is one before anything plays (the session service answers `Vibrate` with it). It may
    /// block for as long as opening an input device takes.
    /// - Throws: `HapticsError` when there is no vibrator (`.noDevice`, also for `VibratorSource.none`)
    ///   or it cannot be opened.
    public func prepareVibrator() throws(HapticsError) {
        _ = try hapticEngine().get()
    }

    /// Finds and decodes the sound `alert` names, as a play would, without playing it: to report
    /// on it (its file, its length) or to refuse a request before anything starts. The result can
    /// be played with `play(_:type:options:vibration:profile:queue:completion:)`.
    /// - Throws: `FeedbackError`: `.catalog` for a system sound ID with no sound assigned,
    ///   `.invalidName` for an event name that could escape the theme directories, `.theme` for an
    ///   event no theme has, `.registry` for a registered ID the registry cannot give (unknown, or
    ///   its file cannot be decoded), `.sound` for a theme's or a named file that cannot be decoded.
    public func resolve(_ alert: AlertSound) throws(FeedbackError) -> ResolvedAlertSound {
        try sounds.resolve(alert, themes: currentThemeResolver)
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
        let box = Lock<(playback: FeedbackPlayback?, cancelled: Bool)>((nil, false))
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
        play(.id(id), type: type, queue: queue, completion: completion)
    }

    /// Plays `alert` as `type` with `options` (volume, pan, repeats, fade-in of the sound). Returns
    /// at once; `completion` runs exactly once on `queue`, after the sound and the vibration have
    /// both ended (or were not started), with what was done. The sound is looked up and decoded
    /// only when the profile lets it play.
    ///
    /// - Parameters:
    ///   - alert: the sound: a sound ID, a theme event or a file.
    ///   - type: sound, vibration or both.
    ///   - options: how the sound plays (volume, pan, repeats, fade-in).
    ///   - vibration: the pattern the vibration part plays (`VibrationPattern.systemVibrate`, the
    ///     400 ms buzz of `kSystemSoundID_Vibrate`, by default): a feedback theme's rumble for an
    ///     event, or a client's own pattern. It plays once, whatever `options.playCount` says.
    ///   - profile: the profile this play obeys, over `profileOverride` and the settings; nil to
    ///     obey them. The session service passes the level its feedback theme was read at.
    ///   - queue: where `completion` runs.
    ///   - completion: runs exactly once, with what was done; nil for none.
    @discardableResult
    public func play(
        _ alert: AlertSound, type: FeedbackType, options: PlaybackOptions = PlaybackOptions(),
        vibration: VibrationPattern = .systemVibrate, profile: FeedbackProfile? = nil,
        queue: DispatchQueue = .global(), completion: (@Sendable (FeedbackResult) -> Void)?
    ) -> FeedbackPlayback {
        start(
            .alert(alert), type: type, options: options, vibration: vibration, profile: profile,
            delivery: .queue(queue), completion: completion)
    }

    /// `play(_:type:options:vibration:profile:queue:completion:)`, with `completion` handed to
    /// `delivery` (a caller's own loop) rather than a queue.
    @discardableResult
    package func play(
        _ alert: AlertSound, type: FeedbackType, options: PlaybackOptions = PlaybackOptions(),
        vibration: VibrationPattern = .systemVibrate, profile: FeedbackProfile? = nil,
        delivery: Delivery, completion: (@Sendable (FeedbackResult) -> Void)?
    ) -> FeedbackPlayback {
        start(
            .alert(alert), type: type, options: options, vibration: vibration, profile: profile, delivery: delivery,
            completion: completion)
    }

    /// Plays a sound `resolve(_:)` found, as `play(_:type:options:vibration:profile:queue:completion:)`
    /// plays an `AlertSound`, without looking it up again.
    @discardableResult
    public func play(
        _ resolved: ResolvedAlertSound, type: FeedbackType, options: PlaybackOptions = PlaybackOptions(),
        vibration: VibrationPattern = .systemVibrate, profile: FeedbackProfile? = nil,
        queue: DispatchQueue = .global(), completion: (@Sendable (FeedbackResult) -> Void)?
    ) -> FeedbackPlayback {
        start(
            .resolved(resolved), type: type, options: options, vibration: vibration, profile: profile,
            delivery: .queue(queue), completion: completion)
    }

    /// `play(_:type:options:vibration:profile:queue:completion:)` of a resolved sound, with
    /// `completion` handed to `delivery` (a caller's own loop) rather than a queue; `lights` (a
    /// pattern's) play with it, started when the sound is heard.
    @discardableResult
    package func play(
        _ resolved: ResolvedAlertSound, type: FeedbackType, options: PlaybackOptions = PlaybackOptions(),
        vibration: VibrationPattern = .systemVibrate, lights: LightLane? = nil, profile: FeedbackProfile? = nil,
        delivery: Delivery, completion: (@Sendable (FeedbackResult) -> Void)?
    ) -> FeedbackPlayback {
        start(
            .resolved(resolved), type: type, options: options, vibration: vibration, lights: lights, profile: profile,
            delivery: delivery, completion: completion)
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
    /// - Throws: `RegistryError`, as `SoundRegistry.setVolume(_:for:)`.
    @discardableResult
    public func setVolume(
        _ multiplier: Float, for id: SystemSoundID, limiting: VolumeAdjustment.Limiting = .clip
    ) throws(RegistryError) -> RegisteredSound {
        try registry.setVolume(multiplier, for: id, limiting: limiting)
    }

    // MARK: - One play

    /// A sound still to be looked up, or one already found.
    private enum Request: Sendable {
        case alert(AlertSound)
        case resolved(ResolvedAlertSound)

        var alert: AlertSound {
            switch self {
            case .alert(let alert): alert
            case .resolved(let resolved): resolved.alert
            }
        }
    }

    private func start(
        _ request: Request, type: FeedbackType, options: PlaybackOptions, vibration: VibrationPattern,
        lights: LightLane? = nil, profile asked: FeedbackProfile?, delivery: Delivery,
        completion: (@Sendable (FeedbackResult) -> Void)?
    ) -> FeedbackPlayback {
        let (playback, profile) = state.withLock { state in
            defer { state.nextID += 1 }
            let playback = FeedbackPlayback(id: state.nextID, alert: request.alert, join: FeedbackJoin())
            state.active[playback.id] = playback
            return (playback, asked ?? state.profileOverride)
        }
        let job: @Sendable (FeedbackProfile) -> Void = { [self] profile in
            run(request, playback: playback, type: type, options: options, vibration: vibration, lights: lights,
                profile: profile, delivery: delivery, completion: completion)
        }
        switch scheduling {
        case .dispatch:
            work.async { [self] in job(profile ?? settings.profile) }
        case .threads:
            let profile = profile ?? settings.profile
            // A sound already found and decoded, with no vibrator to open, has nothing to wait
            // for: it starts on the caller's thread, a thread start-up sooner (the
            // service's play, feedbackctl's).
            if case .resolved = request, !Self.needsVibrator(request, type: type, profile: profile) {
                job(profile)
            } else {
                startDetachedThread(name: "fbs-play") { job(profile) }
            }
        }
        return playback
    }

    /// Whether a play of `request` as `type` under `profile` vibrates, and so may open a vibrator.
    private static func needsVibrator(_ request: Request, type: FeedbackType, profile: FeedbackProfile) -> Bool {
        profile.allowsVibration && (request.alert.vibratesOnly || type.wantsVibration)
    }

    /// One play, on the work queue or its own thread.
    private func run(
        _ request: Request, playback: FeedbackPlayback, type: FeedbackType, options: PlaybackOptions,
        vibration pattern: VibrationPattern, lights: LightLane?, profile: FeedbackProfile, delivery: Delivery,
        completion: (@Sendable (FeedbackResult) -> Void)?
    ) {
        let join = playback.join
        let hasSound = !request.alert.vibratesOnly
        // Connect while the sound is looked up and decoded (not for a resolved one with no
        // samples: a pattern of lights alone).
        let noSamples = if case .resolved(let found) = request, found.buffer == nil { true } else { false }
        if hasSound && !noSamples && type.wantsSound && profile.allowsSound { prepareAudioOutput() }
        let needsVibrator = Self.needsVibrator(request, type: type, profile: profile)
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
        }
        if let outcome = plan.vibration {
            join.finish(vibration: outcome)
        } else if let engine {
            // With a sound to play, the vibration waits for it: made ready now, started when the
            // sound is heard (at once when the sound ends without having been placed).
            let holds = plan.sound == nil && state.withLock { $0.alignsVibration }
            let vibration = engine.play(pattern, priority: .high, held: holds) { [self] completion in
                join.finish(vibration: vibrationOutcome(completion, engine: engine))
            }
            if holds { playback.whenSoundStarts { vibration.release(at: $0) } }
            playback.attach(vibration: vibration)
        }
        // A pattern's lights keep time with its sound as the vibration does.
        if let lights, !lights.isEmpty { playback.attach(lights: lights) }
        join.whenDone { [self] sound, vibration in
            state.withLock { _ = $0.active.removeValue(forKey: playback.id) }
            playback.markEnded()
            let result = FeedbackResult(
                alert: request.alert, feedbackType: type, profile: profile, sound: sound, vibration: vibration)
            if let completion { delivery.deliver { completion(result) } }
        }
        if plan.sound == nil {
            if playback.beginSound() {
                startSound(request, options: options, playback: playback)
            } else {
                playback.soundStarted(at: nil)
                join.finish(sound: .stopped)
            }
        } else {
            playback.soundStarted(at: nil)
        }
    }

    /// Starts the sound part, and tells `playback` when it is heard (`soundStarted(at:)`; nil
    /// when it ends without having been placed).
    private func startSound(_ request: Request, options: PlaybackOptions, playback: FeedbackPlayback) {
        let join = playback.join
        let finish: @Sendable (SoundOutcome) -> Void = { outcome in
            playback.soundStarted(at: nil)
            join.finish(sound: outcome)
        }
        let resolved: ResolvedAlertSound
        switch request {
        case .resolved(let found):
            resolved = found
        case .alert(let alert):
            do {
                resolved = try resolve(alert)
            } catch {
                return finish(.failed(error))
            }
        }
        let buffer: PCMBuffer
        switch resolved.content {
        case .sound(let found): buffer = found
        case .disabledByTheme: return finish(.disabledByTheme)
        case .vibrationOnly: return finish(.notRequested)
        }
        withAudioOutput { result in
            switch result {
            case .failure(let error):
                finish(.noAudioOutput(error))
            case .success(let output):
                // Stopped while the output was being opened: it never starts.
                guard !playback.stopRequested else { return finish(.stopped) }
                let ended: @Sendable (PlaybackEnd) -> Void = { end in finish(Self.soundOutcome(end)) }
                let handle =
                    if case .threads(let loop) = self.scheduling, let engine = output as? any DeliveringAudioOutput {
                        engine.play(buffer, options: options, delivery: loop, completion: ended)
                    } else {
                        output.play(buffer, options: options, queue: .global(), completion: ended)
                    }
                handle.whenHeard { playback.soundStarted(at: $0) }
                playback.attach(sound: handle)
            }
        }
    }

    private func currentThemeResolver() throws(SoundThemeError) -> SoundThemeResolver {
        let (configured, name) = state.withLock { ($0.themeResolver, $0.soundTheme) }
        if let configured { return configured }
        return try SoundThemeResolver.standard(explicitTheme: name)
    }

    /// Calls `body` with the audio output: at once when there is one, else once it is open (on the
    /// queue that opened it). One open runs at a time; every play that needs the output meanwhile
    /// waits for that one.
    private func withAudioOutput(_ body: @escaping OutputWaiter) {
        let (output, opens) = state.withLock { state -> ((any AudioOutput)?, Bool) in
            if let output = state.output { return (output, false) }
            if state.outputWaiters == nil {
                state.outputWaiters = [body]
                return (nil, true)
            }
            state.outputWaiters!.append(body)
            return (nil, false)
        }
        if let output { return body(.success(output)) }
        guard opens else { return }
        let open: @Sendable () -> Void = { [self] in
            let opened: Result<any AudioOutput, PlaybackError>
            do throws(PlaybackError) {
                opened = .success(try openAudioOutput())
            } catch {
                opened = .failure(error)
            }
            let (result, waiters) = state.withLock { state in
                if case .success(let output) = opened, state.output == nil { state.output = output }
                defer { state.outputWaiters = nil }
                return (state.output.map { .success($0) } ?? opened, state.outputWaiters ?? [])
            }
            for waiter in waiters { waiter(result) }
        }
        // A thread of its own rather than a Dispatch queue: the first play of a process opens the
        // output, and Dispatch starting its worker pool first put two thread start-ups before the
        // sound server's connect (`fire 1007`'s median 14.8 → 13.3 ms in one run).
        startDetachedThread(name: "output-open", open)
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
                if gone { startDetachedThread(name: "fbs-haptic-stop") { engine.shutdown() } }
            }
            return .failed(.haptics(error))
        }
    }
}

