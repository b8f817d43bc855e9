import FeedbackBus
import FeedbackDaemon
import Testing

/// The notification bridge's rules, offline: each rule's answer for a notification, exactly.
struct NotificationRulesTests {
    private func request(_ hints: [String: BusValue], app: String = "chat", replaces: UInt32 = 0) -> NotificationRequest {
        NotificationRequest(appName: app, replacesID: replaces, hints: hints)
    }

    private let soundName: [String: BusValue] = ["sound-name": .string("message-new-instant")]

    @Test func aNotificationPlaysTheSoundItAsksFor() {
        var rules = NotificationRules()
        let settings = NotificationSoundSettings()
        #expect(rules.decide(request(soundName), id: 1, now: 0, settings: settings, serverPlays: nil) == .success(.named("message-new-instant")))
        // sound-file before sound-name.
        let both = request(["sound-file": .string("/a.oga"), "sound-name": .string("bell")], app: "mail")
        #expect(rules.decide(both, id: 2, now: 0, settings: settings, serverPlays: nil) == .success(.file("/a.oga")))
    }

    @Test func suppressSoundNoSoundAndServersThatPlayKeepItQuiet() {
        var rules = NotificationRules()
        let settings = NotificationSoundSettings()
        var suppressed = soundName
        suppressed["suppress-sound"] = .boolean(true)
        #expect(
            rules.decide(request(suppressed), id: 1, now: 0, settings: settings, serverPlays: nil)
                == .failure(.init("it asks for no sound (suppress-sound)")))
        #expect(
            rules.decide(request([:], app: "b"), id: 2, now: 0, settings: settings, serverPlays: nil)
                == .failure(.init("it asks for no sound (no sound-file or sound-name hint)")))
        #expect(
            rules.decide(request(soundName, app: "c"), id: 3, now: 0, settings: settings, serverPlays: "it advertises the 'sound' capability")
                == .failure(.init("the notification server plays its sounds: it advertises the 'sound' capability")))
        // on: whatever the server; off: never.
        var on = NotificationSoundSettings()
        on.mode = .on
        #expect(rules.decide(request(soundName, app: "d"), id: 4, now: 0, settings: on, serverPlays: "x") == .success(.named("message-new-instant")))
        var off = NotificationSoundSettings()
        off.mode = .off
        #expect(
            rules.decide(request(soundName, app: "e"), id: 5, now: 0, settings: off, serverPlays: nil)
                == .failure(.init("notification sounds are off (notification-sounds=off)")))
    }

    @Test func categoriesPlayOnlyWhenTurnedOn() {
        var rules = NotificationRules()
        let im = request(["category": .string("im.received")])
        #expect((try? rules.decide(im, id: 1, now: 0, settings: NotificationSoundSettings(), serverPlays: nil).get()) == nil)
        let settings = NotificationSoundSettings(values: ["notification-categories": "on"])
        #expect(rules.decide(im, id: 2, now: 5, settings: settings, serverPlays: nil) == .success(.named("message-new-instant")))
        let unknown = request(["category": .string("x-vendor.thing")], app: "other")
        #expect(
            rules.decide(unknown, id: 3, now: 5, settings: settings, serverPlays: nil)
                == .failure(.init("it asks for no sound, and its category has none")))
    }

    @Test func updatesDisplaysAndBurstsChimeOnce() {
        var rules = NotificationRules()
        let settings = NotificationSoundSettings()
        // An update the server answered with the id it replaced: no second chime; one it gave a
        // new id (the old one was gone) is new.
        #expect((try? rules.decide(request(soundName, replaces: 7), id: 7, now: 0, settings: settings, serverPlays: nil).get()) == nil)
        #expect(rules.decide(request(soundName, app: "x", replaces: 7), id: 8, now: 0, settings: settings, serverPlays: nil) == .success(.named("message-new-instant")))
        // A burst from one app (keyed on desktop-entry, not app_name): the first only, and again
        // after a quiet gap.
        var burst = soundName
        burst["desktop-entry"] = .string("org.example.Chat")
        let portal = request(burst, app: "Chat")
        #expect(rules.decide(portal, id: 10, now: 10, settings: settings, serverPlays: nil) == .success(.named("message-new-instant")))
        for (index, time) in [10.2, 10.9, 11.5].enumerated() {
            #expect(
                rules.decide(portal, id: UInt32(11 + index), now: time, settings: settings, serverPlays: nil)
                    == .failure(.init("it is part of a burst from 'org.example.Chat', which chimed once at its start")))
        }
        #expect(rules.decide(portal, id: 20, now: 12.6, settings: settings, serverPlays: nil) == .success(.named("message-new-instant")))
        // An on-screen display replaced under its tag chimes once while it keeps being replaced.
        var volume = ["sound-name": BusValue.string("audio-volume-change"), "x-canonical-private-synchronous": .string("volume")]
        #expect(rules.decide(request(volume, app: "osd"), id: 30, now: 20, settings: settings, serverPlays: nil) == .success(.named("audio-volume-change")))
        #expect(
            rules.decide(request(volume, app: "osd"), id: 31, now: 22, settings: settings, serverPlays: nil)
                == .failure(.init("it replaces an on-screen display of the same tag")))
        volume["x-canonical-private-synchronous"] = nil
        volume["x-dunst-stack-tag"] = .string("volume")
        #expect(rules.decide(request(volume, app: "osd"), id: 32, now: 40, settings: settings, serverPlays: nil) == .success(.named("audio-volume-change")))
    }

    @Test func manyAppsAtOnceChimeWithinTheBudgetAndMemoryIsBounded() {
        var rules = NotificationRules()
        let settings = NotificationSoundSettings()
        // 10,000 apps, each once, 1,000 a second (a sender naming a new app each time): 3 in a
        // row, then 2 a second; the memory keeps at most its bound (the oldest are forgotten).
        var chimes: [Double] = []
        for index in 0..<10_000 {
            let now = Double(index) * 0.001
            if case .success = rules.decide(request(soundName, app: "app\(index)"), id: UInt32(index + 1), now: now, settings: settings, serverPlays: nil) {
                chimes.append(now)
            }
        }
        #expect(chimes.count == 3 + 2 * 10 - 1 || chimes.count == 3 + 2 * 10, "\(chimes.count) chimes: \(chimes.prefix(8))")
        #expect(chimes.prefix(3) == [0, 0.001, 0.002])
        #expect(rules.rememberedCount <= NotificationRules.maximumRemembered * 2)
        // Later, a quiet app chimes again.
        #expect(rules.decide(request(soundName, app: "late"), id: 20_000, now: 30, settings: settings, serverPlays: nil) == .success(.named("message-new-instant")))
    }

    @Test func settingsAreReadAndBadValuesSaid() {
        let settings = NotificationSoundSettings(values: [
            "notification-sounds": "ON", "notification-sounding-servers": " mako ,  fnott,,", "notification-categories": "yes",
        ])
        #expect(settings.mode == .on && settings.soundingServers == ["mako", "fnott"] && settings.categories && settings.problems.isEmpty)
        let bad = NotificationSoundSettings(values: ["notification-sounds": "loud", "notification-categories": "maybe"])
        #expect(bad.mode == .auto && !bad.categories)
        #expect(bad.problems == ["notification-sounds=loud is not auto, on or off", "notification-categories=maybe is not on or off"])
    }

    @Test func whichServersPlayTheirOwnSounds() {
        let plain = NotificationServer(owner: ":1.4", name: "dunst", vendor: "knopwob", version: "1.9.0", capabilities: ["body", "actions"])
        let settings = NotificationSoundSettings()
        #expect(plain.playsItself(settings, feedbackClient: false) == nil)
        #expect(plain.playsItself(settings, feedbackClient: true) != nil)
        #expect(plain.playsItself(NotificationSoundSettings(values: ["notification-sounding-servers": "Dunst"]), feedbackClient: false) == "it is named in notification-sounding-servers")
        var sounding = plain
        sounding.capabilities.append("sound")
        #expect(sounding.playsItself(settings, feedbackClient: false) == "it advertises the 'sound' capability")
        for name in ["gnome-shell", "Plasma"] {
            #expect(NotificationServer(owner: ":1.2", name: name).playsItself(settings, feedbackClient: false) != nil, "\(name)")
        }
    }

    /// Paused, dunst holds every notification back: none chimes. In do not disturb (or
    /// inhibited) swaync still shows a critical one: that one chimes. Out of it, all do.
    @Test func aServersDoNotDisturbQuietsWhatItHides() {
        var dunst = NotificationServer(owner: ":1.1", name: "dunst")
        var swaync = NotificationServer(owner: ":1.2", name: "SwayNotificationCenter")
        for urgency: UInt32? in [nil, 0, 1, 2] {
            #expect(dunst.doNotDisturbReason(urgency: urgency) == nil)
            #expect(swaync.doNotDisturbReason(urgency: urgency) == nil)
        }
        dunst.doNotDisturb = true
        swaync.doNotDisturb = true
        for urgency: UInt32? in [nil, 0, 1, 2] {
            #expect(dunst.doNotDisturbReason(urgency: urgency) == "dunst is paused (do not disturb)")
        }
        for urgency: UInt32? in [nil, 0, 1] {
            #expect(swaync.doNotDisturbReason(urgency: urgency) == "swaync's do not disturb is on")
        }
        #expect(swaync.doNotDisturbReason(urgency: 2) == nil)
        swaync.doNotDisturb = false
        swaync.inhibited = true
        #expect(swaync.doNotDisturbReason(urgency: 1) == "swaync is inhibited (an app holds notifications back)")
        #expect(swaync.doNotDisturbReason(urgency: 2) == nil)
    }
}
