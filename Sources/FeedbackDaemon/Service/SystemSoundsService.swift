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
/// This type is the interface's adapter: it decodes the calls, looks their sounds and patterns up
/// and checks them, and encodes the replies, the properties and `PlayEnded`. The plays run in a
/// `SystemSoundPlays` (numbered within the limits, stopped, ended once); the sounds clients
/// register are kept by `ClientSounds`.
///
/// Thread safety: the bus thread calls the handler methods (registering decodes on a thread of its
/// own); the plays and the sounds are each behind a lock, and the manager's completions are
/// handed to the bus thread, so signals go out in order there.
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

    /// Where every play goes; its registry gives `RegisterFD` sounds their service-range IDs.
    package let manager: FeedbackManager
    /// The limits in force.
    package let limits: Limits
    private let log: @Sendable (String) -> Void
    /// The `NotificationSounds` property: the notification server seen and who plays the sounds
    /// notifications ask for (`NotificationBridge`).
    private let notificationSounds: @Sendable () -> String

    /// The plays, as they run.
    private let plays: SystemSoundPlays
    /// The sounds clients registered.
    private let sounds: ClientSounds

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
        let plays = SystemSoundPlays(limits: limits.sessions, log: log) { play, how, why, client, bus in
            Self.emitEnded(play, how: how, why: why, to: client, bus: bus, log: log)
        }
        self.plays = plays
        sounds = ClientSounds(manager: manager, limits: limits, isStopping: { plays.isStopping })
    }

    /// Serves the interface on `bus` and follows clients leaving the bus.
    package func export(on bus: BusContext) throws(BusError) {
        try bus.export(path: SystemSounds1.objectPath, interface: SystemSounds1.interface, members: Self.members, handler: self)
        try bus.onClientLeft { [plays, sounds] name, _ in
            plays.clientLeft(name)
            sounds.clientLeft(name)
        }
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
            try plays.stop(try message.readUInt32(), client: client)
            return []
        case "StopAll":
            return [.uint32(plays.stopAll(client: client))]
        case "StopDetached":
            let group = try message.readString()
            guard let uid = message.senderUID else {
                throw .accessDenied("the bus does not say which user the caller is")
            }
            try plays.stopDetached(group, uid: uid, reply: { bus.answerLater(message) })
            return []
        // Registering decodes (up to 30 s of audio): off the bus thread, so that other clients'
        // feedback is not held up meanwhile.
        case "Register":
            let path = try message.readString()
            let reply = bus.answerLater(message)
            // A thread of its own, not a Dispatch worker: that would start libdispatch's 1 Hz
            // workqueue monitor for the rest of the process (see `Delivery`).
            startDetachedThread(name: "register") { [sounds] in
                reply.send(Result { () throws(BusError) in [.uint32(try sounds.register(path: path))] })
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
            startDetachedThread(name: "register") { [sounds] in
                defer { close(descriptor) }
                reply.send(
                    Result { () throws(BusError) in [.uint32(try sounds.register(descriptor: descriptor, name: name, client: client))] })
            }
            return []
        case "Unregister":
            try sounds.unregister(try message.readUInt32(), client: client)
            return []
        case "SetVolume":
            let id = try message.readUInt32()
            guard case .double(let level) = try message.readBasic("d") else { throw .invalidArgs("level: a double") }
            try sounds.setVolume(level, for: id, client: client)
            return []
        case "ListSounds":
            return [try sounds.list(client: client)]
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
            guard let owner = sounds.owner(of: id) else {
                throw BusError(name: SystemSounds1.ErrorName.noSuchSound, message: "no sound \(id) is registered with this service")
            }
            guard owner == client else { throw .accessDenied("sound \(id) belongs to another client") }
        }
        if case .id(let id) = alert, SoundIDRange(id) == .processLocal {
            throw BusError(
                name: SystemSounds1.ErrorName.noSuchSound,
                message: "\(id) is a process-local sound ID (\(SoundIDRange.processLocal)): only its own process can play it")
        }
        try plays.takeToken(client)
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
        try plays.takeToken(message.sender)
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
        try plays.takeToken(message.sender)
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

    /// Starts a play of `what` for the caller (its token taken already, when its sound was looked
    /// up) with `begin`, which hands the manager's result to the completion it is given (its one
    /// `PlayEnded`).
    private func start(
        _ what: String, options: PlayOptions, message: BusMessage, bus: BusContext,
        _ begin: (@escaping @Sendable (FeedbackResult) -> Void) -> FeedbackPlayback
    ) throws(BusError) -> UInt32 {
        try plays.start(what, client: message.sender, detached: options.detached, user: { message.senderUID }, bus: bus, begin)
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

    /// Sends `PlayEnded(play, how, why)` to `client` alone; a failure to send is logged.
    private static func emitEnded(
        _ play: UInt32, how: SystemSounds1.How, why: String, to client: String, bus: BusContext,
        log: @Sendable (String) -> Void
    ) {
        do {
            try bus.emitSignal(
                path: SystemSounds1.objectPath, interface: SystemSounds1.interface, member: "PlayEnded", destination: client,
                [.uint32(play), .string(how.rawValue), .string(why)])
        } catch {
            log("cannot send PlayEnded for play \(play) to \(client): \(error)")
        }
    }

    // MARK: - Stopping

    /// Stops every play and sends each one's `PlayEnded` (stopped, `service-stopping`) now, before
    /// the name is released; later requests are refused, and a later stop does nothing.
    package func stop(bus: BusContext) {
        plays.stop(bus: bus)
    }
}
