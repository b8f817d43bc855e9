import FeedbackServices
public import Foundation
import Glibc
import Synchronization

/// Something the manager can play: a `Sound`, a `String` (a name, resolved through
/// `SoundManager.searchDirectories`, or a path if it contains a `/`), or a file `URL`.
///
/// Other conforming types are not understood: the manager ignores them as it ignores a name that
/// matches no file.
public protocol SoundReference: Sendable {}

extension String: SoundReference {}
extension URL: SoundReference {}

/// A reference to a sound that does not keep it alive.
struct WeakSound: Sendable {
    weak var sound: Sound?
}

/// One end of a `Sound` play, as `SoundManager.finishedSounds` yields it.
public struct SoundFinishEvent: Sendable {
    /// The sound that ended.
    public let sound: Sound
    /// True for a natural end, false for a stop or fade-out.
    public let didFinish: Bool
}

/// Sound effects and one music track, in the manner of the classic iOS `SoundManager`, on our
/// engine.
///
/// Effects play on the effects output; music on its own stream, so that the server's policies can
/// tell them apart (see `allowsBackgroundMusic`). Sounds are decoded once and their samples cached
/// by path for the manager's lifetime (`prepareToPlay` fills the cache ahead of time); music longer
/// than 30 s streams from disk. The manager holds a `Sound` while it plays (and the current
/// music), and otherwise only as long as you do.
/// Fades and crossfades are ramps inside the engine, and a crossfade's two ramps start on the
/// same frame and follow equal-power curves.
///
/// Names. The classic class looked names up in the app bundle; Linux has none, so a name is looked
/// up in `searchDirectories`, in order (by default the current directory, as it is at lookup time).
///
/// Thread safety: every property and method may be used from any thread.
public final class SoundManager: Sendable {
    /// The manager sounds use unless given another, on the engine the automatic choice names
    /// (`SoundManager.init()`).
    public static let shared = SoundManager()

    /// The extensions a name without one is tried with, in order: `.caf` first (the classic
    /// class's format), then the other formats libsndfile reads.
    public static let soundFileExtensions = [
        "caf", "wav", "aiff", "aif", "aifc", "flac", "ogg", "oga", "opus", "mp3", "rf64", "w64", "au", "snd",
    ]

    private struct State {
        var soundVolume: Float = 1
        var musicVolume: Float = 1
        var soundFadeDuration = 1.0
        var musicFadeDuration = 1.0
        var allowsBackgroundMusic = false
        var searchDirectories = ["."]
        var streamingThreshold = SoundDecoder.systemSoundDurationLimit
        var currentMusic: Sound?
        /// Sounds played as effects, until they end.
        var effects: [ObjectIdentifier: Sound] = [:]
        /// Sounds by path, for names and paths given as strings. Weak: a sound refers to its
        /// manager, and the decoded samples stay in `buffers` anyway, so a sound nobody holds may go.
        var sounds: [String: WeakSound] = [:]
        /// Music outputs the manager made, by `media.role`.
        var musicOutputs: [String: any AudioOutput] = [:]
        var listeners: [UInt64: AsyncStream<SoundFinishEvent>.Continuation] = [:]
        var nextListener: UInt64 = 0
        var lastStream: StreamingSource?
    }

    private let state = Lock(State())
    private let buffers = Lock<[String: PCMBuffer]>([:])
    private let decodes = Atomic<Int>(0)
    private let effectsOutput: any AudioOutput
    private let musicOutput: (any AudioOutput)?
    /// Makes the manager's own outputs, one per media role; nil when it was given its outputs.
    private let makeOutput: (@Sendable (_ mediaRole: String) -> any AudioOutput)?

    /// A manager with its own engine outputs where `AudioOutputSelection.choice()` points
    /// (`FEEDBACKSERVICES_OUTPUT`, `PULSE_SERVER`, then PipeWire when its daemon answers, else
    /// PulseAudio): one stream (role `event`) for effects, one for music (see
    /// `allowsBackgroundMusic`). Nothing opens until the first sound. On an ALSA PCM
    /// (`FEEDBACKSERVICES_OUTPUT=alsa`), which has no roles and which a second output could not
    /// open while the first holds it, music plays on the effects output.
    public convenience init() {
        self.init(environment: ProcessInfo.processInfo.environment)
    }

    /// `init()` with the choice made from `environment`.
    package init(environment: [String: String]) {
        let make: @Sendable (String) -> any AudioOutput = { AudioOutputSelection.engine(mediaRole: $0, environment: environment) }
        let effects = make("event")
        effectsOutput = effects
        musicOutput = effects is ALSAOutput ? effects : nil
        makeOutput = make
    }

    /// A manager with its own engine outputs on the PulseAudio server `configuration` names: one
    /// stream (role `event`) for effects, one for music (see `allowsBackgroundMusic`).
    public init(configuration: PulseAudioOutput.Configuration) {
        let make: @Sendable (String) -> any AudioOutput = { role in
            var configuration = configuration
            configuration.mediaRole = role
            return AudioOutputSelection.engine(configuration)
        }
        effectsOutput = make("event")
        musicOutput = nil
        makeOutput = make
    }

    /// A manager playing on outputs you give it: effects on `output`, music on `musicOutput` (or
    /// `output` too). `allowsBackgroundMusic` then has no effect on the streams.
    public init(output: any AudioOutput, musicOutput: (any AudioOutput)? = nil) {
        effectsOutput = output
        self.musicOutput = musicOutput ?? output
        makeOutput = nil
    }

    // MARK: Settings

    /// The level of every effect, 0…1, multiplied into each sound's own; changes apply at once to
    /// the effects playing.
    public var soundVolume: Float {
        get { state.withLock { $0.soundVolume } }
        set {
            let sounds = state.withLock { state in
                state.soundVolume = max(0, newValue)
                return Array(state.effects.values)
            }
            for sound in sounds { sound.applyLevel() }
        }
    }

    /// The level of the music, 0…1, multiplied into the track's own; applies at once.
    public var musicVolume: Float {
        get { state.withLock { $0.musicVolume } }
        set {
            let music = state.withLock { state in
                state.musicVolume = max(0, newValue)
                return state.currentMusic
            }
            music?.applyLevel()
        }
    }

    /// Seconds effects fade over when `playSound(fadeIn: true)` or `stopSound(fadeOut: true)`
    /// asks for a fade; 1 s by default.
    public var soundFadeDuration: Double {
        get { state.withLock { $0.soundFadeDuration } }
        set { state.withLock { $0.soundFadeDuration = max(0, newValue) } }
    }

    /// Seconds music fades and crossfades over; 1 s by default.
    public var musicFadeDuration: Double {
        get { state.withLock { $0.musicFadeDuration } }
        set { state.withLock { $0.musicFadeDuration = max(0, newValue) } }
    }

    /// Whether our music is background ambience that lives alongside the user's own music player
    /// (iOS: other apps' music keeps playing). On Linux this is the music stream's `media.role`,
    /// which the sound server's policies act on: false (the default) tags our track `music`, so
    /// that it is treated like any music player (corked in a call by module-role-cork, ducked by
    /// module-role-ducking, on the desktop's music volume); true tags it `game`, as the app's
    /// own sound rather than the music the user listens to.
    ///
    /// Applies from the next `playMusic` (a stream's role is fixed when it opens), and only to a
    /// manager that made its own outputs (`init()`, `init(configuration:)`).
    public var allowsBackgroundMusic: Bool {
        get { state.withLock { $0.allowsBackgroundMusic } }
        set { state.withLock { $0.allowsBackgroundMusic = newValue } }
    }

    /// The `media.role` the next music stream gets.
    public var musicMediaRole: String { allowsBackgroundMusic ? "game" : "music" }

    /// Where names are looked up, in order; relative entries are relative to the current directory
    /// at lookup time. `["."]` by default.
    public var searchDirectories: [String] {
        get { state.withLock { $0.searchDirectories } }
        set { state.withLock { $0.searchDirectories = newValue } }
    }

    /// Sounds longer than this many seconds are streamed from disk instead of decoded whole.
    var streamingThreshold: Double {
        get { state.withLock { $0.streamingThreshold } }
        set { state.withLock { $0.streamingThreshold = newValue } }
    }

    // MARK: Music

    /// Whether the music track is playing, as the engine reports it (false once it has ended or
    /// been stopped, true through a fade-out until its last frame is played).
    public var isPlayingMusic: Bool {
        state.withLock { $0.currentMusic }?.isPlaying ?? false
    }

    /// The track `playMusic` started last, if any.
    public var currentMusic: Sound? { state.withLock { $0.currentMusic } }

    /// Plays `music` as the one music track (looping by default).
    ///
    /// If another track is playing and `fadeIn` is true, the two crossfade over `musicFadeDuration`:
    /// the old one falls as cos, the new one rises as sin, both ramps starting on the same frame,
    /// so the summed power stays constant. Without `fadeIn` the old track stops and the new one
    /// starts at full level. The same track again, while it plays, does nothing; while it fades
    /// out (after `stopMusic`), it comes back the same way.
    public func playMusic(_ music: some SoundReference, looping: Bool = true, fadeIn: Bool = true) {
        guard let sound = sound(for: music) else { return }
        let (old, duration) = state.withLock { state in
            defer { state.currentMusic = sound }
            return (state.currentMusic, state.musicFadeDuration)
        }
        if let old, old === sound || old.path == sound.path, old.isPlaying, !old.isFadingOut {
            state.withLock { $0.currentMusic = old }
            return
        }
        sound.role = .music
        sound.isLooping = looping
        // The new track may still be sounding: fading out from an earlier stop or crossfade.
        let sounding = sound.isPlaying
        let outgoing = old?.latestPlay
        if fadeIn, let old, let outgoing, duration > 0 {
            if outgoing.output == ObjectIdentifier(output(for: .music)) {
                // One start command carries the old track's fade-out, so both ramps share a frame.
                sound.start(fadeIn: duration, curve: .equalPower, replacing: outgoing.handle, evenIfPlaying: true)
                if old !== sound { old.fadeOut(duration: duration, curve: .equalPower, inEngine: false) }
            } else {
                old.fadeOut(duration: duration, curve: .equalPower)
                sound.start(fadeIn: duration, curve: .equalPower, replacing: nil, evenIfPlaying: true)
            }
        } else {
            old?.stop()
            if sounding { sound.stop() }
            if fadeIn && duration > 0 {
                sound.start(fadeIn: duration, curve: .linear, replacing: nil)
            } else {
                sound.play()
            }
        }
    }

    /// Stops the music track, fading it out over `musicFadeDuration` by default.
    public func stopMusic(fadeOut: Bool = true) {
        guard let music = state.withLock({ $0.currentMusic }) else { return }
        let duration = musicFadeDuration
        if fadeOut && duration > 0 { music.fadeOut(duration: duration) } else { music.stop() }
    }

    // MARK: Effects

    /// Plays `sound` as an effect (once by default, at once by default; with `fadeIn`, rising from
    /// silence over `soundFadeDuration`). A sound already playing is left alone unless it
    /// `allowsOverlap`.
    /// - Returns: the sound, or nil if `sound` names no readable file.
    @discardableResult
    public func playSound(_ sound: some SoundReference, looping: Bool = false, fadeIn: Bool = false) -> Sound? {
        guard let sound = self.sound(for: sound) else { return nil }
        sound.role = .effect
        sound.isLooping = looping
        if fadeIn && soundFadeDuration > 0 {
            sound.fadeIn(duration: soundFadeDuration)
        } else {
            sound.play()
        }
        return sound
    }

    /// Stops every instance of `sound` playing as an effect (every `Sound` of the same file),
    /// fading out over `soundFadeDuration` by default.
    public func stopSound(_ sound: some SoundReference, fadeOut: Bool = true) {
        guard let path = path(for: sound) else { return }
        let matching = state.withLock { $0.effects.values.filter { $0.path == path } }
        stop(matching, fadeOut: fadeOut)
    }

    /// Stops every effect (not the music), fading out over `soundFadeDuration` by default.
    public func stopAllSounds(fadeOut: Bool = true) {
        stop(state.withLock { Array($0.effects.values) }, fadeOut: fadeOut)
    }

    private func stop(_ sounds: [Sound], fadeOut: Bool) {
        let duration = soundFadeDuration
        for sound in sounds {
            if fadeOut && duration > 0 { sound.fadeOut(duration: duration) } else { sound.stop() }
        }
    }

    // MARK: Preparing

    /// Connects the outputs now (waiting up to 2 s for the server) and preloads every sound file in
    /// `searchDirectories`, so that no first play waits for a connection or a decode.
    public func prepareToPlay() {
        var names: [String] = []
        for directory in searchDirectories {
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for entry in entries.sorted() {
                let ext = (entry as NSString).pathExtension.lowercased()
                if Self.soundFileExtensions.contains(ext) { names.append("\(directory)/\(entry)") }
            }
        }
        prepareToPlay(with: names)
    }

    /// Connects the outputs now and preloads every sound named (a `Sound`, name, path or URL):
    /// short ones are decoded into the cache, long ones have their headers read.
    /// - Returns: the sounds that could be loaded, in order.
    @discardableResult
    public func prepareToPlay(with sounds: [any SoundReference]) -> [Sound] {
        for output in [effectsOutput, output(for: .music)] { try? output.prepare(timeout: 2) }
        return sounds.compactMap { sound(for: $0) }
    }

    // MARK: Finish events

    /// Every end of every sound this manager plays, from now on, as `Sound` reports them (one per
    /// play). Each access makes a new sequence; it stops receiving when its iterator is dropped.
    public var finishedSounds: AsyncStream<SoundFinishEvent> {
        AsyncStream(bufferingPolicy: .unbounded) { continuation in
            let key = state.withLock { state in
                state.nextListener += 1
                state.listeners[state.nextListener] = continuation
                return state.nextListener
            }
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.listeners.removeValue(forKey: key) }
            }
        }
    }

    // MARK: Lookup and loading

    /// The file a name stands for: the first match in `searchDirectories`, trying each of
    /// `soundFileExtensions` in turn when the name has no extension (or one that is not a sound
    /// file's); nil if none exists.
    public func url(forSoundNamed name: String) -> URL? {
        let hasExtension = Self.soundFileExtensions.contains((name as NSString).pathExtension.lowercased())
        let candidates = hasExtension ? [name] : Self.soundFileExtensions.map { "\(name).\($0)" }
        for directory in searchDirectories {
            for candidate in candidates {
                let path = "\(directory)/\(candidate)"
                if access(path, R_OK) == 0 {
                    return URL(fileURLWithPath: path).standardizedFileURL
                }
            }
        }
        return nil
    }

    /// The manager's `Sound` for a reference: a `Sound` itself, or the one sound per file the
    /// manager keeps for names, paths and URLs.
    func sound(for reference: any SoundReference) -> Sound? {
        if let sound = reference as? Sound { return sound }
        guard let path = path(for: reference) else { return nil }
        if let known = state.withLock({ $0.sounds[path]?.sound }) { return known }
        guard let sound = try? Sound(contentsOfFile: path, manager: self) else { return nil }
        return state.withLock { state in
            if let raced = state.sounds[path]?.sound { return raced }
            state.sounds = state.sounds.filter { $0.value.sound != nil }
            state.sounds[path] = WeakSound(sound: sound)
            return sound
        }
    }

    private func path(for reference: any SoundReference) -> String? {
        switch reference {
        case let sound as Sound:
            return sound.path
        case let url as URL:
            return url.isFileURL ? url.standardizedFileURL.path(percentEncoded: false) : nil
        case let string as String:
            if string.contains("/") { return URL(fileURLWithPath: string).standardizedFileURL.path(percentEncoded: false) }
            return url(forSoundNamed: string)?.path(percentEncoded: false)
        default:
            return nil
        }
    }

    /// What a file holds: a cached decoded buffer (decoded on first use), or, beyond
    /// `streamingThreshold`, a stream of known duration.
    func content(ofFileAt path: String) throws(SoundError) -> SoundContent {
        let threshold = streamingThreshold
        if let cached = buffers.withLock({ $0[path] }), cached.duration <= threshold { return .buffer(cached) }
        let header = try SoundFileReader(path: path)
        let seconds = header.duration
        _ = consume header
        if seconds > threshold { return .stream(duration: seconds) }
        let decoded = try SoundDecoder(sampleRate: engineSampleRate, maximumDuration: nil).decode(fileAt: path)
        decodes.add(1, ordering: .relaxed)
        let buffer = buffers.withLock { buffers in
            if let raced = buffers[path] { return raced }
            buffers[path] = decoded.buffer
            return decoded.buffer
        }
        return .buffer(buffer)
    }

    /// How many files have been decoded whole (for tests: a cached play decodes nothing).
    var decodeCount: Int { decodes.load(ordering: .relaxed) }

    /// The ring of the stream started last (for tests: its high-water mark).
    var lastStream: StreamingSource? { state.withLock { $0.lastStream } }

    func noteStream(_ source: StreamingSource) {
        state.withLock { $0.lastStream = source }
    }

    /// The rate sounds are decoded at: the effects output's, or 48 kHz for one that takes any.
    private var engineSampleRate: Int {
        effectsOutput.requiredSampleRate ?? 48_000
    }

    // MARK: Used by Sound

    func groupVolume(for role: Sound.Role) -> Float {
        state.withLock { role == .music ? $0.musicVolume : $0.soundVolume }
    }

    func output(for role: Sound.Role) -> any AudioOutput {
        guard role == .music else { return effectsOutput }
        if let musicOutput { return musicOutput }
        guard let makeOutput else { return effectsOutput }
        let (role, existing) = state.withLock { state in
            let role = state.allowsBackgroundMusic ? "game" : "music"
            return (role, state.musicOutputs[role])
        }
        if let existing { return existing }
        // Made outside the lock: the choice may connect to PipeWire's socket.
        let made = makeOutput(role)
        return state.withLock { state in
            if let raced = state.musicOutputs[role] { return raced }
            state.musicOutputs[role] = made
            return made
        }
    }

    /// A sound started playing: effects are tracked so that `stopSound` and `stopAllSounds` reach
    /// them however they were started.
    func soundStarted(_ sound: Sound, role: Sound.Role) {
        guard role == .effect else { return }
        state.withLock { $0.effects[ObjectIdentifier(sound)] = sound }
    }

    func soundEnded(_ sound: Sound, didFinish: Bool) {
        let listeners = state.withLock { state in
            if !sound.isPlaying { state.effects.removeValue(forKey: ObjectIdentifier(sound)) }
            return Array(state.listeners.values)
        }
        let event = SoundFinishEvent(sound: sound, didFinish: didFinish)
        for listener in listeners { listener.yield(event) }
    }
}
