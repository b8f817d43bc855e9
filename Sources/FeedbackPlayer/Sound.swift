@_exported public import FeedbackServices
public import Foundation
import Synchronization

/// A sound effect or music track, in the manner of the classic iOS `Sound` class: play, stop,
/// loop, seek, volume, pan and fades, played by a `SoundManager`'s engine.
///
/// Loading. A sound shorter than the manager's streaming threshold (30 s) is decoded once and kept
/// in the manager's cache: every `Sound` for the same file, and every play, shares that one
/// buffer, and playing never reopens the file. A longer sound (music) is streamed: each play opens
/// the file, decodes its first half second before `play()` returns (so the engine never waits for
/// it), and decodes the rest on a feeder thread a few seconds ahead of the engine, in fixed memory.
///
/// Volume. What is heard is `volume × baseVolume × ` the manager's `soundVolume` (or `musicVolume`
/// while the manager plays it as music). Every change is a ramp inside the engine, sample-accurate:
/// a few milliseconds for a set, the given duration for a fade.
///
/// Ends. Each play ends exactly once: naturally (`didFinish` true; the next `play()` starts from the
/// beginning), or by `stop()` or the end of `fadeOut` (`didFinish` false; the position is kept).
/// Each end calls `completionHandler`, posts `SoundDidFinishPlayingNotification` (object: the
/// sound, `userInfo[Sound.didFinishUserInfoKey]`: the Bool) and is yielded to the manager's
/// `finishedSounds`. These run on a global dispatch queue, not the main thread.
///
/// Thread safety: every property and method may be used from any thread.
public final class Sound: Sendable, SoundReference {
    /// The `userInfo` key of `SoundDidFinishPlayingNotification` whose value is a `Bool`: true for
    /// a natural end, false for a stop.
    public static let didFinishUserInfoKey = "didFinish"

    /// The file's name without its directory and extension.
    public let name: String
    /// The file it plays.
    public let url: URL
    /// Its length in seconds.
    public let duration: Double
    /// The manager whose engine plays it.
    public let manager: SoundManager

    let path: String
    let content: SoundContent

    enum Role: Sendable { case effect, music }

    /// A play in progress.
    private struct Instance {
        let handle: PlaybackHandle
        /// Our number for it (its completion finds it by this).
        let number: UInt64
        /// The output it plays on.
        let output: ObjectIdentifier
        /// Monotonic seconds when it was started and the position it started from.
        let startedAt: Double
        let offset: Double
        let looping: Bool
        /// Ended by a seek, which started a new instance: no notification.
        var superseded = false
    }

    /// A volume ramp in progress, so `volume` reads the level being heard.
    private struct Fade {
        let from: Float
        let to: Float
        let startedAt: Double
        let duration: Double
    }

    private struct State {
        var isLooping = false
        var allowsOverlap = false
        var baseVolume: Float = 1
        var volume: Float = 1
        var pan: Float = 0
        var completionHandler: (@Sendable (Bool) -> Void)?
        var instances: [Instance] = []
        /// Where the next `play()` starts, in seconds.
        var position: Double = 0
        var fade: Fade?
        /// The volume to restore once a fade-out has stopped the sound.
        var volumeBeforeFadeOut: Float?
        var role: Role = .effect
    }

    private let state = Lock(State())

    /// The sound named `name`, found as the manager's `searchDirectories` say (see
    /// `SoundManager.url(forSoundNamed:)`). A name without an extension tries `.caf` first, then
    /// the other formats libsndfile reads.
    /// - Throws: `SoundError` (`.notFound` if no file matches, or why the file cannot be read).
    public convenience init(named name: String, manager: SoundManager = .shared) throws(SoundError) {
        guard let url = manager.url(forSoundNamed: name) else {
            throw SoundError(.notFound, source: name, detail: "searched \(manager.searchDirectories.joined(separator: ", "))")
        }
        try self.init(contentsOf: url, manager: manager)
    }

    /// The sound in the file at `path` (absolute, or relative to the current directory).
    /// - Throws: `SoundError` if it cannot be read.
    public convenience init(contentsOfFile path: String, manager: SoundManager = .shared) throws(SoundError) {
        try self.init(contentsOf: URL(fileURLWithPath: path), manager: manager)
    }

    /// The sound in the file a `file:` URL names.
    /// - Throws: `SoundError` if it cannot be read; a URL that is not a file URL is `.notFound`.
    public init(contentsOf url: URL, manager: SoundManager = .shared) throws(SoundError) {
        guard url.isFileURL else {
            throw SoundError(.notFound, source: url.absoluteString, detail: "only file URLs can be played")
        }
        let path = url.standardizedFileURL.path(percentEncoded: false)
        content = try manager.content(ofFileAt: path)
        self.path = path
        self.url = URL(fileURLWithPath: path)
        self.manager = manager
        name = self.url.deletingPathExtension().lastPathComponent
        duration = content.duration
    }

    // MARK: Properties

    /// Whether the sound is playing: true from `play()` until the server has played its last
    /// sample (or it was stopped); the engine's own state, not a timer's guess.
    public var isPlaying: Bool {
        state.withLock { $0.instances.contains { $0.handle.isPlaying } }
    }

    /// Whether a play repeats until stopped. Takes effect at the next `play()`.
    public var isLooping: Bool {
        get { state.withLock { $0.isLooping } }
        set { state.withLock { $0.isLooping = newValue } }
    }

    /// Whether `play()` while playing starts another instance over the first (for effects fired in
    /// quick succession); false, the classic behaviour, makes it do nothing. `stop()` and fades act
    /// on every instance; `currentTime` is the latest one's.
    public var allowsOverlap: Bool {
        get { state.withLock { $0.allowsOverlap } }
        set { state.withLock { $0.allowsOverlap = newValue } }
    }

    /// Called once per play when it ends: `true` for a natural end, `false` for a stop or fade-out.
    /// Runs on a global dispatch queue.
    public var completionHandler: (@Sendable (_ didFinish: Bool) -> Void)? {
        get { state.withLock { $0.completionHandler } }
        set { state.withLock { $0.completionHandler = newValue } }
    }

    /// A per-sound level, 0…1 (or more), multiplied into `volume`: set it once to balance a sound
    /// against others, and use `volume` and fades for the moment.
    public var baseVolume: Float {
        get { state.withLock { $0.baseVolume } }
        set {
            state.withLock { $0.baseVolume = max(0, newValue) }
            applyLevel()
        }
    }

    /// The sound's level, 0…1 (or more). During a fade it reads the level the fade has reached;
    /// setting it ends the fade.
    public var volume: Float {
        get { state.withLock { Self.currentVolume($0, now: MonotonicClock.now) } }
        set {
            state.withLock {
                $0.volume = max(0, newValue)
                $0.fade = nil
            }
            applyLevel()
        }
    }

    /// The balance, −1 (left) … 0 (centre) … 1 (right).
    public var pan: Float {
        get { state.withLock { $0.pan } }
        set {
            let pan = min(1, max(-1, newValue))
            let handles = state.withLock { state in
                state.pan = pan
                return state.instances.map(\.handle)
            }
            for handle in handles { handle.setPan(pan) }
        }
    }

    /// The position in seconds: where the latest play is now (estimated from when the engine
    /// started it), or where the next `play()` starts. Setting it seeks: a playing sound carries
    /// on from the new position within a few milliseconds, without a finish notification.
    public var currentTime: Double {
        get { state.withLock { Self.position($0, duration: duration, now: MonotonicClock.now) } }
        set { seek(to: newValue) }
    }

    // MARK: Playing

    /// Starts playing from `currentTime`; does nothing if it is playing already (unless
    /// `allowsOverlap`).
    public func play() {
        start(fadeIn: 0, curve: .linear, replacing: nil)
    }

    /// Stops every instance at once (with a click-free 2.5 ms ramp) and keeps the position, so
    /// `play()` resumes there. Each instance reports `didFinish` false.
    public func stop() {
        let handles = state.withLock { state -> [PlaybackHandle] in
            state.position = Self.position(state, duration: duration, now: MonotonicClock.now)
            return state.instances.map(\.handle)
        }
        for handle in handles { handle.stop() }
    }

    /// Moves `volume` to `target` over `duration` seconds, as one linear ramp inside the engine.
    public func fade(to target: Float, duration: Double) {
        fade(to: target, duration: duration, curve: .linear)
    }

    /// Sets `volume` to 0, starts playing, and fades to 1 over `duration` seconds; the ramp starts
    /// with the first sample.
    public func fadeIn(duration: Double) {
        start(fadeIn: duration, curve: .linear, replacing: nil)
    }

    /// Fades to silence over `duration` seconds and stops at the frame the fade reaches zero
    /// (`didFinish` false, position kept). `volume` then returns to its level before the fade, so
    /// the next `play()` is heard.
    public func fadeOut(duration: Double) {
        fadeOut(duration: duration, curve: .linear)
    }

    // MARK: Internals used by the manager

    var role: Role {
        get { state.withLock { $0.role } }
        set { state.withLock { $0.role = newValue } }
    }

    /// Whether a fade-out to a stop is under way.
    var isFadingOut: Bool {
        state.withLock { $0.volumeBeforeFadeOut != nil && $0.instances.contains { $0.handle.isPlaying } }
    }

    /// The latest play still going and the output it is on, for a crossfade.
    var latestPlay: (handle: PlaybackHandle, output: ObjectIdentifier)? {
        state.withLock { state in
            state.instances.last { $0.handle.isPlaying }.map { ($0.handle, $0.output) }
        }
    }

    /// Fades every instance out; with `inEngine` false only the sound's own state follows, because
    /// the engine already ramps it (the outgoing side of a crossfade).
    func fadeOut(duration: Double, curve: Envelope.Curve, inEngine: Bool = true) {
        let now = MonotonicClock.now
        let handles = state.withLock { state -> [PlaybackHandle] in
            let playing = state.instances.filter { $0.handle.isPlaying }
            guard !playing.isEmpty else { return [] }
            let current = Self.currentVolume(state, now: now)
            if state.volumeBeforeFadeOut == nil { state.volumeBeforeFadeOut = current }
            state.fade = Fade(from: current, to: 0, startedAt: now, duration: duration)
            state.volume = 0
            state.position = Self.position(state, duration: self.duration, now: now + duration)
            return playing.map(\.handle)
        }
        guard inEngine else { return }
        for handle in handles { handle.fadeOut(duration: duration, curve: curve) }
    }

    func fade(to target: Float, duration: Double, curve: Envelope.Curve) {
        let now = MonotonicClock.now
        let (handles, level) = state.withLock { state -> ([PlaybackHandle], Float) in
            let target = max(0, target)
            state.fade = Fade(from: Self.currentVolume(state, now: now), to: target, startedAt: now, duration: duration)
            state.volume = target
            return (state.instances.map(\.handle), target * state.baseVolume)
        }
        let group = manager.groupVolume(for: role)
        for handle in handles { handle.setVolume(level * group, ramp: duration, curve: curve) }
    }

    /// Starts an instance; with `fadeIn` > 0, `volume` goes from 0 to 1 along `curve` from its
    /// first frame, and `replacing` (a play on the same output) fades out over the same frames.
    /// - Returns: whether an instance was started.
    @discardableResult
    func start(
        fadeIn: Double, curve: Envelope.Curve, replacing: PlaybackHandle?, evenIfPlaying: Bool = false
    ) -> Bool {
        let now = MonotonicClock.now
        let role = self.role
        let output = manager.output(for: role)
        let group = manager.groupVolume(for: role)
        let id = nextInstanceNumber()
        let plan = state.withLock { state -> (offset: Double, options: PlaybackOptions)? in
            if !evenIfPlaying, !state.allowsOverlap, state.instances.contains(where: { $0.handle.isPlaying }) { return nil }
            if fadeIn > 0 {
                state.volume = 1
                state.fade = Fade(from: 0, to: 1, startedAt: now, duration: fadeIn)
            }
            state.volumeBeforeFadeOut = nil
            let offset = state.position < duration ? state.position : 0
            var options = PlaybackOptions(
                volume: state.volume * state.baseVolume * group, pan: state.pan,
                playCount: state.isLooping ? PlaybackOptions.forever : 1, fadeIn: fadeIn)
            options.fadeCurve = curve
            options.replacing = replacing?.id
            return (offset, options)
        }
        guard let plan else { return false }
        manager.soundStarted(self, role: role)
        let handle = content.play(
            on: output, path: path, offset: plan.offset, options: plan.options, manager: manager
        ) { [weak self] end in
            self?.instanceEnded(id, end)
        }
        state.withLock { state in
            state.instances.append(Instance(
                handle: handle, number: id, output: ObjectIdentifier(output), startedAt: now, offset: plan.offset,
                looping: plan.options.playCount != 1))
        }
        // A play that failed at once ended before it was recorded; look again.
        if !handle.isPlaying { sweepEnded() }
        return true
    }

    private func seek(to time: Double) {
        let target = min(max(0, time), duration)
        let superseded = state.withLock { state -> [PlaybackHandle] in
            state.position = target
            guard let latest = state.instances.lastIndex(where: { $0.handle.isPlaying }) else { return [] }
            state.instances[latest].superseded = true
            return [state.instances[latest].handle]
        }
        guard let old = superseded.first else { return }
        old.stop()
        // The old instance has not reported its end yet, but the new one must start now.
        start(fadeIn: 0, curve: .linear, replacing: nil, evenIfPlaying: true)
    }

    /// Re-applies the heard level to every instance after `volume`, `baseVolume` or the manager's
    /// group volume changed.
    func applyLevel() {
        let group = manager.groupVolume(for: role)
        let (handles, level) = state.withLock { state in
            (state.instances.map(\.handle), state.volume * state.baseVolume * group)
        }
        for handle in handles { handle.setVolume(level) }
    }

    private func instanceEnded(_ number: UInt64, _ end: PlaybackEnd) {
        let report = state.withLock { state -> (handler: (@Sendable (Bool) -> Void)?, didFinish: Bool)? in
            guard let index = state.instances.firstIndex(where: { $0.number == number }) else { return nil }
            let instance = state.instances.remove(at: index)
            if instance.superseded { return nil }
            let didFinish = end == .finished
            if didFinish { state.position = 0 }
            if !state.instances.contains(where: { $0.handle.isPlaying }), let restore = state.volumeBeforeFadeOut {
                state.volume = restore
                state.fade = nil
                state.volumeBeforeFadeOut = nil
            }
            return (state.completionHandler, didFinish)
        }
        guard let report else { return }
        report.handler?(report.didFinish)
        NotificationCenter.default.post(
            name: .soundDidFinishPlaying, object: self, userInfo: [Self.didFinishUserInfoKey: report.didFinish])
        manager.soundEnded(self, didFinish: report.didFinish)
    }

    /// Drops instances whose play failed before they were recorded, reporting their end.
    private func sweepEnded() {
        let numbers = state.withLock { $0.instances.filter { !$0.handle.isPlaying }.map(\.number) }
        for number in numbers { instanceEnded(number, .failed(PlaybackError(.outputClosed))) }
    }

    private static func currentVolume(_ state: State, now: Double) -> Float {
        guard let fade = state.fade, fade.duration > 0 else { return state.volume }
        let progress = min(1, max(0, (now - fade.startedAt) / fade.duration))
        return fade.from + (fade.to - fade.from) * Float(progress)
    }

    private static func position(_ state: State, duration: Double, now: Double) -> Double {
        guard let latest = state.instances.last(where: { $0.handle.isPlaying && !$0.superseded }) else {
            return state.position
        }
        let elapsed = latest.offset + max(0, now - latest.startedAt)
        guard duration > 0 else { return 0 }
        return latest.looping ? elapsed.truncatingRemainder(dividingBy: duration) : min(elapsed, duration)
    }
}

private let instanceNumbers = Atomic<UInt64>(1)

private func nextInstanceNumber() -> UInt64 {
    instanceNumbers.wrappingAdd(1, ordering: .relaxed).oldValue
}

extension Notification.Name {
    /// Posted when a `Sound` play ends, naturally or by a stop; the object is the `Sound`, and
    /// `userInfo[Sound.didFinishUserInfoKey]` is true for a natural end.
    public static let soundDidFinishPlaying = Notification.Name("SoundDidFinishPlayingNotification")
}

/// The classic name of `Notification.Name.soundDidFinishPlaying`.
public let SoundDidFinishPlayingNotification = Notification.Name.soundDidFinishPlaying
