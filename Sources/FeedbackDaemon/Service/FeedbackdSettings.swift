internal import COptionalLibraries
package import FeedbackServices
import Glibc
import Synchronization

/// feedbackd's own GSettings, as settings apps (Phosh's mobile settings, GNOME Settings' panels)
/// write them: `org.sigxcpu.feedbackd` (`profile`, `theme`, `allow-important`,
/// `max-haptic-strength`, `prefer-flash`) and the per-app level in the relocatable
/// `org.sigxcpu.feedbackd.application` at `/org/sigxcpu/feedbackd/application/<munged app id>/`
/// (`profile`). A value; safe to share across threads.
///
/// Read only where the schema is installed (feedbackd 0.8's package installs it; Debian 12's
/// feedbackd 0.0.3 installs none): the service never installs a copy of feedbackd's schema ids.
/// The keys the installed schema lacks keep their defaults. Without the schema `installed` is
/// false and every value is the default: the profile is then only ours (`FeedbackSettings`).
package struct FeedbackdSettings: Sendable, Equatable {
    /// Whether the schema is installed and was read.
    package var installed = false
    /// `profile`: the level every feedback obeys.
    package var profile: FeedbackProfile = .full
    /// `theme`: the name of the user's feedback theme (`FeedbackThemeLocations`); unless
    /// `$FEEDBACK_THEME` is set, a change loads it at once.
    package var theme = FeedbackThemeLocations.defaultName
    /// `allow-important`: the app ids whose `important` hint is honoured.
    package var allowImportant: Set<String> = FeedbackService.defaultImportantApps
    /// `max-haptic-strength`: every vibration's intensity is at most this (0…1).
    package var maxHapticStrength = 1.0
    /// `prefer-flash`: an LED feedback blinks the camera's flash LED, where there is one, instead of
    /// the notification LED.
    package var preferFlash = false

    /// The schema.
    package static let schema = "org.sigxcpu.feedbackd"
    /// The per-app schema, relocatable.
    package static let appSchema = "org.sigxcpu.feedbackd.application"
    /// Where dconf keeps `schema`.
    package static let directory = "/org/sigxcpu/feedbackd/"
    /// Where dconf keeps the per-app levels, one directory an app.
    package static let appDirectory = "/org/sigxcpu/feedbackd/application/"

    /// The defaults; not installed.
    package init() {}

    /// Settings as `gsettings list-recursively org.sigxcpu.feedbackd` printed them; a key whose
    /// value does not read keeps its default.
    package init(listing: String) {
        installed = true
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, fields[0] == Self.schema else { continue }
            let value = fields[2]
            switch fields[1] {
            case "profile":
                if let name = GVariantText.string(value), let level = FeedbackProfile(rawValue: name) { profile = level }
            case "theme":
                if let name = GVariantText.string(value) { theme = name }
            case "allow-important":
                if let apps = GVariantText.strings(value) { allowImportant = Set(apps) }
            case "max-haptic-strength":
                if let strength = GVariantText.double(value) { maxHapticStrength = min(max(strength, 0), 1) }
            case "prefer-flash":
                if let flag = GVariantText.boolean(value) { preferFlash = flag }
            default: break
            }
        }
    }

    /// Reads the settings with `gsettings` in `environment`; the defaults, not installed, and why,
    /// when that fails (no schema is the usual reason, and says nothing is wrong).
    package static func read(environment: [String: String]) -> (settings: FeedbackdSettings, problem: String?) {
        switch GSettingsTool.listRecursively(schema, environment: environment) {
        case .success(let output): return (FeedbackdSettings(listing: output), nil)
        case .failure(let problem): return (FeedbackdSettings(), problem.message)
        }
    }

    /// Stores `profile` in GSettings (`gsettings set`), so that settings apps show what the
    /// service obeys.
    package static func store(_ profile: FeedbackProfile, environment: [String: String]) -> GSettingsTool.Problem? {
        if case .failure(let problem) = GSettingsTool.set(
            schema, key: "profile", value: GSettingsTool.quoted(profile.rawValue), environment: environment)
        {
            return problem
        }
        return nil
    }

    /// Stores `profile` in GSettings where feedbackd's schema is installed (`feedbackctl profile`:
    /// so that the service, which takes GSettings' profile at start, keeps it); nothing otherwise
    /// (`gsettings set` then fails, with no schema to write, and that failure is not an error).
    package static func storeWhereInstalled(_ profile: FeedbackProfile, environment: [String: String]) {
        _ = store(profile, environment: environment)
    }

    /// An app id as feedbackd, GNOME Shell and Phosh name its settings directory: every character
    /// other than an ASCII letter, digit or `-` becomes `-`, letters lower case
    /// (feedbackd's `munge_app_id` in `fbd-feedback-manager.c`).
    package static func munge(_ appID: String) -> String {
        String(
            String.UnicodeScalarView(
                appID.unicodeScalars.map { scalar -> Unicode.Scalar in
                    switch scalar {
                    case "a"..."z", "0"..."9", "-": scalar
                    case "A"..."Z": Unicode.Scalar(scalar.value + 32)!
                    default: "-"
                    }
                }))
    }

    /// The level an app's per-app setting gives it (`gsettings get
    /// org.sigxcpu.feedbackd.application:/org/sigxcpu/feedbackd/application/<munged>/ profile`);
    /// full when it does not read.
    package static func appLevel(munged: String, environment: [String: String]) -> FeedbackProfile {
        readAppLevel(munged: munged, environment: environment) ?? .full
    }

    /// `appLevel`, or nil when gsettings does not answer with a level (no per-app schema, a
    /// failed process).
    static func readAppLevel(munged: String, environment: [String: String]) -> FeedbackProfile? {
        let schema = "\(appSchema):\(appDirectory)\(munged)/"
        guard case .success(let output) = GSettingsTool.get(schema, key: "profile", environment: environment),
            let name = GVariantText.string(output[...])
        else { return nil }
        return FeedbackProfile(rawValue: name) ?? .full
    }
}

/// The per-app levels, read when an app's first feedback asks for its level, and kept: at once
/// from dconf where GSettings reads dconf (`DconfAppLevels`), else with `gsettings` on a thread of
/// their own; a dconf change to an app's directory reads it again, SIGHUP
/// forgets them all. Bounded: at most `maximumApps` levels are kept (the oldest go first) and at
/// most `maximumWaiting` feedbacks wait for a read (more are refused by the caller, who takes a
/// trigger's token before it waits: a client flooding made-up app ids is held to its budget).
///
/// Thread safety: the state is behind a Mutex; the reads run on one thread at a time.
package final class AppLevels: Sendable {
    /// The most levels kept.
    package static let maximumApps = 256
    /// The most feedbacks waiting for their app's level: as many as the service runs at once.
    package static let maximumWaiting = FeedbackService.Limits().feedbacks

    /// Reads one app's level (its munged id): `FeedbackdSettings.appLevel` in the service.
    private let read: @Sendable (String) -> FeedbackProfile
    /// Reads one app's level at once where that is cheap (`DconfAppLevels`), or says it cannot (nil).
    private let readNow: (@Sendable (String) -> FeedbackProfile?)?
    private struct State {
        var levels: [String: FeedbackProfile] = [:]
        /// Munged ids in the order their levels were kept, oldest first.
        var order: [String] = []
        /// Reads asked for, in order, and who waits for each.
        var queue: [String] = []
        var waiting: [String: [@Sendable (FeedbackProfile) -> Void]] = [:]
        var waitingCount = 0
        var reading = false
    }
    private let state = Lock(State())

    /// Levels read with `read` (given a munged app id) on the reading thread, or with `readNow`
    /// at once where it can.
    package init(
        read: @escaping @Sendable (String) -> FeedbackProfile, readNow: (@Sendable (String) -> FeedbackProfile?)? = nil
    ) {
        self.read = read
        self.readNow = readNow
    }

    private static func keep(_ level: FeedbackProfile, for app: String, in state: inout State) {
        if state.levels.updateValue(level, forKey: app) == nil {
            state.order.append(app)
            if state.order.count > maximumApps { state.levels[state.order.removeFirst()] = nil }
        }
    }

    /// The kept level of `appID`, else the level `readNow` reads at once, kept; nil when neither
    /// has it (the level then takes `whenRead`).
    package func levelNow(of appID: String) -> FeedbackProfile? {
        let munged = FeedbackdSettings.munge(appID)
        if let kept = state.withLock({ $0.levels[munged] }) { return kept }
        guard let readNow, let level = readNow(munged) else { return nil }
        state.withLock { Self.keep(level, for: munged, in: &$0) }
        return level
    }

    /// Reads `appID`'s level and calls `then` with it on the reading thread; false, and nothing
    /// is called, when `maximumWaiting` feedbacks wait already.
    package func whenRead(_ appID: String, then: @escaping @Sendable (FeedbackProfile) -> Void) -> Bool {
        let munged = FeedbackdSettings.munge(appID)
        let (admitted, starts) = state.withLock { state -> (Bool, Bool) in
            guard state.waitingCount < Self.maximumWaiting else { return (false, false) }
            state.waitingCount += 1
            if state.waiting[munged] == nil { state.queue.append(munged) }
            state.waiting[munged, default: []].append(then)
            return (true, startReading(&state))
        }
        if starts { startThread() }
        return admitted
    }

    /// Reads the levels of `munged` ids again, where kept (a dconf change to their directories).
    package func refresh(_ munged: Set<String>) {
        let starts = state.withLock { state -> Bool in
            for app in munged where state.levels[app] != nil && state.waiting[app] == nil {
                state.queue.append(app)
                state.waiting[app] = []
            }
            return startReading(&state)
        }
        if starts { startThread() }
    }

    /// Forgets every level (SIGHUP, or a dconf change above the apps' directories): each is read
    /// again at its app's next feedback.
    package func forget() {
        state.withLock { state in
            state.levels = [:]
            state.order = []
        }
    }

    private func startReading(_ state: inout State) -> Bool {
        guard !state.reading, !state.queue.isEmpty else { return false }
        state.reading = true
        return true
    }

    private func startThread() {
        startDetachedThread(name: "app-levels") { [self] in
            while let app = state.withLock({ state -> String? in
                guard !state.queue.isEmpty else {
                    state.reading = false
                    return nil
                }
                return state.queue.removeFirst()
            }) {
                let level = read(app)
                let waiting = state.withLock { state -> [@Sendable (FeedbackProfile) -> Void] in
                    Self.keep(level, for: app, in: &state)
                    let waiting = state.waiting.removeValue(forKey: app) ?? []
                    state.waitingCount -= waiting.count
                    return waiting
                }
                for then in waiting { then(level) }
            }
        }
    }
}

/// feedbackd's per-app levels read from dconf's databases in this process (libdconf, loaded on
/// first use: `fbs_dconf_read_string`), in microseconds, where a `gsettings` process took about
/// 10 ms at each app's first feedback or notification. Only where GSettings itself reads dconf
/// (`GSETTINGS_BACKEND` unset or `dconf`, and the service's environment is this process's own for
/// the variables libdconf reads: a service run in process by a test with another environment
/// reads with gsettings), and only once a `gsettings` read has shown what dconf cannot: that the
/// per-app schema is installed, and the level of an app with no setting (the schema's default,
/// which a vendor's override may change). That read is of the first app with no setting, on
/// `AppLevels`' thread, as every read was before.
///
/// Thread safety: the state is behind a Mutex; libdconf locks its own.
package final class DconfAppLevels: Sendable {
    /// The variables libdconf reads from the process's environment.
    static let variables = ["HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "DCONF_PROFILE", "GSETTINGS_BACKEND"]

    private let environment: [String: String]
    private let log: @Sendable (String) -> Void
    private struct State {
        /// The level of an app with no setting, once learnt: until then every level takes a
        /// gsettings read.
        var defaultLevel: FeedbackProfile?
        /// Whether the log said that libdconf cannot be used.
        var saidUnavailable = false
    }
    private let state = Lock(State())

    /// Nil where GSettings does not read dconf in this process's environment.
    package init?(environment: [String: String], log: @escaping @Sendable (String) -> Void) {
        if let backend = environment["GSETTINGS_BACKEND"], backend != "dconf" { return nil }
        for name in Self.variables where environment[name] != getenv(name).map({ String(cString: $0) }) { return nil }
        self.environment = environment
        self.log = log
    }

    /// What dconf holds for `munged`'s level.
    private enum Stored { case level(FeedbackProfile), unset, unavailable(String) }

    private func stored(_ munged: String) -> Stored {
        let key = "\(FeedbackdSettings.appDirectory)\(munged)/profile"
        var buffer = [CChar](repeating: 0, count: 64)
        switch fbs_dconf_read_string(key, &buffer, buffer.count) {
        case 1:
            // A value the schema does not allow: GSettings gives the default; feedbackd's is full.
            let name = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            return .level(FeedbackProfile(rawValue: name) ?? .full)
        case 0: return .unset
        case -1: return .level(.full)
        default:
            return .unavailable(fbs_optional_library_error(FBS_LIBRARY_DCONF).map { String(cString: $0) } ?? "libdconf cannot be used")
        }
    }

    /// `munged`'s level, read now; nil when it takes a gsettings read (`levelRead`): the default
    /// is not learnt yet, or libdconf cannot be loaded.
    package func levelNow(_ munged: String) -> FeedbackProfile? {
        guard let defaultLevel = state.withLock({ $0.defaultLevel }) else { return nil }
        switch stored(munged) {
        case .level(let level): return level
        case .unset: return defaultLevel
        case .unavailable: return nil
        }
    }

    /// `munged`'s level read with gsettings (on `AppLevels`' thread). An app that has no setting
    /// in dconf before and after the read teaches the default, and from then on levels are read
    /// from dconf.
    package func levelRead(_ munged: String) -> FeedbackProfile {
        let before = stored(munged)
        let read = FeedbackdSettings.readAppLevel(munged: munged, environment: environment)
        switch (before, read) {
        case (.unset, let level?):
            guard case .unset = stored(munged) else { break }
            let learnt = state.withLock { state -> Bool in
                defer { state.defaultLevel = level }
                return state.defaultLevel == nil
            }
            if learnt { log("per-app levels are read from dconf in this process (libdconf) from now on; an app with no setting is \(level.rawValue)") }
        case (.unavailable(let why), _):
            let say = state.withLock { state -> Bool in
                defer { state.saidUnavailable = true }
                return !state.saidUnavailable
            }
            if say { log("per-app levels are read with gsettings, a process each: \(why)") }
        default:
            break
        }
        return read ?? .full
    }
}
