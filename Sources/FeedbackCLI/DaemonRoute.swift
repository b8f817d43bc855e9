import FeedbackBus
import FeedbackServices
import Glibc

/// feedbackctl as a client of feedbackservicesd (`org.feedbackservices.SystemSounds1`): when the
/// service runs, `fire` asks it to play, so the sound starts on its already-open stream from its
/// already-decoded sounds, and `vibrate` asks it to vibrate on the vibrator it holds open; when it
/// does not, the command plays in this process. A `--no-wait` play is a detached one of
/// the group `feedbackctl` (`detachedGroup`), which `feedbackctl stop` ends with `StopDetached`.
///
/// Finding out costs as little as it can: with no session bus (`DBUS_SESSION_BUS_ADDRESS` unset and
/// no `$XDG_RUNTIME_DIR/bus` socket), or no living process in the service's PID file, nothing is
/// tried; otherwise the play itself is the probe — a call without activation, so a service that is
/// not running is not started, and its `ServiceUnknown` answer sends the command to the in-process
/// route. `--no-daemon` or
/// `FEEDBACKCTL_NO_DAEMON=1` force the in-process route.
///
/// What the service refuses, or fails before its play started (no such sound, no sound server), is
/// played in process instead, so that the output and exit code are the ones the command always
/// gave. A play that started and broke off (`broke-off`: the server went away mid-play) is
/// reported as the command's failure, never played again: part of it may have been heard.
struct DaemonRoute {
    /// `--no-daemon`.
    static let noDaemon = Option(
        "--no-daemon",
        help: """
            Play in this process even when feedbackservicesd runs
            (also FEEDBACKCTL_NO_DAEMON=1)
            """)
    /// The environment variable that forces the in-process route.
    static let environmentVariable = "FEEDBACKCTL_NO_DAEMON"
    /// The `detached` group of the plays `--no-wait` leaves to the service.
    static let detachedGroup = "feedbackctl"

    let client: BusClient

    /// A connection to the session bus `environment` names; nil when there is none, or when the
    /// service's PID file (`SystemSounds1.pidFile`) names no living process: then the service does
    /// not run, and connecting to the bus (a few milliseconds) would only say so.
    init?(environment: [String: String]) {
        guard Self.serviceMayRun(environment: environment),
            let address = BusClient.sessionAddress(environment: environment),
            let client = try? BusClient(address: address)
        else { return nil }
        self.client = client
    }

    /// Whether the PID file names a process that exists (it may be another one, reusing the PID of
    /// a service that was killed: the bus call then finds no service, at the cost of a connection).
    static func serviceMayRun(environment: [String: String]) -> Bool {
        guard let path = SystemSounds1.pidFile(environment: environment),
            let bytes = try? AtomicFile.read(path, limit: 32),
            let pid = Int32(String(decoding: bytes, as: UTF8.self).filter(\.isNumber)), pid > 0
        else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// Whether a command may ask the service to play or to take a profile: not with `--no-daemon` (`forcedOff`) or
    /// `FEEDBACKCTL_NO_DAEMON`, nor with `FEEDBACKSERVICES_PROFILE` in the command's environment,
    /// which the service could not honour.
    static func mayUse(environment: [String: String], forcedOff: Bool) -> Bool {
        !forcedOff && (environment[environmentVariable] ?? "").isEmpty
            && environment[FeedbackSettings.environmentVariable] == nil
    }

    /// A play the service started.
    struct Play {
        let id: UInt32
        /// The service's unique name: when it leaves, the play has ended with it.
        let service: String
    }

    /// How a play through the service ended.
    enum End {
        /// Played to the end, or the profile or the theme allowed nothing: `fire`'s result name
        /// (`finished`, `silenced`, `disabled`).
        case finished(String)
        /// Stopped by another (the service stopping).
        case stopped
        /// It did not start: the command plays it in process, to report why as it always has.
        case failed
        /// It started and broke off; the service's explanation. The command fails with it.
        case brokeOff(String)
    }

    /// Asks the service to play `alert` (sound only) at `volume`, as a detached play when
    /// `detached` (`--no-wait`); nil when it does not run or refused (then the command takes the
    /// in-process route).
    func play(_ alert: AlertSound, volume: Float, detached: Bool) -> Play? {
        var options: [String: BusValue] = volume == 1 ? [:] : ["volume": .double(Double(volume))]
        if detached { options["detached"] = .string(Self.detachedGroup) }
        switch alert {
        case .id(let id): return start("Play", [.uint32(id), .dictionary(options)])
        case .event(let name): return start("PlayEvent", [.string(name), .dictionary(options)])
        case .file: return nil
        }
    }

    /// Asks the service to vibrate `pattern` with every step's strength scaled by `intensity`, as
    /// a detached play when `detached`; nil when it does not run or refused: no vibrator it can
    /// open, or a pattern over `Vibrate`'s bounds (64 steps, 10 s a step, 60 s in all: the
    /// service's to say, so they are written down once), and a pattern `Vibrate` cannot express
    /// (a repeat, a periodic waveform: `feedbackctl vibrate` makes neither).
    func vibrate(_ pattern: VibrationPattern, intensity: Double, detached: Bool) -> Play? {
        guard pattern.repeatIndex == nil, pattern.steps.allSatisfy({ $0.periodic == nil }) else { return nil }
        // The engine scales every step by its maximum strength; the service's is 1, so the
        // strength sent is what this process's engine would render.
        let steps = pattern.steps.map { step -> [BusValue] in
            [.double(step.intensity * intensity), .uint32(UInt32(step.duration))]
        }
        let options: [String: BusValue] = detached ? ["detached": .string(Self.detachedGroup)] : [:]
        return start("Vibrate", [.structures(signature: "du", steps), .dictionary(options)])
    }

    private func start(_ member: String, _ values: [BusValue]) -> Play? {
        do {
            let reply = try client.call(
                SystemSounds1.busName, path: SystemSounds1.objectPath, interface: SystemSounds1.interface,
                member: member, values)
            let play = Play(id: try reply.readUInt32(), service: reply.sender)
            try client.watchDeparture(of: play.service)
            return play
        } catch {
            return nil
        }
    }

    /// What the service plays for an alert (`Describe`, `DescribeEvent`): what `fire --json`
    /// reports of it.
    struct Description {
        /// The sound theme event it was found under.
        var event: String?
        /// Its file.
        var file: String?
        /// Its length in seconds.
        var duration: Double?
        /// `sound`, `disabled` (by the sound theme) or `vibration-only`.
        var content: String
    }

    /// What the service plays for `alert`; nil when it refused or did not answer.
    func describe(_ alert: AlertSound) -> Description? {
        let member: String
        let argument: BusValue
        switch alert {
        case .id(let id): (member, argument) = ("Describe", .uint32(id))
        case .event(let name): (member, argument) = ("DescribeEvent", .string(name))
        case .file: return nil
        }
        guard
            let reply = try? client.call(
                SystemSounds1.busName, path: SystemSounds1.objectPath, interface: SystemSounds1.interface,
                member: member, [argument]),
            let facts = try? reply.readVariantDictionary(limit: 16)
        else { return nil }
        var duration: Double?
        if case .double(let seconds) = facts["duration"] { duration = seconds }
        return Description(
            event: facts["event"]?.string, file: facts["file"]?.string, duration: duration,
            content: facts["content"]?.string ?? "sound")
    }

    /// Waits for `play`'s `PlayEnded`. Ctrl-C or SIGTERM stop it first (`Stop`), then end the
    /// command with 130 or 143, as an in-process play does.
    func wait(for play: Play) throws(CommandError) -> End {
        let matches = { (signal: BusSignal) -> Bool in
            if BusClient.isDeparture(signal, of: play.service) { return true }
            return signal.interface == SystemSounds1.interface && signal.member == "PlayEnded"
                && (try? signal.message.readUInt32()) == play.id
        }
        do {
            guard let ended = try client.waitForSignal(shouldStop: { Interruption.receivedSignal != nil }, matches: matches)
            else {
                _ = try? client.call(
                    SystemSounds1.busName, path: SystemSounds1.objectPath, interface: SystemSounds1.interface,
                    member: "Stop", [.uint32(play.id)])
                _ = try client.waitForSignal(shouldStop: { false }, matches: matches)
                try Interruption.check("interrupted; the sound or vibration was stopped")
                return .stopped
            }
            guard ended.interface == SystemSounds1.interface else {
                throw CommandError(message: "feedbackservicesd left the bus while it played", exitCode: .unavailable)
            }
            let how = SystemSounds1.How(rawValue: try ended.message.readString())
            let why = try ended.message.readString()
            let word = why.prefix { $0 != ":" }
            switch how {
            case .finished:
                switch word {
                case SystemSounds1.Why.silenced: return .finished("silenced")
                case SystemSounds1.Why.disabled: return .finished("disabled")
                default: return .finished("finished")
                }
            case .stopped: return .stopped
            case .failed where word == SystemSounds1.Why.brokeOff:
                return .brokeOff(String(why.dropFirst(word.count + 1).drop { $0 == " " }))
            case .failed, nil: return .failed
            }
        } catch let error as BusError {
            throw CommandError(message: "lost the session bus while it played: \(error.message)", exitCode: .unavailable)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError(message: "\(error)", exitCode: .software)
        }
    }

    /// Stops the plays `--no-wait` left to the service (`StopDetached` of `detachedGroup`: the
    /// service stops only those of this user) and waits up to `timeout` seconds for them to end.
    /// - Returns: each as a player of the service's process; none when the service does not run;
    ///   nil when they did not end in time.
    /// - Throws: `CommandError` (69) when the service refused.
    func stopDetached(timeout: Double) throws(CommandError) -> [ActivePlayers.Player]? {
        let reply: BusMessage
        do {
            reply = try client.call(
                SystemSounds1.busName, path: SystemSounds1.objectPath, interface: SystemSounds1.interface,
                member: "StopDetached", [.string(Self.detachedGroup)], timeout: timeout)
        } catch {
            switch error.name {
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner": return []
            case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout": return nil
            default:
                throw CommandError(message: "feedbackservicesd could not stop its plays: \(error.message)", exitCode: .unavailable)
            }
        }
        let stopped = (try? reply.readStructures(signature: "us")) ?? []
        let pid = client.ownerPID(of: reply.sender) ?? 0
        return stopped.compactMap { row in
            guard row.count == 2, case .string(let what) = row[1] else { return nil }
            return ActivePlayers.Player(pid: pid, what: "feedbackservicesd: \(what)")
        }
    }

    /// What `feedbackctl devices` shows of the service.
    struct State: Encodable {
        let running: Bool
        @Nullable var pid: Int32?
        @Nullable var profile: String?
        @Nullable var theme: String?
        @Nullable var output: String?
        /// The notification server the service sees, and who plays the sounds notifications ask for.
        @Nullable var notifications: String?
    }

    /// The service's state: whether it runs on the session bus, its process, and its properties
    /// (read without starting it).
    func state() -> State {
        guard let pid = client.ownerPID(of: SystemSounds1.busName) else { return State(running: false) }
        func property(_ name: String) -> String? {
            try? client.property(
                SystemSounds1.busName, path: SystemSounds1.objectPath, interface: SystemSounds1.interface, name: name
            ).string
        }
        return State(
            running: true, pid: pid, profile: property("Profile"), theme: property("SoundTheme"), output: property("AudioOutput"),
            notifications: property("NotificationSounds"))
    }

    /// Hands a profile just stored to the service, if it runs, through feedbackd's `Profile`
    /// property: it stores the same value and sends `PropertiesChanged` to the programs that watch
    /// it. A service that refuses (its environment fixes the profile) changes nothing here: the
    /// file is what the command stores.
    func announce(_ profile: FeedbackProfile) {
        guard client.ownerPID(of: SystemSounds1.busName) != nil else { return }
        _ = try? client.setProperty(
            "org.sigxcpu.Feedback", path: "/org/sigxcpu/Feedback", interface: "org.sigxcpu.Feedback", name: "Profile",
            to: .string(profile.rawValue))
    }
}
