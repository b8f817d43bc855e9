package import FeedbackBus
import FeedbackServices
import Glibc

/// What a notification's `Notify` call asks of its sound (the Desktop Notifications spec's hints),
/// and what the sound rules key on. Its summary and body are never read. A value.
package struct NotificationRequest: Sendable, Equatable {
    /// `app_name`.
    package var appName = ""
    /// `replaces_id`: the notification it updates; 0 for a new one.
    package var replacesID: UInt32 = 0
    /// `desktop-entry`: the sending app's desktop file name (`org.gnome.Evolution`).
    package var desktopEntry: String?
    /// `category` (`im.received`, `email.arrived`, `device.added`, …).
    package var category: String?
    /// `urgency`: 0 low, 1 normal, 2 critical.
    package var urgency: UInt32?
    /// `sound-file`: a path.
    package var soundFile: String?
    /// `sound-name`: a Sound Naming spec name.
    package var soundName: String?
    /// `suppress-sound`.
    package var suppressSound = false
    /// A stack tag: the on-screen-display notifications (volume, brightness) that replace each
    /// other give one (`x-canonical-private-synchronous`, `synchronous`, `x-dunst-stack-tag`).
    package var stackTag: String?

    /// The most hints read; a notification with more is refused (and plays nothing).
    package static let maximumHints = 64

    /// A request with `appName` and the hints `hints` (what `Notify` carried).
    package init(appName: String = "", replacesID: UInt32 = 0, hints: [String: BusValue] = [:]) {
        self.appName = String(decoding: appName.utf8.prefix(RequestBounds.maximumNameLength), as: UTF8.self)
        self.replacesID = replacesID
        // Names and paths longer than any real one count as absent: the rules keep them.
        func text(_ key: String, limit: Int = RequestBounds.maximumNameLength) -> String? {
            guard case .string(let value)? = hints[key], !value.isEmpty, value.utf8.count <= limit else { return nil }
            return value
        }
        desktopEntry = text("desktop-entry")
        category = text("category")
        if case .uint32(let value)? = hints["urgency"] { urgency = value }
        soundFile = text("sound-file", limit: Int(PATH_MAX))
        soundName = text("sound-name")
        if case .boolean(let value)? = hints["suppress-sound"] { suppressSound = value }
        stackTag = text("x-canonical-private-synchronous") ?? text("synchronous") ?? text("x-dunst-stack-tag")
    }

    /// The `Notify` call `message` (`susssasa{sv}i`), read as far as its hints.
    /// - Throws: `BusError` when it is not a `Notify` call's body or has more than `maximumHints`.
    package init(notify message: BusMessage) throws(BusError) {
        let appName = try message.readString()
        let replacesID = try message.readUInt32()
        // app_icon, summary, body, actions: never read.
        try message.skip("sssas")
        let hints = try message.readVariantDictionary(limit: Self.maximumHints)
        self.init(appName: appName, replacesID: replacesID, hints: hints)
    }

    /// The app the burst rule and the per-app level key on: `desktop-entry`, else `app_name`
    /// (not the sender: every sandboxed app's notifications come from the portal).
    package var app: String { desktopEntry ?? appName }
}

/// The settings of the notification bridge, from the settings file (`FeedbackSettings`' file):
///
/// - `notification-sounds = auto | on | off`: `auto` (the default) plays a notification's sound
///   only where the notification server plays none; `on` plays them whatever the server; `off`
///   never.
/// - `notification-sounding-servers = name, name`: more servers (their `GetServerInformation`
///   names) to count as playing their own sounds.
/// - `notification-categories = on`: a notification that asks for no sound gets its category's
///   (`NotificationRules.categoryEvents`); off by default, as many apps play their own sound
///   without saying `suppress-sound`.
package struct NotificationSoundSettings: Sendable, Equatable {
    /// When the bridge plays.
    package enum Mode: String, Sendable, CaseIterable {
        case auto, on, off
    }
    package var mode = Mode.auto
    package var soundingServers: [String] = []
    package var categories = false

    package static let modeKey = "notification-sounds"
    package static let serversKey = "notification-sounding-servers"
    package static let categoriesKey = "notification-categories"

    /// The defaults.
    package init() {}

    /// The settings in `values` (the file's keys); unknown values leave the default, and are
    /// listed in `problems`.
    package init(values: [String: String]) {
        if let text = values[Self.modeKey] {
            if let mode = Mode(rawValue: text.lowercased()) { self.mode = mode } else {
                problems.append("\(Self.modeKey)=\(text.prefix(64)) is not auto, on or off")
            }
        }
        if let text = values[Self.serversKey] {
            soundingServers = text.split(separator: ",").prefix(64).map { trimmed($0) }.filter { !$0.isEmpty }
        }
        if let text = values[Self.categoriesKey] {
            switch text.lowercased() {
            case "on", "true", "yes", "1": categories = true
            case "off", "false", "no", "0": categories = false
            default: problems.append("\(Self.categoriesKey)=\(text.prefix(64)) is not on or off")
            }
        }
    }

    /// The values that were not understood.
    package var problems: [String] = []
}

/// `text` without the spaces and tabs around it.
private func trimmed(_ text: Substring) -> String {
    String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
}

/// The notification server that owns `org.freedesktop.Notifications`, as the bridge saw it when
/// the owner changed. A value.
package struct NotificationServer: Sendable, Equatable {
    /// Its unique bus name; empty when nobody owns the name.
    package var owner = ""
    /// `GetServerInformation`: name, vendor, version.
    package var name = ""
    package var vendor = ""
    package var version = ""
    /// `GetCapabilities`.
    package var capabilities: [String] = []
    /// Why it could not be asked, if it could not.
    package var problem: String?
    /// Its do-not-disturb, as last read or announced: dunst's `paused` (`org.dunstproject.cmd0`),
    /// swaync's do not disturb (`org.erikreider.swaync.cc`: `GetDnd`, the `Subscribe` and
    /// `SubscribeV2` signals).
    package var doNotDisturb = false
    /// swaync's inhibition (0.8 and since: an app holds notifications back; `IsInhibited`,
    /// `SubscribeV2`).
    package var inhibited = false

    /// `GetServerInformation`'s name of swaync (SwayNotificationCenter), in 0.7 and since.
    package static let swayncName = "SwayNotificationCenter"
    /// Whether it is dunst, whose `paused` is read and followed.
    package var isDunst: Bool { name.lowercased() == "dunst" }
    /// Whether it is swaync, whose do-not-disturb is read and followed.
    package var isSwaync: Bool { name == Self.swayncName }

    /// Why its do-not-disturb keeps a notification of `urgency` (0 low, 1 normal, 2 critical)
    /// quiet; nil when it does not. Paused, dunst holds every notification back; swaync, in do
    /// not disturb or inhibited, still shows a critical one, which then chimes as it would.
    package func doNotDisturbReason(urgency: UInt32?) -> String? {
        guard doNotDisturb || inhibited else { return nil }
        if isSwaync {
            guard urgency != 2 else { return nil }
            return doNotDisturb ? "swaync's do not disturb is on" : "swaync is inhibited (an app holds notifications back)"
        }
        return "\(isDunst ? "dunst" : name) is paused (do not disturb)"
    }

    /// Servers that play a notification's sound themselves, by `GetServerInformation` name
    /// (lower case): GNOME Shell; KDE Plasma, whether or not its version advertises `sound`.
    package static let knownToSound: Set<String> = ["gnome-shell", "plasma", "kde"]

    package init(owner: String = "", name: String = "", vendor: String = "", version: String = "", capabilities: [String] = []) {
        self.owner = owner
        self.name = name
        self.vendor = vendor
        self.version = version
        self.capabilities = capabilities
    }

    /// Why this server plays a notification's sound itself, under `settings`; nil when it plays
    /// none. `feedbackClient` says whether its connection has called our `TriggerFeedback` (Phosh
    /// triggers a feedbackd event for each notification).
    package func playsItself(_ settings: NotificationSoundSettings, feedbackClient: Bool) -> String? {
        if capabilities.contains("sound") { return "it advertises the 'sound' capability" }
        let lower = name.lowercased()
        if Self.knownToSound.contains(lower) { return "\(name) plays notification sounds itself" }
        if settings.soundingServers.contains(where: { $0.lowercased() == lower }) {
            return "it is named in \(NotificationSoundSettings.serversKey)"
        }
        if feedbackClient { return "it gives notifications their feedback through org.sigxcpu.Feedback (as Phosh does)" }
        return nil
    }
}

/// What a notification plays.
package enum NotificationSound: Sendable, Equatable {
    /// Its `sound-file`.
    case file(String)
    /// Its `sound-name`, or the event its category gives, from the sound theme.
    case named(String)
}

/// The sound rules of the notification bridge: given what a notification asked for and what the
/// server answered, whether it chimes and with what; why not when it does not. Pure apart from
/// the bounded memory of recent apps and stack tags it keeps (`decide` is given the time).
package struct NotificationRules: Sendable {
    /// A notification from an app that posted one less than this many seconds before is part of
    /// a burst: a burst chimes once, at its start.
    package static let burstGap = 1.0
    /// An on-screen display (a stack tag) chimes once while it keeps being replaced, and again
    /// only after this many seconds without.
    package static let stackTagGap = 10.0
    /// The most apps and tags remembered.
    package static let maximumRemembered = 256
    /// Chimes in a row at most, whatever their apps (a sender that names a new app each time, or
    /// many apps at once), and chimes a second after that.
    package static let chimeBurst = 3.0
    package static let chimesPerSecond = 2.0

    /// The categories a notification that asks for no sound is given a sound for, with
    /// `notification-categories = on`: Sound Naming spec names.
    package static let categoryEvents: [String: String] = [
        "im.received": "message-new-instant",
        "email.arrived": "message-new-email",
        "device.added": "device-added",
        "device.removed": "device-removed",
        "network.connected": "network-connectivity-established",
        "network.disconnected": "network-connectivity-lost",
        "transfer.complete": "complete",
        "transfer.error": "dialog-error",
        "presence.online": "service-login",
        "presence.offline": "service-logout",
        "call.incoming": "phone-incoming-call",
    ]

    private var lastFromApp: [String: Double] = [:]
    private var lastOfTag: [String: Double] = [:]
    /// The token bucket of `chimeBurst` and `chimesPerSecond`.
    private var chimeTokens = chimeBurst
    private var tokensAt = -Double.infinity

    package init() {}

    /// How many apps and tags are remembered now.
    package var rememberedCount: Int { lastFromApp.count + lastOfTag.count }

    /// The sound `request` plays, answered by the server with `id` at `now` (seconds, monotonic),
    /// under `settings`; `serverPlays` is why the server plays its own (nil: it plays none).
    /// - Returns: the sound, or why there is none.
    package mutating func decide(
        _ request: NotificationRequest, id: UInt32, now: Double, settings: NotificationSoundSettings, serverPlays: String?
    ) -> Result<NotificationSound, Quiet> {
        if settings.mode == .off { return .failure(Quiet("notification sounds are off (\(NotificationSoundSettings.modeKey)=off)")) }
        if settings.mode == .auto, let serverPlays {
            return .failure(Quiet("the notification server plays its sounds: \(serverPlays)"))
        }
        // Remembered before the rules below read them: a burst or a display goes on while its
        // notifications keep coming, whatever each asked for.
        let previousFromApp = remember(request.app, at: now, in: &lastFromApp)
        let previousOfTag = request.stackTag.flatMap { remember(request.app + "\u{0}" + $0, at: now, in: &lastOfTag) }
        if request.suppressSound { return .failure(Quiet("it asks for no sound (suppress-sound)")) }
        if request.replacesID != 0 && id == request.replacesID {
            return .failure(Quiet("it updates notification \(id), which had its sound"))
        }
        if let previousOfTag, now - previousOfTag < Self.stackTagGap {
            return .failure(Quiet("it replaces an on-screen display of the same tag"))
        }
        if let previousFromApp, now - previousFromApp < Self.burstGap {
            return .failure(Quiet("it is part of a burst from '\(request.app)', which chimed once at its start"))
        }
        let sound: NotificationSound? =
            if let file = request.soundFile { .file(file) } else if let name = request.soundName { .named(name) } else if settings.categories,
                let category = request.category, let event = Self.categoryEvents[category]
            {
                .named(event)
            } else { nil }
        if let sound {
            chimeTokens = min(Self.chimeBurst, chimeTokens + max(0, now - tokensAt) * Self.chimesPerSecond)
            tokensAt = now
            guard chimeTokens >= 1 else {
                return .failure(
                    Quiet("too many notification sounds at once (at most \(Int(Self.chimeBurst)) in a row, \(Int(Self.chimesPerSecond)) a second)"))
            }
            chimeTokens -= 1
            return .success(sound)
        }
        return .failure(
            Quiet(
                settings.categories && request.category != nil
                    ? "it asks for no sound, and its category has none"
                    : "it asks for no sound (no sound-file or sound-name hint)"))
    }

    /// Notes `key` at `now` in `memory`, returning when it was noted before; the oldest entry
    /// goes when `maximumRemembered` are kept.
    private func remember(_ key: String, at now: Double, in memory: inout [String: Double]) -> Double? {
        let previous = memory[key]
        if previous == nil, memory.count >= Self.maximumRemembered,
            let oldest = memory.min(by: { $0.value < $1.value })?.key
        {
            memory[oldest] = nil
        }
        memory[key] = now
        return previous
    }

    /// Why a notification plays nothing.
    package struct Quiet: Error, Sendable, Equatable {
        package let reason: String
        package init(_ reason: String) { self.reason = reason }
    }
}
