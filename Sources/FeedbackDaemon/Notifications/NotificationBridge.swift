import FeedbackBus
import FeedbackServices
import Glibc
import Synchronization

/// Plays the sound a desktop notification asks for, where the notification server that shows it
/// plays none (mako, dunst, swaync, fnott and most servers outside GNOME and KDE).
///
/// **Seeing notifications.** A connection of its own becomes a bus monitor (`BusMonitor`) of the
/// `Notify` calls to `org.freedesktop.Notifications`, the replies and errors the name's owner
/// sends, and the name's `NameOwnerChanged`. A new notification (`replaces_id` 0) chimes at its
/// call, so the sound does not wait for a server that draws before it answers, and an error
/// answer stops it; an update (`replaces_id` set) waits for the answer, which says whether it
/// replaced a notification still shown (the same id: no chime) or made a new one. A monitor the
/// bus dropped (it fell behind) is connected again. A notification's summary and body are never read.
///
/// **Who plays.** When the name's owner changes, the server is asked (`GetCapabilities`,
/// `GetServerInformation`, on a second connection, never auto-starting one): it plays its own
/// sounds when it advertises `sound`, is one known to (GNOME Shell, KDE Plasma), is named in
/// `notification-sounding-servers`, or its connection calls our `TriggerFeedback` (Phosh). The
/// settings file's `notification-sounds` (`auto`, the default; `on`; `off`) decides with that
/// (`NotificationSoundSettings`). The log says, at each owner change, who plays.
///
/// **What plays**, and what it obeys: `NotificationRules` (suppress-sound, sound-file, sound-name,
/// updates, on-screen displays, bursts), then the server's do-not-disturb (dunst's `paused`;
/// swaync's do-not-disturb or inhibition, which a critical notification passes), the profile, the
/// app's level (feedbackd's per-app setting, keyed on `desktop-entry`) and the desktop's
/// `event-sounds` switch. A `sound-file` must be an absolute path to a regular file of at most
/// `FeedbackRunner.maximumSoundFileSize` bytes, not a symbolic link; from a sandboxed sender
/// (its process sees another root: a Flatpak app given the bus name directly) the path names a
/// file inside the sandbox, so it is not played, and its `sound-name`, if any, is. Each
/// notification that plays nothing gets a log line saying why (at most `LogBudget.lines` in
/// `LogBudget.window` seconds).
///
/// Thread safety: the work runs on the "notifications" thread; `stop` may be called from any
/// thread; the status is behind a Mutex.
final class NotificationBridge: Sendable {
    /// The name notification servers own.
    static let notificationsName = "org.freedesktop.Notifications"
    static let notificationsPath = "/org/freedesktop/Notifications"
    /// A `Notify` whose reply has not come within this many seconds is forgotten.
    static let replyTimeout = 30.0
    /// The most `Notify` calls waiting for their reply.
    static let maximumPending = 256
    /// How long a question to the notification server may take.
    static let probeTimeout = 1.0

    private let service: FeedbackService
    private let address: String
    private let log: @Sendable (String) -> Void
    private let stopSignal: EventFD
    private let stopping = Atomic<Bool>(false)
    /// The server last seen, and whether it was looked for yet.
    private let current = Lock((server: NotificationServer(), seen: false))

    /// The monitor's match rules.
    static let matchRules = [
        "type='method_call',interface='\(notificationsName)',member='Notify'",
        "type='method_return',sender='\(notificationsName)'",
        "type='error',sender='\(notificationsName)'",
        "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(notificationsName)'",
        // dunst's `paused` and swaync's do-not-disturb, followed rather than asked at each
        // notification. (swaync owns its name on the connection that owns the notifications
        // name, so its signals match that name as sender.)
        "type='signal',sender='\(notificationsName)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='\(notificationsPath)',arg0='\(dunstInterface)'",
        "type='signal',sender='\(notificationsName)',interface='\(swayncInterface)',path='\(swayncPath)'",
    ]
    /// dunst's own interface, whose `paused` property is its do-not-disturb.
    static let dunstInterface = "org.dunstproject.cmd0"
    /// swaync's control-center interface and object: `GetDnd`, `IsInhibited` (0.8 and since), and
    /// the signals `Subscribe(u count, b dnd, b cc_open)` and `SubscribeV2(u count, b dnd, b
    /// cc_open, b inhibited)` at each change.
    static let swayncInterface = "org.erikreider.swaync.cc"
    static let swayncPath = "/org/erikreider/swaync/cc"

    /// A bridge on the bus at `address` for `service`; `start` starts it.
    init(service: FeedbackService, address: String, log: @escaping @Sendable (String) -> Void) throws(Errno) {
        self.service = service
        self.address = address
        self.log = log
        stopSignal = try EventFD()
    }

    /// Starts the "notifications" thread.
    func start() {
        startDetachedThread(name: "notifications") { [self] in run() }
    }

    /// Ends the thread's work soon (it wakes from its wait at once; a question to a hung server
    /// ends within `probeTimeout`).
    func stop() {
        stopping.store(true, ordering: .releasing)
        stopSignal.signal()
    }

    /// The notification server as last seen.
    var server: NotificationServer { current.withLock { $0.server } }

    /// The server seen, and who plays the sounds notifications ask for now, and why (as the
    /// log said at the owner's change); "" before the first look.
    var summary: String {
        let (server, seen) = current.withLock { $0 }
        return seen ? describe(server, settings: NotificationSoundSettings(values: service.manager.settings.fileValues)) : ""
    }

    private func run() {
        var rules = NotificationRules()
        var logBudget = LogBudget()
        var retry = 0.5
        while !stopping.load(ordering: .acquiring) {
            do throws(BusError) {
                let monitor = try BusMonitor(address: address, rules: Self.matchRules)
                let client = try BusClient(address: address)
                serverChanged(probe(client, owner: nil))
                retry = 0.5
                var pending = PendingNotifications()
                while !stopping.load(ordering: .acquiring) {
                    let wait = pending.oldest.map { max(0, $0 + Self.replyTimeout - MonotonicClock.now) }
                    guard let seen = try monitor.next(timeout: wait, stop: stopSignal.descriptor) else {
                        pending.expire(before: MonotonicClock.now - Self.replyTimeout)
                        continue
                    }
                    handle(seen, pending: &pending, rules: &rules, logBudget: &logBudget, client: client)
                }
            } catch {
                if stopping.load(ordering: .acquiring) { return }
                // A bus that will not be monitored (its policy, or no Monitoring interface) will not be later either.
                if ["org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.UnknownMethod",
                    "org.freedesktop.DBus.Error.UnknownInterface"].contains(error.name) {
                    log("notification sounds are not played: the session bus does not let this service monitor notifications (\(error.message))")
                    return
                }
                log("notification sounds: the bus monitor stopped (\(error.message)); connecting again in \(retry) s")
                var waiter = pollfd(fd: stopSignal.descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&waiter, 1, Int32(retry * 1000))
                retry = min(retry * 2, 30)
            }
        }
    }

    private func handle(
        _ seen: MonitoredMessage, pending: inout PendingNotifications, rules: inout NotificationRules,
        logBudget: inout LogBudget, client: BusClient
    ) {
        switch seen.kind {
        case .signal where seen.member == "NameOwnerChanged":
            guard (try? seen.message.readString()) == Self.notificationsName, (try? seen.message.readString()) != nil,
                let owner = try? seen.message.readString()
            else { return }
            serverChanged(owner.isEmpty ? NotificationServer() : probe(client, owner: owner))
        case .signal where seen.member == "PropertiesChanged":
            guard seen.sender == server.owner, (try? seen.message.readString()) == Self.dunstInterface,
                case .boolean(let paused)? = (try? seen.message.readVariantDictionary(limit: 64))?["paused"]
            else { return }
            current.withLock { $0.server.doNotDisturb = paused }
        case .signal where seen.interface == Self.swayncInterface && (seen.member == "Subscribe" || seen.member == "SubscribeV2"):
            // (u count, b dnd, b cc_open), and in SubscribeV2 then (b inhibited).
            guard seen.sender == server.owner, (try? seen.message.readUInt32()) != nil, let dnd = try? seen.message.readBoolean()
            else { return }
            var inhibited: Bool?
            if seen.member == "SubscribeV2", (try? seen.message.readBoolean()) != nil {
                inhibited = try? seen.message.readBoolean()
            }
            current.withLock { current in
                current.server.doNotDisturb = dnd
                if let inhibited { current.server.inhibited = inhibited }
            }
        case .methodCall where seen.member == "Notify" && seen.interface == Self.notificationsName:
            do {
                let request = try NotificationRequest(notify: seen.message)
                // A new notification chimes at its call, not after the server drew it and
                // answered (dunst answers in about 6 ms): stopped if the server refuses it.
                // An update waits for the answer, which says whether it replaced anything.
                let early = request.replacesID == 0 ? EarlySound() : nil
                // Asked now, while the sender waits for its answer: after it, a one-shot sender
                // (`notify-send -r`) may be gone.
                let sandbox = request.soundFile != nil && !request.suppressSound ? senderSandbox(seen.sender, client: client) : nil
                if let early {
                    consider(request, id: nil, sandbox: sandbox, early: early, rules: &rules, logBudget: &logBudget)
                }
                pending.insert(
                    .init(request: request, early: early, sandbox: sandbox), key: .init(sender: seen.sender, serial: seen.serial),
                    now: MonotonicClock.now)
            } catch {
                logBudget.log("a notification from \(seen.sender) is not read: \(error.message)", log)
            }
        case .methodReturn:
            guard seen.sender == server.owner,
                let call = pending.remove(.init(sender: seen.destination, serial: seen.replySerial)), call.early == nil,
                let id = try? seen.message.readUInt32()
            else { return }
            consider(call.request, id: id, sandbox: call.sandbox, early: nil, rules: &rules, logBudget: &logBudget)
        case .error:
            guard seen.sender == server.owner,
                let call = pending.remove(.init(sender: seen.destination, serial: seen.replySerial)), let early = call.early
            else { return }
            if early.refuse() {
                logBudget.log(
                    "a notification from '\(call.request.app)' was refused by the server (\(seen.errorName.isEmpty ? "an error" : seen.errorName)): its sound was stopped",
                    log)
            }
        default:
            return
        }
    }

    /// Plays the sound of `request`, if the rules give one: a new notification at its call (`id`
    /// nil; `early` stops it if the server refuses the notification), an update once the server
    /// accepted it as notification `id`. `sandbox` is the sandbox its sender runs in, if any, as
    /// seen at its call (nil: not sandboxed, or not asked).
    private func consider(
        _ request: NotificationRequest, id: UInt32?, sandbox: Int32?, early: EarlySound?, rules: inout NotificationRules,
        logBudget: inout LogBudget
    ) {
        let server = self.server
        let settings = NotificationSoundSettings(values: service.manager.settings.fileValues)
        let serverPlays = server.playsItself(settings, feedbackClient: service.hasTriggeredFeedback(server.owner))
        let named = id.map { "notification \($0)" } ?? "a notification"
        func quiet(_ reason: String) {
            logBudget.log("\(named) from '\(request.app)' plays no sound: \(reason)", log)
        }
        var sound: NotificationSound
        switch rules.decide(request, id: id ?? 0, now: MonotonicClock.now, settings: settings, serverPlays: serverPlays) {
        case .failure(let why): return quiet(why.reason)
        case .success(let chosen): sound = chosen
        }
        if let reason = server.doNotDisturbReason(urgency: request.urgency) { return quiet(reason) }
        var fd: Int32?
        if case .file(let path) = sound {
            switch openSoundFile(path, sandbox: sandbox) {
            case .success(let opened): fd = opened
            case .failure(let why):
                guard let name = request.soundName else { return quiet(why.reason) }
                logBudget.log("\(named) from '\(request.app)': \(why.reason); its sound-name \(name) plays", log)
                sound = .named(name)
            }
        }
        let alert: AlertSound =
            switch sound {
            case .file: .file("/proc/self/fd/\(fd ?? -1)")
            case .named(let name): .event(name)
            }
        let opened = fd
        early?.decided()
        withAppLevel(request.app) { [self] appLevel in
            let level = FeedbackRunner.level(profile: service.manager.profile, app: appLevel, hint: nil, important: false)
            let why: String? =
                level.allowsSound
                ? (service.eventSoundsOn ? nil : "event sounds are off in the desktop's settings (\(DesktopSoundSettings.schema) event-sounds)")
                : appLevel != .full && level == appLevel
                    ? "the app's own level is \(level.rawValue) (\(FeedbackdSettings.appSchema))"
                    : "the profile is \(level.rawValue)"
            if early?.isRefused == true {
                if let opened { close(opened) }
                return
            }
            if let why {
                if let opened { close(opened) }
                // On another thread than the budget's: said always, which a flood cannot reach
                // (the rules above keep one notification in a burst).
                log("\(named) from '\(request.app)' plays no sound: \(why)")
                return
            }
            let playback = service.manager.play(
                alert, type: .audioOnly, options: PlaybackOptions(), vibration: .systemVibrate, profile: .full,
                delivery: .immediate
            ) { [log] result in
                if let opened { close(opened) }
                switch result.sound {
                case .failed(let error): log("\(named) from '\(request.app)': its sound did not play: \(error)")
                case .noAudioOutput(let error): log("\(named) from '\(request.app)': no sound output: \(error)")
                default: break
                }
            }
            early?.started(playback)
        }
    }

    /// Runs `body` with the per-app level of `app`: at once where it is known or feedbackd's
    /// schema is not installed, else once it was read (on the app-levels thread).
    private func withAppLevel(_ app: String, _ body: @escaping @Sendable (FeedbackProfile) -> Void) {
        guard let appLevels = service.appLevels, service.feedbackdSettings.installed, !app.isEmpty else {
            return body(.full)
        }
        if let level = appLevels.levelNow(of: app) { return body(level) }
        if !appLevels.whenRead(app, then: body) { body(.full) }
    }

    /// Opens a notification's `sound-file` as `FeedbackRunner.openSoundFile` does, after checking
    /// it is absolute and that its sender is not sandboxed (`sandbox`: the sandboxed process).
    private func openSoundFile(_ path: String, sandbox: Int32?) -> Result<Int32, NotificationRules.Quiet> {
        guard path.hasPrefix("/") else { return .failure(.init("its sound-file is not an absolute path")) }
        if let pid = sandbox {
            return .failure(
                .init("it was sent from a sandbox (process \(pid)), where its sound-file names a file this service cannot see"))
        }
        do {
            return .success(try FeedbackRunner.openSoundFile(path))
        } catch {
            return .failure(.init("its sound-file is refused: \(error.message)"))
        }
    }

    /// The process behind bus name `sender` if it runs in a sandbox; nil if it does not, or is
    /// gone from the bus: a sender that did not wait for its answer cannot be examined, and its
    /// file is still only ever played, after every path check.
    private func senderSandbox(_ sender: String, client: BusClient) -> Int32? {
        guard let pid = client.ownerPID(of: sender), Self.isSandboxed(pid) else { return nil }
        return pid
    }

    /// Whether process `pid` sees another root directory than this one (a Flatpak sandbox).
    static func isSandboxed(_ pid: Int32) -> Bool {
        var theirs = stat()
        var ours = stat()
        guard stat("/proc/\(pid)/root/", &theirs) == 0, stat("/", &ours) == 0 else { return false }
        return theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino
    }

    /// Asks the owner of the notifications name (`owner`, or whoever owns it now) what it is.
    private func probe(_ client: BusClient, owner: String?) -> NotificationServer {
        let owner =
            owner
            ?? (try? client.call(
                "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetNameOwner",
                [.string(Self.notificationsName)], timeout: Self.probeTimeout
            ).readString()) ?? ""
        guard !owner.isEmpty else { return NotificationServer() }
        var server = NotificationServer(owner: owner)
        do throws(BusError) {
            server.capabilities = try client.call(
                owner, path: Self.notificationsPath, interface: Self.notificationsName, member: "GetCapabilities",
                timeout: Self.probeTimeout
            ).readStrings(limit: 64)
            let information = try client.call(
                owner, path: Self.notificationsPath, interface: Self.notificationsName, member: "GetServerInformation",
                timeout: Self.probeTimeout)
            server.name = String(try information.readString().prefix(128))
            server.vendor = String(try information.readString().prefix(128))
            server.version = String(try information.readString().prefix(128))
            if server.isDunst,
                case .boolean(let paused) = try client.property(
                    owner, path: Self.notificationsPath, interface: Self.dunstInterface, name: "paused")
            {
                server.doNotDisturb = paused
            }
            if server.isSwaync {
                // A server of that name without swaync's interface is still the server it said
                // it is: not in do not disturb. 0.7 has no inhibitors: its answer to IsInhibited
                // is an error, and nothing is inhibited.
                func ask(_ member: String) -> Bool {
                    (try? client.call(owner, path: Self.swayncPath, interface: Self.swayncInterface, member: member, timeout: Self.probeTimeout)
                        .readBoolean()) ?? false
                }
                server.doNotDisturb = ask("GetDnd")
                server.inhibited = ask("IsInhibited")
            }
        } catch {
            server.problem = error.message
        }
        return server
    }

    private func serverChanged(_ server: NotificationServer) {
        current.withLock { $0 = (server, true) }
        let settings = NotificationSoundSettings(values: service.manager.settings.fileValues)
        for problem in settings.problems { log("notification sounds: \(problem): the default applies") }
        log("notification sounds: \(describe(server, settings: settings))")
    }

    /// The server seen, and who plays the sounds notifications ask for under `settings`, and why.
    private func describe(_ server: NotificationServer, settings: NotificationSoundSettings) -> String {
        guard !server.owner.isEmpty else { return "no notification server runs (nobody owns \(Self.notificationsName))" }
        let who =
            server.problem.map { "a notification server at \(server.owner) that does not say what it is (\($0))" }
            ?? "notification server \(server.name) \(server.version) (\(server.vendor)) at \(server.owner), capabilities [\(server.capabilities.joined(separator: ", "))]\(server.doNotDisturb || server.inhibited ? ", in do not disturb" : "")"
        let verdict: String
        switch settings.mode {
        case .off: verdict = "notification sounds are off (\(NotificationSoundSettings.modeKey)=off)"
        case .on: verdict = "feedbackservicesd plays the sounds notifications ask for (\(NotificationSoundSettings.modeKey)=on)"
        case .auto:
            if let plays = server.playsItself(settings, feedbackClient: service.hasTriggeredFeedback(server.owner)) {
                verdict = "it plays notification sounds itself (\(plays)), so feedbackservicesd does not"
            } else {
                verdict = "it plays no sounds, so feedbackservicesd plays the sounds notifications ask for"
            }
        }
        return "\(who): \(verdict)"
    }
}

/// The sound a new notification started at its `Notify` call, before the server answered: the
/// server's refusal stops it, whether it came before or after the play started.
private final class EarlySound: Sendable {
    private struct State {
        var decided = false
        var playback: FeedbackPlayback?
        var refused = false
    }
    private let state = Mutex(State())

    /// The rules gave the notification a sound: it plays once its app's level is known (at once,
    /// or after a read of the app's setting).
    func decided() {
        state.withLock { $0.decided = true }
    }

    /// Whether the server has refused the notification: a sound not started yet is not started.
    var isRefused: Bool { state.withLock { $0.refused } }

    /// The play started for the notification.
    func started(_ playback: FeedbackPlayback) {
        if state.withLock({ $0.playback = playback; return $0.refused }) { playback.stop() }
    }

    /// The server refused the notification: its play stops, now or, if it has not started yet
    /// (its app's level still being read), as it starts.
    /// - Returns: whether the notification had a sound (playing, or about to).
    func refuse() -> Bool {
        let (decided, playback) = state.withLock { state in
            state.refused = true
            return (state.decided, state.playback)
        }
        playback?.stop()
        return decided
    }
}

/// The `Notify` calls seen and not answered yet, by sender and serial; at most
/// `NotificationBridge.maximumPending` (the oldest goes first).
private struct PendingNotifications {
    struct Key: Hashable {
        var sender: String
        var serial: UInt64
    }
    /// A call: what it asked, and the sound it started, if it was a new notification.
    struct Call {
        var request: NotificationRequest
        var early: EarlySound?
        /// The sandboxed process that sent it, as seen at the call.
        var sandbox: Int32?
    }
    private var waiting: [Key: (call: Call, since: Double)] = [:]

    /// When the oldest waiting call was seen.
    var oldest: Double? { waiting.values.map(\.since).min() }

    mutating func insert(_ call: Call, key: Key, now: Double) {
        if waiting.count >= NotificationBridge.maximumPending, let oldest = waiting.min(by: { $0.value.since < $1.value.since })?.key {
            waiting[oldest] = nil
        }
        waiting[key] = (call, now)
    }

    mutating func remove(_ key: Key) -> Call? {
        waiting.removeValue(forKey: key)?.call
    }

    mutating func expire(before time: Double) {
        waiting = waiting.filter { $0.value.since >= time }
    }
}

/// At most `lines` log lines in `window` seconds; the lines left out are counted and said with
/// the next one let through.
private struct LogBudget {
    static let lines = 20
    static let window = 10.0
    private var windowStart = -Double.infinity
    private var used = 0
    private var dropped = 0

    mutating func log(_ line: String, _ log: (String) -> Void) {
        let now = MonotonicClock.now
        if now - windowStart >= Self.window {
            windowStart = now
            used = 0
        }
        guard used < Self.lines else {
            dropped += 1
            return
        }
        used += 1
        if dropped > 0 {
            log("notification sounds: \(dropped) more lines were not logged")
            dropped = 0
        }
        log(line)
    }
}
