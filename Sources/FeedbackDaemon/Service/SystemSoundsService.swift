package import FeedbackBus
package import FeedbackServices
import FoundationEssentials
import Glibc
import Synchronization

/// Our own interface, `org.feedbackservices.SystemSounds1` at `/org/feedbackservices/SystemSounds1`
/// (the names: `SystemSounds1`):
/// AudioServices over D-Bus. Every play goes through the one `FeedbackManager`, as
/// `org.sigxcpu.Feedback`'s do; `share/dbus-1/interfaces/org.feedbackservices.SystemSounds1.xml`
/// documents each member for clients.
///
/// - `Play(u id, a{sv} options) → u play`, `PlayEvent(s event, a{sv} options) → u play`: a sound
///   ID (system 1000…1351, 4095, the persistent registry 4097…999,999, or one of the caller's own
///   from `RegisterFD`) or a sound theme event. Options: `volume` d (0…4), `pan` d (−1…1), `alert` b
///   (sound and vibration under the profile, as AudioServicesPlayAlertSound; default: sound only,
///   as AudioServicesPlaySystemSound). An unknown option, or one of the wrong type, is
///   `InvalidArgs`. A sound that cannot be found or decoded is refused in the reply
///   (`NoSuchSound`, `BadSound`); everything else ends with `PlayEnded`.
/// - `PlayEnded(u play, s how, s why)`: exactly once per play, sent to the caller only (a unicast
///   signal). `how` is `finished`, `stopped` or `failed`; `why` starts with a word from a fixed
///   list (`SystemSounds1.Why`), then, after ": ", an explanation for people.
/// - `Vibrate(a(du) pattern, a{sv} options) → u play`: a vibration on the service's vibrator, as a
///   play: the steps (magnitude 0…1, ms) and their bounds are `Haptic.Vibrate`'s, it obeys the
///   profile (silent: it ends `finished`, `silenced`), outlives its client as a play does and ends
///   with `PlayEnded` (`vibrated`, `stopped`, `failed`: `no-vibrator` when the vibrator went away).
///   A pattern that never vibrates is `InvalidArgs`; no vibrator to open is refused in the reply
///   (`NoVibrator`). Options: `detached` only.
/// - `PlayPattern(s path, a{sv} options) → u play`: the haptic pattern (an AHAP file or our own
///   form, `HapticPattern(fileAt:)`) at an absolute path as one play
///   (`FeedbackManager.resolve(_:maximumDecodedSeconds:)`): its sounds (IDs, events, files) mixed
///   into one, at most 30 s of audio together (a play's), its vibration and lights started when
///   that sound is heard, under the profile as an alert. A file that cannot be read or is not a
///   pattern, or a sound that cannot be decoded, is `BadSound` (an ID or event no theme has:
///   `NoSuchSound`); a pattern that only vibrates, with no vibrator, `NoVibrator`. Options:
///   `volume`, `pan`, `detached`. `PlayPatternFD(h fd, a{sv} options) → u play`: the same, read
///   from a passed file descriptor (a regular file of at most 1 MiB, for sandboxed clients); its
///   sound files must be named by absolute paths (a relative one is `BadSound`).
/// - Option `detached` s (`Play`, `PlayEvent`, `Vibrate`, `PlayPattern`, `PlayPatternFD`): the play is a detached one of the named
///   group — started for a caller that leaves at once and expects it to run to its end
///   (`feedbackctl fire --no-wait` names the group `feedbackctl`) — so that `StopDetached` can reach
///   it after its client has gone.
/// - `Stop(u play)`, `StopAll() → u count`: the caller's plays only (another's: `AccessDenied`;
///   one that already ended: nothing, as a stop may cross its `PlayEnded`).
/// - `StopDetached(s group) → a(us)`: stops the detached plays of `group` that clients of the
///   caller's own user started (the user ID the bus has from each one's socket, never anything a
///   client says: a session bus is one user's, and a user may stop what the user's own
///   fire-and-forget players left running, but no other user's), and answers once they have ended:
///   (play, what) for each it stopped. Plays without the option are never reached by it.
/// - `Register(s path) → u id`: the persistent registry (registry.json, as `feedbackctl register`);
///   the path must be absolute. `RegisterFD(h fd, s name) → u id`: a sound read from a passed file
///   descriptor (for sandboxed clients), in the service range (2,000,000,000 and up); it is the
///   caller's own: only it can play, change or unregister it, and it is gone when the caller leaves
///   the bus. `Unregister(u id)` removes either kind; `SetVolume(u id, d level)` re-registers one at
///   a level (0…4; for a persistent sound stored in the registry file). `ListSounds() → a(usd)`:
///   (id, path or name, seconds) for the persistent registry and the caller's own sounds.
/// - A play outlives its client (each is one sound of at most 30 s or one vibration of at most
///   60 s, and a fire-and-forget caller such as `gdbus call` leaves at once); its `PlayEnded` is
///   then not sent.
/// - `Describe(u id) → a{sv}`, `DescribeEvent(s event) → a{sv}`: what `Play` or `PlayEvent` would
///   play ("event", "file", "duration", "content"), refused as they would refuse it; what
///   `feedbackctl fire --json` prints of a sound the service plays.
/// - Properties `Profile`, `SoundTheme`, `AudioOutput`, `NotificationSounds` (read-only): what
///   `feedbackctl devices` shows of the running service.
///
/// Clients are not trusted: each is bounded (`Limits`: plays at once and a second, which a
/// `ClientSessions` table keeps as it numbers the plays; sounds and bytes registered), and a
/// request over a limit is refused with `org.freedesktop.DBus.Error.LimitsExceeded`, whose message
/// names the limit.
///
/// Thread safety: the bus thread calls the handler methods; the state is behind a Mutex, and the
/// manager's completions are handed to the bus thread, so signals go out in order there.
package final class SystemSoundsService: BusObjectHandler, Sendable {
    /// Its members.
    package static let members: [BusMember] = [
        .method("Play", signature: "ua{sv}", result: "u", names: ["id", "options", "play"]),
        .method("PlayEvent", signature: "sa{sv}", result: "u", names: ["event", "options", "play"]),
        .method("Stop", signature: "u", result: "", names: ["play"]),
        .method("StopAll", signature: "", result: "u", names: ["stopped"]),
        .method("Vibrate", signature: "a(du)a{sv}", result: "u", names: ["pattern", "options", "play"]),
        .method("PlayPattern", signature: "sa{sv}", result: "u", names: ["path", "options", "play"]),
        .method("PlayPatternFD", signature: "ha{sv}", result: "u", names: ["fd", "options", "play"]),
        .method("StopDetached", signature: "s", result: "a(us)", names: ["group", "stopped"]),
        .method("Register", signature: "s", result: "u", names: ["path", "id"]),
        .method("RegisterFD", signature: "hs", result: "u", names: ["fd", "name", "id"]),
        .method("Unregister", signature: "u", result: "", names: ["id"]),
        .method("SetVolume", signature: "ud", result: "", names: ["id", "level"]),
        .method("ListSounds", signature: "", result: "a(usd)", names: ["sounds"]),
        .method("Describe", signature: "u", result: "a{sv}", names: ["id", "sound"]),
        .method("DescribeEvent", signature: "s", result: "a{sv}", names: ["event", "sound"]),
        .signal("PlayEnded", signature: "uss", names: ["play", "how", "why"]),
        .property("Profile", signature: "s", writable: false, emitsChange: false),
        .property("SoundTheme", signature: "s", writable: false, emitsChange: false),
        .property("AudioOutput", signature: "s", writable: false, emitsChange: false),
        .property("NotificationSounds", signature: "s", writable: false, emitsChange: false),
    ]

    /// How much one client may ask for. A value; safe to share across threads.
    package struct Limits: Sendable, Equatable {
        /// Plays one client may have running at once.
        package var playsPerClient = 32
        /// Plays running at once, all clients together.
        package var plays = 512
        /// Plays a second one client may start, sustained.
        package var playsPerSecond = 20.0
        /// Plays one client may start at once after a quiet spell.
        package var playBurst = 40.0
        /// Sounds one client may have registered with `RegisterFD`.
        package var soundsPerClient = 64
        /// Bytes of decoded audio one client's `RegisterFD` sounds may hold (16 MiB: about 44 s of
        /// 48 kHz stereo).
        package var bytesPerClient = 16 << 20
        /// The largest file `RegisterFD` reads.
        package var fileBytes = RequestBounds.maximumSoundFileBytes

        /// The defaults.
        package init() {}

        /// The limits its `ClientSessions` table keeps.
        var sessions: SessionLimits {
            SessionLimits(perClient: playsPerClient, total: plays, perSecond: playsPerSecond, burst: playBurst)
        }
    }

    /// How its refusals name plays.
    static let sessionWording = SessionWording(request: "play", verb: "started", running: "plays")

    /// Where every play goes; its registry gives `RegisterFD` sounds their service-range IDs.
    package let manager: FeedbackManager
    /// The limits in force.
    package let limits: Limits
    private let log: @Sendable (String) -> Void
    /// The `NotificationSounds` property: the notification server seen and who plays the sounds
    /// notifications ask for (`NotificationBridge`).
    private let notificationSounds: @Sendable () -> String

    /// What the service keeps of a play; its client, and whether the client left (then its
    /// `PlayEnded` is not sent), are its session's.
    private struct Play {
        var what: String
        var playback: FeedbackPlayback?
        /// Why it is being stopped, once something asked.
        var stopReason: String?
        /// The `detached` option's group, and the user who started the play (nil when the bus did
        /// not say: then `StopDetached` never reaches it).
        var detached: (group: String, uid: UInt32?)?
    }

    /// A `StopDetached` call waiting for the plays it stopped to end.
    private struct DetachedStop {
        var waiting: Set<UInt32>
        var stopped: [[BusValue]]
        var reply: PendingReply
    }

    private struct ClientSound {
        var client: String
        var name: String
        var bytes: Int
    }

    private struct State {
        /// The plays, their caps, and every client's play budget, which `Describe` draws on too.
        var plays: ClientSessions<Play>
        var sounds: [SystemSoundID: ClientSound] = [:]
        var detachedStops: [DetachedStop] = []
    }
    private let state: Lock<State>

    /// A service playing through `manager` within `limits`; `log` receives one line at a time;
    /// `notificationSounds` says what the `NotificationSounds` property does.
    package init(
        manager: FeedbackManager, limits: Limits = Limits(), notificationSounds: @escaping @Sendable () -> String = { "" },
        log: @escaping @Sendable (String) -> Void
    ) {
        self.manager = manager
        self.limits = limits
        self.notificationSounds = notificationSounds
        self.log = log
        state = Lock(State(plays: ClientSessions(limits: limits.sessions, clientLeftPolicy: .letRun)))
    }

    /// Serves the interface on `bus` and follows clients leaving the bus.
    package func export(on bus: BusContext) throws(BusError) {
        try bus.export(path: SystemSounds1.objectPath, interface: SystemSounds1.interface, members: Self.members, handler: self)
        try bus.onClientLeft { [self] name, _ in clientLeft(name) }
    }

    // MARK: - BusObjectHandler

    /// Every method.
    package func call(_ message: BusMessage, bus: BusContext) throws(BusError) -> [BusValue] {
        let client = message.sender
        switch message.member {
        case "Play":
            let id = try message.readUInt32()
            let options = try PlayOptions(try message.readVariantDictionary(limit: 8))
            return [.uint32(try play(.id(id), options: options, message: message, bus: bus))]
        case "PlayEvent":
            let event = try Self.eventName(message)
            let options = try PlayOptions(try message.readVariantDictionary(limit: 8))
            return [.uint32(try play(.event(event), options: options, message: message, bus: bus))]
        case "Describe":
            return [try describe(.id(try message.readUInt32()), client: client)]
        case "DescribeEvent":
            return [try describe(.event(try Self.eventName(message)), client: client)]
        case "Vibrate":
            let steps = try message.readDoubleUInt32Pairs(limit: RequestBounds.maximumVibrateSteps)
            let options = try PlayOptions(try message.readVariantDictionary(limit: 8), sound: false)
            return [.uint32(try vibrate(steps, options: options, message: message, bus: bus))]
        case "PlayPattern":
            let path = try message.readString()
            let options = try PlayOptions(try message.readVariantDictionary(limit: 8), alert: false)
            return [.uint32(try playPattern(path, options: options, message: message, bus: bus))]
        case "PlayPatternFD":
            let descriptor = try message.readFileDescriptor()
            defer { close(descriptor) }
            let options = try PlayOptions(try message.readVariantDictionary(limit: 8), alert: false)
            return [.uint32(try playPattern(descriptor: descriptor, options: options, message: message, bus: bus))]
        case "Stop":
            try stop(try message.readUInt32(), client: client)
            return []
        case "StopAll":
            return [.uint32(stopAll(client: client))]
        case "StopDetached":
            let group = try message.readString()
            guard let uid = message.senderUID else {
                throw .accessDenied("the bus does not say which user the caller is")
            }
            // Each waits only for its plays' fades, but a flood of calls must not pile up.
            guard state.withLock({ $0.detachedStops.count }) < limits.plays else {
                throw .limitsExceeded("detached stops: \(limits.plays) are waiting for their plays to end, the most the service keeps")
            }
            stopDetached(group, uid: uid, reply: bus.answerLater(message))
            return []
        // Registering decodes (up to 30 s of audio): off the bus thread, so that other clients'
        // feedback is not held up meanwhile.
        case "Register":
            let path = try message.readString()
            let reply = bus.answerLater(message)
            // A thread of its own, not a Dispatch worker: that would start libdispatch's 1 Hz
            // workqueue monitor for the rest of the process (see `Delivery`).
            startDetachedThread(name: "register") { [self] in
                reply.send(Result { () throws(BusError) in [.uint32(try register(path: path))] })
            }
            return []
        case "RegisterFD":
            let descriptor = try message.readFileDescriptor()
            let name: String
            do {
                name = try message.readString()
            } catch {
                close(descriptor)
                throw error
            }
            let reply = bus.answerLater(message)
            startDetachedThread(name: "register") { [self] in
                defer { close(descriptor) }
                reply.send(Result { () throws(BusError) in [.uint32(try register(descriptor: descriptor, name: name, client: client))] })
            }
            return []
        case "Unregister":
            try unregister(try message.readUInt32(), client: client)
            return []
        case "SetVolume":
            let id = try message.readUInt32()
            guard case .double(let level) = try message.readBasic("d") else { throw .invalidArgs("level: a double") }
            try setVolume(level, for: id, client: client)
            return []
        case "ListSounds":
            return [try listSounds(client: client)]
        default:
            throw .failed("no method \(message.member)")
        }
    }

    /// `Profile`, `SoundTheme`, `AudioOutput`, `NotificationSounds`.
    package func get(_ name: String, bus: BusContext) throws(BusError) -> BusValue {
        switch name {
        case "Profile": return .string(manager.profile.rawValue)
        case "SoundTheme": return .string((try? SoundThemeResolver.standard().themeOrder.first) ?? "")
        case "AudioOutput": return .string(manager.audioOutput?.name ?? "")
        case "NotificationSounds": return .string(notificationSounds())
        default: throw .invalidArgs("no property \(name)")
        }
    }

    /// No property is writable (the profile is written through `org.sigxcpu.Feedback`).
    package func set(_ name: String, to value: BusValue, bus: BusContext) throws(BusError) {
        throw .accessDenied("\(name) is read-only")
    }

    // MARK: - Playing

    /// The options of `Play`, `PlayEvent` and `Vibrate`.
    struct PlayOptions {
        var playback = PlaybackOptions()
        var type = FeedbackType.audioOnly
        /// `detached`: the group the play belongs to.
        var detached: String?

        /// Reads `entries`; for a vibration (`sound` false) only `detached` applies, and `alert`
        /// only where the caller chooses the type (not for a pattern, whose lanes do).
        init(_ entries: [String: BusValue], sound: Bool = true, alert allowsAlert: Bool = true) throws(BusError) {
            for (key, value) in entries {
                switch (key, value) {
                case ("volume", .double(let volume)) where sound:
                    guard VolumeLimit.range.contains(Float(volume)) else {
                        throw .invalidArgs("volume \(volume): from 0 to \(VolumeLimit.maximum)")
                    }
                    playback.volume = Float(volume)
                case ("pan", .double(let pan)) where sound:
                    guard (-1...1).contains(pan) else { throw .invalidArgs("pan \(pan): from -1 to 1") }
                    playback.pan = Float(pan)
                case ("alert", .boolean(let alert)) where sound && allowsAlert:
                    type = alert ? .audioAndVibrate : .audioOnly
                case ("detached", .string(let group)):
                    guard !group.isEmpty, group.utf8.count <= RequestBounds.maximumNameLength else {
                        throw .invalidArgs("a detached group has 1 to \(RequestBounds.maximumNameLength) bytes")
                    }
                    detached = group
                default:
                    let known =
                        !sound ? "detached (s)" : allowsAlert ? "volume (d), pan (d), alert (b), detached (s)" : "volume (d), pan (d), detached (s)"
                    throw .invalidArgs("unknown option '\(key.prefix(64))' of type \(value): \(known)")
                }
            }
        }
    }

    /// `PlayEvent`'s and `DescribeEvent`'s event name: 1 to `RequestBounds.maximumNameLength` bytes.
    private static func eventName(_ message: BusMessage) throws(BusError) -> String {
        let event = try message.readString()
        guard !event.isEmpty, event.utf8.count <= RequestBounds.maximumNameLength else {
            throw .invalidArgs("an event name has 1 to \(RequestBounds.maximumNameLength) bytes")
        }
        return event
    }

    private func play(_ alert: AlertSound, options: PlayOptions, message: BusMessage, bus: BusContext) throws(BusError)
        -> UInt32
    {
        let sound = try resolve(alert, client: message.sender)
        return try start(alert.description, options: options, message: message, bus: bus) { completion in
            manager.play(sound, type: options.type, options: options.playback, delivery: .immediate, completion: completion)
        }
    }

    /// `Describe`, `DescribeEvent`: what `Play` of `alert` would play, as `feedbackctl fire --json`
    /// reports it — "event" s (the theme event it was found under), "file" s, "duration" d (seconds),
    /// "content" s (`sound`, `disabled` by the theme, `vibration-only`) — looked up as `Play` looks
    /// it up, with the same refusals, and taking one of the caller's play tokens (a lookup may decode).
    private func describe(_ alert: AlertSound, client: String) throws(BusError) -> BusValue {
        let sound = try resolve(alert, client: client)
        var facts: [String: BusValue] = [:]
        if let event = sound.event { facts["event"] = .string(event) }
        if let file = sound.file { facts["file"] = .string(file) }
        if let duration = sound.duration { facts["duration"] = .double(duration) }
        let content: String
        switch sound.content {
        case .sound: content = "sound"
        case .disabledByTheme: content = "disabled"
        case .vibrationOnly: content = "vibration-only"
        }
        facts["content"] = .string(content)
        return .dictionary(facts)
    }

    /// The sound `client` asks for, with the checks every request for one makes: a service-range ID
    /// must be the caller's own, a process-local one is refused, the request takes a play token,
    /// and a sound that cannot be found or decoded is refused (`refusal`).
    private func resolve(_ alert: AlertSound, client: String) throws(BusError) -> ResolvedAlertSound {
        if case .id(let id) = alert, SoundIDRange(id) == .service {
            guard let owner = state.withLock({ $0.sounds[id]?.client }) else {
                throw BusError(name: SystemSounds1.ErrorName.noSuchSound, message: "no sound \(id) is registered with this service")
            }
            guard owner == client else { throw .accessDenied("sound \(id) belongs to another client") }
        }
        if case .id(let id) = alert, SoundIDRange(id) == .processLocal {
            throw BusError(
                name: SystemSounds1.ErrorName.noSuchSound,
                message: "\(id) is a process-local sound ID (\(SoundIDRange.processLocal)): only its own process can play it")
        }
        try takeToken(client)
        do {
            return try manager.resolve(alert)
        } catch {
            throw Self.refusal(error)
        }
    }

    /// `Vibrate`: `steps` (magnitude, ms) as a play of their own.
    private func vibrate(_ steps: [(Double, UInt32)], options: PlayOptions, message: BusMessage, bus: BusContext)
        throws(BusError) -> UInt32
    {
        guard let pattern = try? VibrationPattern(steps: try RequestBounds.vibrationSteps(steps)) else {
            throw .invalidArgs("the pattern never vibrates (a vibration is stopped with Stop)")
        }
        try takeToken(message.sender)
        do {
            try manager.prepareVibrator()
        } catch {
            log("Vibrate (client \(message.sender)): no vibrator: \(error)")
            throw BusError(name: SystemSounds1.ErrorName.noVibrator, message: "no vibrator: \(error)")
        }
        return try start("vibration of \(pattern.duration) ms", options: options, message: message, bus: bus) {
            completion in
            manager.play(
                .id(kSystemSoundID_Vibrate), type: .vibrateOnly, vibration: pattern, delivery: .immediate,
                completion: completion)
        }
    }

    /// `PlayPattern`: the pattern at `path` as one play.
    private func playPattern(_ path: String, options: PlayOptions, message: BusMessage, bus: BusContext) throws(BusError)
        -> UInt32
    {
        guard path.hasPrefix("/"), path.utf8.count <= Int(PATH_MAX) else {
            throw .invalidArgs("'\(path.prefix(256))' is not an absolute path: the service's working directory is not the caller's")
        }
        return try playPattern("pattern \(path)", options: options, message: message, bus: bus) { () throws(HapticPatternError) in
            try HapticPattern(fileAt: path)
        }
    }

    /// `PlayPatternFD`: the pattern read from `descriptor` (a regular file, from its start,
    /// whatever the caller's offset) as one play; its sound files must be named by absolute paths.
    private func playPattern(descriptor: Int32, options: PlayOptions, message: BusMessage, bus: BusContext) throws(BusError)
        -> UInt32
    {
        guard let size = try? System.regularFileSize(descriptor) else {
            throw .invalidArgs("the file descriptor is not a regular file")
        }
        guard size <= HapticPattern.Limits.fileSize else {
            throw BusError(
                name: SystemSounds1.ErrorName.badSound,
                message: "the pattern has \(size) bytes, more than \(HapticPattern.Limits.fileSize)")
        }
        let name = "the pattern passed by descriptor"
        return try playPattern("pattern by descriptor", options: options, message: message, bus: bus) { () throws(HapticPatternError) in
            let bytes: [UInt8]?
            do throws(FileError) {
                bytes = try AtomicFile.read("/proc/self/fd/\(descriptor)", limit: HapticPattern.Limits.fileSize)
            } catch {
                throw HapticPatternError(path: name, problem: error.description, fileError: error)
            }
            return try HapticPattern(bytes: bytes ?? [], path: name, directory: nil)
        }
    }

    /// A pattern `read` gives, as one play: refused before anything starts when it cannot be
    /// read, a sound of it cannot be played, or it only vibrates and there is no vibrator.
    private func playPattern(
        _ what: String, options: PlayOptions, message: BusMessage, bus: BusContext,
        read: () throws(HapticPatternError) -> HapticPattern
    ) throws(BusError) -> UInt32 {
        try takeToken(message.sender)
        let resolved: ResolvedHapticPattern
        do {
            resolved = try manager.resolve(try read(), maximumDecodedSeconds: SoundDecoder.systemSoundDurationLimit)
        } catch let error as HapticPatternError {
            throw Self.refusal(.pattern(error))
        } catch let error as FeedbackError {
            throw Self.refusal(error)
        } catch {
            throw .failed("\(error)")
        }
        for note in resolved.notes { log("\(what) (client \(message.sender)): \(note)") }
        if resolved.type == .vibrateOnly {
            do {
                try manager.prepareVibrator()
            } catch {
                throw BusError(name: SystemSounds1.ErrorName.noVibrator, message: "no vibrator: \(error)")
            }
        }
        let client = message.sender
        return try start(what, options: options, message: message, bus: bus) { [self] completion in
            manager.play(
                resolved, options: options.playback, delivery: .immediate,
                report: { [self] problem in log("\(what) (client \(client)): \(problem)") }, completion: completion)
        }
    }

    /// Takes one of `client`'s play tokens (the rate limit), or refuses.
    private func takeToken(_ client: String) throws(BusError) {
        let now = MonotonicClock.now
        do throws(SessionRefusal) {
            try state.withLock { state throws(SessionRefusal) in try state.plays.takeToken(client, now: now) }
        } catch {
            throw sessionRefusal(error, client: client)
        }
    }

    /// A refusal of `client`'s request as the reply says it.
    private func sessionRefusal(_ refusal: SessionRefusal, client: String) -> BusError {
        refusal.busError(client: client, limits: limits.sessions, wording: Self.sessionWording)
    }

    /// Numbers a play of `what` for the caller within the limits, and starts it with `begin`, which
    /// hands the manager's result to the completion it is given (its one `PlayEnded`).
    private func start(
        _ what: String, options: PlayOptions, message: BusMessage, bus: BusContext,
        _ begin: (@escaping @Sendable (FeedbackResult) -> Void) -> FeedbackPlayback
    ) throws(BusError) -> UInt32 {
        let client = message.sender
        let id: UInt32
        do throws(SessionRefusal) {
            // The play's token was taken when its sound was looked up (`takeToken`).
            id = try state.withLock { state throws(SessionRefusal) in
                try state.plays.open(Play(what: what), client: client, endsByItself: true, token: .alreadyTaken)
            }
        } catch {
            throw sessionRefusal(error, client: client)
        }
        let connection = bus.connection
        let playback = begin { [self] result in
            connection.perform { [self] bus in ended(id, result: result, bus: bus) }
        }
        // The user is asked of the bus (a round trip) after the play has started, so that it does
        // not delay it; the play cannot end meanwhile, as its end comes on this (the bus) thread.
        let detached = options.detached.map { (group: $0, uid: message.senderUID) }
        state.withLock { state in
            state.plays[id]?.playback = playback
            state.plays[id]?.detached = detached
        }
        return id
    }

    /// A lookup's failure as the reply says it.
    static func refusal(_ error: FeedbackError) -> BusError {
        switch error {
        case .catalog, .theme, .invalidName:
            return BusError(name: SystemSounds1.ErrorName.noSuchSound, message: error.description)
        case .registry(let registryError):
            if case .unknownSoundID = registryError.reason {
                return BusError(name: SystemSounds1.ErrorName.noSuchSound, message: error.description)
            }
            return BusError(name: SystemSounds1.ErrorName.badSound, message: error.description)
        case .sound, .pattern:
            return BusError(name: SystemSounds1.ErrorName.badSound, message: error.description)
        case .playback, .haptics:
            return .failed(error.description)
        }
    }

    private func stop(_ play: UInt32, client: String) throws(BusError) {
        let playback = try state.withLock { state throws(BusError) -> FeedbackPlayback? in
            // A play that already ended is not an error: a Stop may cross its PlayEnded.
            guard let running = state.plays[play] else { return nil }
            guard state.plays.client(of: play) == client else { throw .accessDenied("play \(play) belongs to another client") }
            guard running.stopReason == nil else { return nil }
            state.plays[play]?.stopReason = SystemSounds1.Why.stopCalled
            return running.playback
        }
        playback?.stop()
    }

    private func stopAll(client: String) -> UInt32 {
        let playbacks = state.withLock { state in
            var playbacks: [FeedbackPlayback] = []
            for (id, session) in state.plays.plays(of: client) where session.play.stopReason == nil {
                state.plays[id]?.stopReason = SystemSounds1.Why.stopCalled
                if let playback = session.play.playback { playbacks.append(playback) }
            }
            return playbacks
        }
        for playback in playbacks { playback.stop() }
        return UInt32(playbacks.count)
    }

    /// `StopDetached`: stops `group`'s detached plays that user `uid` started, and answers `reply`
    /// once every one of them has ended (those another stop had already asked to end included).
    private func stopDetached(_ group: String, uid: UInt32, reply: PendingReply) {
        let (playbacks, answer) = state.withLock { state -> ([FeedbackPlayback], [BusValue]?) in
            var stop = DetachedStop(waiting: [], stopped: [], reply: reply)
            var playbacks: [FeedbackPlayback] = []
            for (id, play) in state.plays.sessions.mapValues(\.play).sorted(by: { $0.key < $1.key })
            where play.detached?.group == group && play.detached?.uid == uid {
                stop.waiting.insert(id)
                guard play.stopReason == nil else { continue }
                state.plays[id]?.stopReason = SystemSounds1.Why.stopCalled
                stop.stopped.append([.uint32(id), .string(play.what)])
                if let playback = play.playback { playbacks.append(playback) }
            }
            if stop.waiting.isEmpty { return ([], [Self.stoppedList(stop.stopped)]) }
            state.detachedStops.append(stop)
            return (playbacks, nil)
        }
        if let answer { reply.send(.success(answer)) }
        for playback in playbacks { playback.stop() }
    }

    private static func stoppedList(_ rows: [[BusValue]]) -> BusValue { .structures(signature: "us", rows) }

    /// The manager's result for `play`, on the bus thread: its one `PlayEnded`.
    private func ended(_ play: UInt32, result: FeedbackResult, bus: BusContext) {
        // Nil: the service stopping reported it already.
        let (removed, answered) = state.withLock { state -> (ClientSessions<Play>.Session?, [DetachedStop]) in
            guard let removed = state.plays.remove(play) else { return (nil, []) }
            for index in state.detachedStops.indices { state.detachedStops[index].waiting.remove(play) }
            let answered = state.detachedStops.filter(\.waiting.isEmpty)
            state.detachedStops.removeAll { $0.waiting.isEmpty }
            return (removed, answered)
        }
        for stop in answered { stop.reply.send(.success([Self.stoppedList(stop.stopped)])) }
        guard let ended = removed else { return }
        let (how, why) = Self.outcome(result, stopReason: ended.play.stopReason)
        if how == .failed { log("play \(play) of \(ended.play.what) (client \(ended.client)) failed: \(why)") }
        if ended.clientGone { return }
        emitEnded(play, how: how, why: why, to: ended.client, bus: bus)
    }

    /// `PlayEnded`'s `how` and `why` for a result.
    static func outcome(_ result: FeedbackResult, stopReason: String?) -> (how: SystemSounds1.How, why: String) {
        switch result.sound {
        case .noAudioOutput(let error): return (.failed, "\(SystemSounds1.Why.noAudioOutput): \(error)")
        case .failed(.playback(let error)) where error.endedAPlayInProgress:
            return (.failed, "\(SystemSounds1.Why.brokeOff): \(error)")
        case .failed(let error): return (.failed, "\(SystemSounds1.Why.error): \(error)")
        case .stopped: return (.stopped, stopReason ?? SystemSounds1.Why.stopCalled)
        case .played: break
        case .silencedByProfile(let profile):
            if !result.vibration.didVibrate { return (.finished, "\(SystemSounds1.Why.silenced): profile \(profile.rawValue)") }
        case .disabledByTheme: return (.finished, SystemSounds1.Why.disabled)
        case .notRequested: break
        }
        switch result.vibration {
        case .stopped where result.sound == .notRequested: return (.stopped, stopReason ?? SystemSounds1.Why.stopCalled)
        case .noVibrator(let error) where result.sound == .notRequested:
            return (.failed, "\(SystemSounds1.Why.noVibrator): \(error)")
        case .failed(let error) where result.sound == .notRequested: return (.failed, "\(SystemSounds1.Why.error): \(error)")
        case .silencedByProfile(let profile) where result.sound == .notRequested:
            return (.finished, "\(SystemSounds1.Why.silenced): profile \(profile.rawValue)")
        case .vibrated where result.sound == .notRequested: return (.finished, SystemSounds1.Why.vibrated)
        // Neither part (a pattern of lights alone), stopped: its lights were.
        case .notRequested where result.sound == .notRequested && stopReason != nil: return (.stopped, stopReason!)
        default: return (.finished, SystemSounds1.Why.played)
        }
    }

    private func emitEnded(_ play: UInt32, how: SystemSounds1.How, why: String, to client: String, bus: BusContext) {
        do {
            try bus.emitSignal(
                path: SystemSounds1.objectPath, interface: SystemSounds1.interface, member: "PlayEnded", destination: client,
                [.uint32(play), .string(how.rawValue), .string(why)])
        } catch {
            log("cannot send PlayEnded for play \(play) to \(client): \(error)")
        }
    }

    // MARK: - Sounds

    private func register(path: String) throws(BusError) -> UInt32 {
        guard path.hasPrefix("/") else {
            throw .invalidArgs("'\(path.prefix(256))' is relative: the service's working directory is not the caller's")
        }
        guard let file = manager.registry.persistentRegistry else {
            throw .failed("the service has no persistent registry (neither XDG_DATA_HOME nor HOME is set)")
        }
        do {
            return try file.register(fileAt: path, decoder: manager.registry.decoder).id
        } catch {
            throw Self.refusal(.registry(error))
        }
    }

    private func register(descriptor: Int32, name: String, client: String) throws(BusError) -> UInt32 {
        guard name.utf8.count <= RequestBounds.maximumNameLength else {
            throw .invalidArgs("a name has at most \(RequestBounds.maximumNameLength) bytes")
        }
        guard let fileSize = try? System.regularFileSize(descriptor) else {
            throw .invalidArgs("the file descriptor is not a regular file")
        }
        guard fileSize <= limits.fileBytes else {
            throw .limitsExceeded("file bytes: the file has \(fileSize) bytes, more than \(limits.fileBytes)")
        }
        let (count, bytes) = clientSounds(client)
        guard count < limits.soundsPerClient else {
            throw .limitsExceeded("sounds per client: client \(client) has \(count) registered, the most one client may have")
        }
        guard bytes < limits.bytesPerClient else {
            throw .limitsExceeded("bytes per client: client \(client) holds \(bytes) bytes, the most one client may hold")
        }
        // The descriptor, opened again: the decoder checks it and reads it from its start, whatever
        // the caller's file offset.
        let id: SystemSoundID
        do {
            id = try manager.registry.register(fileAt: "/proc/self/fd/\(descriptor)")
        } catch {
            throw Self.refusal(.registry(error))
        }
        let size = (manager.registry.sound(id)?.byteCount) ?? 0
        let admitted = state.withLock { state in
            let held = state.sounds.values.lazy.filter { $0.client == client }.map(\.bytes).reduce(0, +)
            guard held + size <= limits.bytesPerClient, !state.plays.isStopping else { return false }
            state.sounds[id] = ClientSound(client: client, name: name, bytes: size)
            return true
        }
        guard admitted else {
            try? manager.registry.dispose(id)
            throw .limitsExceeded(
                "bytes per client: client \(client) would hold \(bytes + size) bytes, more than \(limits.bytesPerClient)")
        }
        return id
    }

    /// How many `RegisterFD` sounds `client` has, and their bytes.
    private func clientSounds(_ client: String) -> (count: Int, bytes: Int) {
        state.withLock { state in
            let own = state.sounds.values.filter { $0.client == client }
            return (own.count, own.map(\.bytes).reduce(0, +))
        }
    }

    /// Checks that `id` is a sound `client` may change: its own, or the persistent registry's.
    private func checkOwner(_ id: SystemSoundID, client: String) throws(BusError) {
        switch SoundIDRange(id) {
        case .service:
            guard let owner = state.withLock({ $0.sounds[id]?.client }) else {
                throw BusError(name: SystemSounds1.ErrorName.noSuchSound, message: "no sound \(id) is registered with this service")
            }
            guard owner == client else { throw .accessDenied("sound \(id) belongs to another client") }
        case .persistent:
            return
        default:
            throw .invalidArgs("\(id) is not a registered sound ID (\(SoundIDRange(id)))")
        }
    }

    private func unregister(_ id: SystemSoundID, client: String) throws(BusError) {
        try checkOwner(id, client: client)
        if SoundIDRange(id) == .service {
            state.withLock { _ = $0.sounds.removeValue(forKey: id) }
            try? manager.registry.dispose(id)
            return
        }
        guard let file = manager.registry.persistentRegistry else {
            throw BusError(name: SystemSounds1.ErrorName.noSuchSound, message: "the service has no persistent registry")
        }
        do {
            try file.unregister(id)
        } catch {
            throw Self.refusal(.registry(error))
        }
    }

    private func setVolume(_ level: Double, for id: SystemSoundID, client: String) throws(BusError) {
        guard VolumeLimit.range.contains(Float(level)) else {
            throw .invalidArgs("level \(level): from 0 to \(VolumeLimit.maximum)")
        }
        try checkOwner(id, client: client)
        do {
            try manager.setVolume(Float(level), for: id)
        } catch {
            throw Self.refusal(.registry(error))
        }
    }

    private func listSounds(client: String) throws(BusError) -> BusValue {
        var rows: [[BusValue]] = []
        if let file = manager.registry.persistentRegistry {
            do {
                for sound in try file.sounds() {
                    rows.append([.uint32(sound.id), .string(sound.path), .double(sound.duration)])
                }
            } catch {
                throw Self.refusal(.registry(error))
            }
        }
        let own = state.withLock { $0.sounds.filter { $0.value.client == client } }
        for (id, sound) in own.sorted(by: { $0.key < $1.key }) {
            let duration = manager.registry.sound(id)?.duration ?? 0
            rows.append([.uint32(id), .string(sound.name), .double(duration)])
        }
        return .structures(signature: "usd", rows)
    }

    // MARK: - Clients and stopping

    /// A client left: its own sounds are disposed (a play of one keeps its samples to its end), and
    /// its plays end unannounced, as no one is left to tell. They play on (`ClientLeftPolicy.letRun`):
    /// every play is one sound of at most 30 s, and a fire-and-forget caller such as `gdbus call`
    /// leaves at once.
    private func clientLeft(_ client: String) {
        let sounds = state.withLock { state in
            _ = state.plays.clientLeft(client)
            let sounds = state.sounds.filter { $0.value.client == client }.map(\.key)
            for id in sounds { state.sounds[id] = nil }
            return sounds
        }
        for id in sounds { try? manager.registry.dispose(id) }
    }

    /// Stops every play and sends each one's `PlayEnded` (stopped, `service-stopping`) now, before
    /// the name is released; later requests are refused, and a later stop does nothing.
    package func stop(bus: BusContext) {
        let stopping = state.withLock { state in
            state.plays.beginStopping().map { _ in
                defer { state.detachedStops.removeAll() }
                return (plays: state.plays.removeAll(), detachedStops: state.detachedStops)
            }
        }
        guard let (plays, detachedStops) = stopping else { return }
        for stop in detachedStops { stop.reply.send(.success([Self.stoppedList(stop.stopped)])) }
        for (id, session) in plays {
            session.play.playback?.stop()
            if session.clientGone { continue }
            emitEnded(id, how: .stopped, why: SystemSounds1.Why.serviceStopping, to: session.client, bus: bus)
        }
    }
}
