import FeedbackBus
import FeedbackServices
import FoundationEssentials
import Glibc
import Synchronization

/// feedbackservicesd's main: options, the theme, the bus name, the loop.
///
/// SIGHUP reloads the feedback theme, looked for again (a theme that no longer loads keeps the
/// old one, with a log line), and the desktop's sound settings (`DesktopSoundSettings`). The
/// settings file's directory is watched with inotify, so a profile another process stores
/// (`feedbackctl profile`) is announced with `PropertiesChanged`. Idle: after `--idle-timeout`
/// seconds without sound the sound-server stream closes; the daemon then sleeps in `epoll_wait`
/// with nothing due, every thread of it (no Dispatch worker ever runs, so libdispatch's 1 Hz
/// workqueue monitor never starts: see `Delivery`), and the next feedback opens the stream again.
///
/// LEDs are found under `/sys/class/leds` when a feedback wants one (`FeedbackService`). The
/// option `--sysfs-root DIR`, left out of the help because it is for tests, finds them under
/// `<dir>/sys/class/leds` (and udev's data under `<dir>/run/udev/data`) instead: a fake tree of
/// plain files (`FakeSysfs`); the device tree's compatibles, which choose the device theme
/// (`FeedbackThemeLocations`), are read under the same root.
///
/// Exit codes (sysexits.h): 0 after SIGTERM/SIGINT or when another instance took the name over
/// (`--replace`); 64 for a usage error; 66 when the theme cannot be read; 69 when the session bus
/// cannot be reached or goes away, or another process owns `org.sigxcpu.Feedback` (or
/// `org.feedbackservices.SystemSounds1`) and did not let it go (the message names its PID and how
/// to stop it).
package enum Daemon {
    /// Runs the service until SIGTERM or SIGINT; returns the exit status. The command line is
    /// `feedbackservicesd`'s (`ServiceCommandLine` in FeedbackCLI: its declarations, help and manual
    /// page): `replace` takes the names over, `idleTimeout` closes the sound-server stream after
    /// that many seconds without sound, `sysfsRoot` is where sysfs is (a fake tree in tests).
    package static func run(replace: Bool, idleTimeout: Double, sysfsRoot: String, environment: [String: String]) -> Int32 {
        // Blocked before any thread starts, so that every thread inherits the mask and the bus
        // thread alone receives them (sd_event_add_signal reads them from a signalfd).
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        // gsettings takes ~9 ms: it runs while the theme loads and the bus connects.
        let desktopReading = DesktopReading(environment: environment)
        let root = sysfsRoot
        let locations = FeedbackThemeLocations.standard(environment: environment, root: root)
        let theme: FeedbackTheme
        do {
            theme = try FeedbackTheme.load(locations)
        } catch {
            log("Error: cannot read the feedback theme: \(error)")
            return 66
        }
        let chain = theme.files.joined(separator: " → ")
        log("feedback theme '\(theme.name)' (\(chain))\(describeDevice(locations))")
        logThemeNotes(theme)
        let themeWatch = ThemeFileWatch()
        if themeWatch == nil { log("cannot watch the feedback theme's files (\(Errno.current)): only SIGHUP reloads it") }
        themeWatch?.watch(theme.files + theme.patternFiles)

        let connection: BusConnection
        do {
            connection = try BusConnection.session(description: "feedbackservicesd")
        } catch {
            log("Error: \(error.message)")
            return 69
        }
        let (desktop, feedbackd) = desktopReading.wait()
        let idle = idleTimeout
        // Clients' own sounds (SystemSounds1.RegisterFD) get IDs in the service range.
        let registry = SoundRegistry(
            decoder: SoundDecoder(), firstID: SoundIDRange.serviceIDs.lowerBound,
            lastID: SoundIDRange.serviceIDs.upperBound, persistentRegistry: try? SoundRegistryFile(environment: environment))
        let manager = FeedbackManager(
            registry: registry,
            openAudioOutput: { () throws(PlaybackError) -> any AudioOutput in
                try openEngine(idleTimeout: idle, environment: environment)
            }, settings: FeedbackSettings(environment: environment),
            themeResolver: soundThemeResolver(desktop: desktop, environment: environment),
            // Threads and the bus loop, never a Dispatch worker: idle, the daemon makes no wake-ups.
            scheduling: .threads(loop: connection.delivery))
        let appLevels: AppLevels
        if let dconf = DconfAppLevels(environment: environment, log: log) {
            appLevels = AppLevels(read: dconf.levelRead, readNow: dconf.levelNow)
        } else {
            appLevels = AppLevels { munged in FeedbackdSettings.appLevel(munged: munged, environment: environment) }
        }
        // Patterns' lights go to the LEDs the theme's Led feedbacks blink.
        manager.lights = LEDDiscovery(root: sysfsRoot)
        let service = FeedbackService(
            manager: manager, theme: theme, desktop: desktop, leds: manager.lights, appLevels: appLevels,
            log: log)
        let follower = SettingsFollower(service: service, environment: environment, log: log) {
            reloadTheme(
                service: service, root: root, environment: environment, watch: themeWatch,
                why: "\(FeedbackdSettings.schema) theme changed")
        }
        follower.start(feedbackd: feedbackd)

        let reloads = SerialRequests(threadName: "reload")
        let themeReloads = SerialRequests(threadName: "theme-reload")
        let settingsWatch = watchSettingsDirectory(manager.settings.path)
        defer { if let settingsWatch { close(settingsWatch) } }
        // Notification sounds (NotificationBridge), on a connection and thread of their own.
        let bridge = BusClient.sessionAddress(environment: environment).flatMap { address in
            try? NotificationBridge(service: service, address: address, log: log)
        }
        let sounds = SystemSoundsService(
            manager: manager, notificationSounds: { bridge?.summary ?? "not watched: no session bus address" }, log: log)
        do throws(BusError) {
            var taken: Int32??
            try connection.setUp { (bus) throws(BusError) in
                try service.export(on: bus)
                try sounds.export(on: bus)
                let stop = { (bus: BusContext) in
                    bridge?.stop()
                    sounds.stop(bus: bus)
                    service.stop(bus: bus)
                }
                try bus.onSignal(SIGTERM, stop)
                try bus.onSignal(SIGINT, stop)
                try bus.onSignal(SIGHUP) { _ in
                    // Off the bus thread: reading the theme and running gsettings take milliseconds.
                    reloads.request {
                        reload(service: service, root: root, environment: environment, watch: themeWatch)
                        follower.readAll()
                    }
                }
                if let themeWatch {
                    try bus.onReadable(themeWatch.descriptor) { _ in
                        guard themeWatch.themeFileChanged() else { return }
                        themeReloads.request {
                            reloadTheme(service: service, root: root, environment: environment, watch: themeWatch, why: "theme file changed")
                        }
                    }
                }
                if let settingsWatch {
                    try bus.onReadable(settingsWatch) { bus in
                        drain(settingsWatch)
                        service.settingsChanged(bus: bus)
                        follower.profileChanged()
                    }
                }
                // GSettings written through dconf: its writer announces each write on this bus. Any
                // sender (sd-bus matches a sender locally by unique name, and dconf-service's changes
                // when it is activated again): a forged Notify costs one read, and reads fold
                // into one while one runs (`SerialRequests`).
                try bus.subscribe(
                    sender: nil, path: "/ca/desrt/dconf/Writer/user", interface: "ca.desrt.dconf.Writer", member: "Notify"
                ) { message, _ in
                    guard let prefix = try? message.readString(),
                        let changes = try? message.readStrings(limit: 256)
                    else { return }
                    follower.dconfChanged(prefix: prefix, changes: changes)
                }
                // Taken over by `feedbackservicesd --replace`: stop as for SIGTERM.
                try bus.subscribe(
                    sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: "NameLost"
                ) { message, bus in
                    if (try? message.readString()) == FeedbackService.busName {
                        log("another instance took \(FeedbackService.busName) over; stopping")
                        stop(bus)
                    }
                }
                // SystemSounds1 first: clients wait for org.sigxcpu.Feedback (feedbackd's name),
                // and once they see it owned, every name of the service is.
                if case .taken(let owner) = try bus.requestName(SystemSounds1.busName, replace: replace) {
                    // Only another feedbackservicesd could own it (no other program implements it).
                    taken = .some(owner)
                } else if case .taken(let owner) = try bus.requestName(FeedbackService.busName, replace: replace) {
                    taken = .some(owner)
                }
            }
            if let owner = taken {
                log(nameTakenMessage(owner: owner, replace: replace))
                return 69
            }
        } catch {
            log("Error: \(error.message)")
            return 69
        }
        // The sound server connection opens now, so the first feedback does not wait for it.
        manager.prepareAudioOutput()
        log("serving \(FeedbackService.busName) at \(FeedbackService.objectPath) and \(SystemSounds1.busName) at \(SystemSounds1.objectPath)")
        do {
            try connection.start()
        } catch {
            log("Error: \(error.message)")
            return 69
        }
        bridge?.start()
        // feedbackctl reads it to skip the bus when no service runs (SystemSounds1.pidFile).
        let pidFile = SystemSounds1.pidFile(environment: environment)
        if let pidFile, case let fd = open(pidFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644), fd >= 0 {
            Array("\(getpid())\n".utf8).withUnsafeBytes { bytes in _ = try? System.writeAll(fd, bytes) }
            close(fd)
        }
        // Only our own: an instance that replaced this one (`--replace`) has written its PID there.
        defer {
            if let pidFile, let bytes = try? AtomicFile.read(pidFile, limit: 32),
                String(decoding: bytes, as: UTF8.self) == "\(getpid())\n"
            {
                unlink(pidFile)
            }
        }
        guard connection.join() == 0 else {
            log("the session bus connection broke; stopping")
            return 69
        }
        return 0
    }

    /// The engine, connected, closing its stream after `idleTimeout` seconds without sound: on the
    /// output `feedbackctl` and the library choose (`AudioOutputSelection.automatic`), so that
    /// on a PipeWire desktop the service plays on PipeWire's own protocol, not through
    /// pipewire-pulse (it tried PulseAudio alone before, and found no server where only PipeWire runs).
    private static func openEngine(idleTimeout: Double, environment: [String: String]) throws(PlaybackError)
        -> any AudioOutput
    {
        try AudioOutputSelection.automatic(idleTimeout: idleTimeout, environment: environment)
    }

    /// GSettings' sound settings, with a log line when they cannot be read.
    static func readDesktopSettings(environment: [String: String]) -> DesktopSoundSettings {
        let (settings, problem) = DesktopSoundSettings.read(environment: environment)
        if let problem { log("the desktop's sound settings are not read, so the defaults apply: \(problem)") }
        if !settings.eventSounds { log("event sounds are off in the desktop's settings: feedbacks give no sound") }
        return settings
    }

    /// The sound theme GSettings names, unless `FEEDBACK_SOUND_THEME` chooses one; else the
    /// library's own choice (GTK's `settings.ini`, else our theme). Chosen at start and on SIGHUP,
    /// as the desktop's settings are: one resolver, whose remembered lookups make a play's theme
    /// lookup a few `stat`s; nil only when the choice is not a valid theme name (then
    /// the manager chooses again at each play).
    static func soundThemeResolver(desktop: DesktopSoundSettings, environment: [String: String])
        -> SoundThemeResolver?
    {
        let name = environment[SoundThemeSelection.environmentVariable] == nil ? desktop.themeName : nil
        return try? SoundThemeResolver.standard(explicitTheme: name, environment: environment)
    }

    /// SIGHUP: the theme again, looked for again (a user or device theme installed since is
    /// found; the old theme stays when the new one does not load), and the desktop's settings.
    private static func reload(service: FeedbackService, root: String, environment: [String: String], watch: ThemeFileWatch?) {
        let desktop = readDesktopSettings(environment: environment)
        service.manager.themeResolver = soundThemeResolver(desktop: desktop, environment: environment)
        service.replace(desktop: desktop)
        reloadTheme(service: service, root: root, environment: environment, watch: watch, why: "reloaded")
    }

    /// The feedback theme looked for again, under the name feedbackd's settings give (`theme`),
    /// and given to the service, whose files `watch` then follows; the old one stays when the new
    /// one does not load. `why` begins the log line.
    private static func reloadTheme(
        service: FeedbackService, root: String, environment: [String: String], watch: ThemeFileWatch?, why: String
    ) {
        let locations = FeedbackThemeLocations.standard(environment: environment, root: root, named: service.feedbackdSettings.theme)
        if let problem = locations.problem { log("feedback theme (\(FeedbackdSettings.schema) theme): \(problem)") }
        do {
            let theme = try FeedbackTheme.load(locations)
            service.replace(theme: theme)
            watch?.watch(theme.files + theme.patternFiles)
            log("\(why): feedback theme '\(theme.name)' (\(theme.files.joined(separator: " → ")))\(describeDevice(locations))")
            logThemeNotes(theme)
        } catch {
            log("\(why): cannot read the feedback theme, so the old one stays: \(error)")
        }
    }

    /// The device tree's compatibles and whether one has a theme, for the theme's log line.
    private static func describeDevice(_ locations: FeedbackThemeLocations) -> String {
        guard !locations.compatibles.isEmpty else { return "" }
        let names = locations.compatibles.joined(separator: ", ")
        return locations.deviceTheme == nil ? "; no device theme for \(names)" : "; device \(names)"
    }

    /// What of `theme` is not played as written, said once per load: feedbacks of an unknown
    /// type, LED colours shown white, the rest of its notes.
    private static func logThemeNotes(_ theme: FeedbackTheme) {
        if !theme.ignored.isEmpty {
            log("\(theme.ignored.count) theme feedbacks of a type not known here run as a Dummy, doing nothing: \(theme.ignored.joined(separator: ", "))")
        }
        for note in theme.notes { log("feedback theme: \(note)") }
        if !theme.approximated.isEmpty {
            log("\(theme.approximated.count) LED feedbacks name a colour our LEDs are not told, so they blink white: \(theme.approximated.joined(separator: ", "))")
        }
    }

    /// An inotify descriptor watching the directory of the settings file (made if missing), so
    /// that a profile stored by another process is seen without polling; nil without one.
    private static func watchSettingsDirectory(_ settings: String?) -> Int32? {
        guard let settings, let slash = settings.lastIndex(of: "/"), slash != settings.startIndex else { return nil }
        let directory = String(settings[..<slash])
        var made = ""
        for component in directory.split(separator: "/") {
            made += "/\(component)"
            mkdir(made, 0o700)
        }
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            log("cannot watch \(directory) (\(Errno.current)): a profile another process stores is not announced")
            return nil
        }
        let events = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)
        guard inotify_add_watch(fd, directory, events) >= 0 else {
            log("cannot watch \(directory) (\(Errno.current)): a profile another process stores is not announced")
            close(fd)
            return nil
        }
        return fd
    }

    /// Reads what a non-blocking descriptor holds, until it is empty.
    private static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while (buffer.withUnsafeMutableBytes { try? System.read(fd, into: $0.baseAddress!, count: $0.count) } ?? 0) > 0 {}
    }

    /// The message for a name another process owns: who, and how to stop it.
    static func nameTakenMessage(owner: Int32?, replace: Bool) -> String {
        let name = FeedbackService.busName
        guard let owner else {
            return "Error: \(name) is owned by another connection on this bus (its process is unknown)"
        }
        let command = (try? String(contentsOfFile: "/proc/\(owner)/comm", encoding: .utf8))
            .map { $0.filter { $0 != "\n" } } ?? "?"
        let how =
            replace
            ? "it does not let the name go: stop it (kill \(owner))"
            : "stop it (kill \(owner); for feedbackd under systemd: systemctl --user stop feedbackd), or, if it is feedbackservicesd, start this one with --replace"
        return "Error: \(name) is owned by process \(owner) (\(command)); \(how)"
    }

    /// One line to standard error (the journal under systemd).
    @Sendable static func log(_ line: String) {
        write(2, "feedbackservicesd: \(line)\n")
    }

    private static func write(_ fd: Int32, _ text: String) {
        Array(text.utf8).withUnsafeBytes { bytes in _ = try? System.writeAll(fd, bytes) }
    }
}

/// The desktop's sound settings and feedbackd's, read on a thread of their own from `init` on; `wait()` returns
/// them (read at once, on the caller's thread, when no thread can be started).
private final class DesktopReading: @unchecked Sendable {
    // Locking rule: `settings` is written by the reading thread only, and read after `join()`,
    // which orders the two.
    private var settings = DesktopSoundSettings()
    private var feedbackd = FeedbackdSettings()
    private var thread: Thread?
    private let environment: [String: String]

    init(environment: [String: String]) {
        self.environment = environment
        thread = try? startThread(name: "gsettings") { [self] in
            settings = Daemon.readDesktopSettings(environment: environment)
            feedbackd = Self.readFeedbackd(environment: environment)
        }
    }

    func wait() -> (DesktopSoundSettings, FeedbackdSettings) {
        guard let thread else {
            return (Daemon.readDesktopSettings(environment: environment), Self.readFeedbackd(environment: environment))
        }
        thread.join()
        return (settings, feedbackd)
    }

    private static func readFeedbackd(environment: [String: String]) -> FeedbackdSettings {
        FeedbackdSettings.read(environment: environment).settings
    }
}

/// Work that runs on a thread of its own, one run at a time, however often it is asked for: a
/// request while a run is under way makes one more run after it (requests meanwhile fold into
/// that one). So the last run starts after the last request — the newest theme wins, as two
/// SIGHUPs close together, each on a thread of its own, did not ensure.
package final class SerialRequests: Sendable {
    private let threadName: String
    /// Whether a run is under way, and whether another was asked for meanwhile.
    private let state = Lock((running: false, again: false))

    package init(threadName: String) {
        self.threadName = threadName
    }

    /// Runs `work` on a new thread now, or once more after the run under way (that run's `work`
    /// again: every caller passes the same).
    package func request(_ work: @escaping @Sendable () -> Void) {
        let starts = state.withLock { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        guard starts else { return }
        startDetachedThread(name: threadName) { [self] in
            repeat { work() } while state.withLock { state -> Bool in
                defer { state.again = false }
                state.running = state.again
                return state.again
            }
        }
    }
}
