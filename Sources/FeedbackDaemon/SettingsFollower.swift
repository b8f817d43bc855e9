import FeedbackBus
import FeedbackServices
import Glibc

/// Follows the GSettings the service obeys while it runs: the desktop's sound switches
/// (`DesktopSoundSettings`), feedbackd's keys (`FeedbackdSettings`; a new `theme` loads that
/// feedback theme) and the per-app levels
/// (`AppLevels`), read again when dconf announces a write under them (`dconfChanged`, from the
/// `ca.desrt.dconf.Writer.Notify` signal the daemon subscribes to on its own connection: no
/// polling, no wake-up while nothing changes) and at SIGHUP (`readAll`).
///
/// **The profile's home.** Without feedbackd's schema, the settings file (`FeedbackSettings`:
/// what `feedbackctl profile` writes, what `Profile` reads and sets, what the library in every
/// process obeys). Where the schema is installed, GSettings' `org.sigxcpu.feedbackd profile`, as
/// for feedbackd: the service takes it at start and stores it in the file, which every process
/// reads; while it runs the two are kept equal both ways: a value a settings app writes to
/// GSettings is stored in the file (and announced with `PropertiesChanged`), and a profile stored
/// in the file (`feedbackctl profile`, `Profile`, the library) is written to GSettings
/// (`profileChanged`). `feedbackctl profile` writes both itself, so a change made while the
/// service is stopped is kept. `FEEDBACKSERVICES_PROFILE` in the service's environment fixes the
/// profile: GSettings' is then not followed.
///
/// Thread safety: the bus thread calls `dconfChanged` and `profileChanged`; the reads and writes
/// run on the "gsettings" thread, one at a time (`SerialRequests`); the state is behind a Mutex.
final class SettingsFollower: Sendable {
    private let service: FeedbackService
    private let environment: [String: String]
    private let log: @Sendable (String) -> Void
    /// What to do on the next run of the thread.
    private struct Pending {
        var change = DconfChange()
        var storeProfile = false
    }
    private let pending = Lock(Pending())
    /// The profile GSettings holds, as last read or written there; nil before the first read, or
    /// where feedbackd's schema is not installed.
    private let gsettingsProfile = Lock<FeedbackProfile?>(nil)
    private let runs = SerialRequests(threadName: "gsettings")
    private static let followed = "feedbackd's settings (\(FeedbackdSettings.schema)) are read and followed"

    /// Loads the feedback theme again (GSettings' `theme` named another).
    private let themeChanged: @Sendable () -> Void

    init(
        service: FeedbackService, environment: [String: String], log: @escaping @Sendable (String) -> Void,
        themeChanged: @escaping @Sendable () -> Void
    ) {
        self.service = service
        self.environment = environment
        self.log = log
        self.themeChanged = themeChanged
    }

    /// At start: feedbackd's settings, read (on the caller's thread) and given to the service, and
    /// the profile settled between the file and GSettings (see the type).
    func start(feedbackd settings: FeedbackdSettings) {
        service.replace(feedbackd: settings)
        guard settings.installed else { return }
        log(Self.followed)
        // The daemon loaded the theme `default` names, before the settings were read.
        if settings.theme != FeedbackThemeLocations.defaultName && themeFollowsSettings { themeChanged() }
        let file = service.manager.settings
        if file.environmentProfile == nil, settings.profile != file.profile {
            store(settings.profile, from: "\(FeedbackdSettings.schema) profile")
        }
        gsettingsProfile.withLock { $0 = settings.profile }
        writeProfileIfDifferent()
    }

    /// dconf's writer announced a write of `changes` under `prefix`: reads again, on the
    /// "gsettings" thread, what it touched of ours.
    func dconfChanged(prefix: String, changes: [String]) {
        let change = DconfChange(prefix: prefix, changes: changes)
        guard !change.isEmpty else { return }
        pending.withLock { $0.change.formUnion(change) }
        runs.request { [self] in run() }
    }

    /// The settings file's profile changed (`feedbackctl profile`, `Profile` set): written to
    /// GSettings, on the "gsettings" thread, where it differs there.
    func profileChanged() {
        guard gsettingsProfile.withLock({ $0 }) != nil else { return }
        pending.withLock { $0.storeProfile = true }
        runs.request { [self] in run() }
    }

    /// SIGHUP (on the reload thread): feedbackd's settings read again and the per-app levels
    /// forgotten, on the "gsettings" thread as every other read (so that two reads never race
    /// to give the service their settings). The desktop's are the reload's own.
    func readAll() {
        pending.withLock { pending in
            pending.change.feedbackd = true
            pending.change.allApps = true
        }
        runs.request { [self] in run() }
    }

    private func run() {
        let (change, storeProfile) = pending.withLock { pending in
            defer { pending = Pending() }
            return (pending.change, pending.storeProfile)
        }
        if change.desktopSound {
            let desktop = Daemon.readDesktopSettings(environment: environment)
            service.manager.themeResolver = Daemon.soundThemeResolver(desktop: desktop, environment: environment)
            service.replace(desktop: desktop)
        }
        if change.feedbackd { readFeedbackd() }
        if change.allApps { service.appLevels?.forget() }
        if !change.apps.isEmpty { service.appLevels?.refresh(change.apps) }
        if storeProfile { writeProfileIfDifferent() }
    }

    /// Whether GSettings' `theme` chooses the theme: not while `$FEEDBACK_THEME` names a file.
    private var themeFollowsSettings: Bool { (environment["FEEDBACK_THEME"] ?? "").isEmpty }

    private func readFeedbackd() {
        let (settings, problem) = FeedbackdSettings.read(environment: environment)
        let was = service.feedbackdSettings
        service.replace(feedbackd: settings)
        if settings.theme != was.theme && themeFollowsSettings { themeChanged() }
        if settings.installed != was.installed {
            log(
                settings.installed
                    ? Self.followed
                    : "feedbackd's settings (\(FeedbackdSettings.schema)) are not read: \(problem ?? "?")")
        }
        guard settings.installed else {
            gsettingsProfile.withLock { $0 = nil }
            return
        }
        let previous = gsettingsProfile.withLock { profile in
            defer { profile = settings.profile }
            return profile
        }
        if previous != settings.profile, settings.profile != service.manager.profile {
            store(settings.profile, from: "\(FeedbackdSettings.schema) profile")
        }
    }

    /// Stores `profile` in the settings file (the inotify watch then announces it).
    private func store(_ profile: FeedbackProfile, from source: String) {
        let file = service.manager.settings
        if let fixed = file.environmentProfile {
            log("\(source) is \(profile.rawValue), but \(FeedbackSettings.environmentVariable) fixes the profile at \(fixed.rawValue)")
            return
        }
        do {
            try file.store(profile)
            log("profile \(profile.rawValue), from \(source)")
        } catch {
            log("cannot store the profile \(profile.rawValue) from \(source): \(error)")
        }
    }

    /// Writes the settings file's profile to GSettings if GSettings holds another.
    private func writeProfileIfDifferent() {
        let profile = service.manager.profile
        guard let held = gsettingsProfile.withLock({ $0 }), held != profile,
            service.manager.settings.environmentProfile == nil
        else { return }
        if let problem = FeedbackdSettings.store(profile, environment: environment) {
            log("cannot write the profile \(profile.rawValue) to \(FeedbackdSettings.schema): \(problem.message)")
            return
        }
        gsettingsProfile.withLock { $0 = profile }
    }
}
