import FeedbackServices
import Testing

/// The AudioServices system sound catalog and its link to the shipped theme.
struct CatalogTests {
    /// Every event name in feedbackd's default theme (`data/default.json`, all profiles), plus the
    /// effect names it plays (`cellbroadcast`, `complete`).
    static let feedbackdEvents = [
        "alarm-clock-elapsed", "battery-caution", "bell-terminal", "button-pressed", "button-released",
        "camera-focus", "camera-shutter", "cellbroadcast", "complete", "key-pressed", "key-released",
        "message-missed-email", "message-missed-instant", "message-missed-notification", "message-missed-sms",
        "message-new-cellbroadcast", "message-new-email", "message-new-instant", "message-new-sms",
        "message-sent-instant", "notification-missed-generic", "notification-new-generic", "phone-failure",
        "phone-hangup", "phone-incoming-call", "phone-missed-call", "phone-outgoing-busy", "screen-capture",
        "theme-demo", "timeout-completed", "window-close",
    ]

    static let shippedResolver = makeResolver(theme: SoundThemeSelection.defaultThemeName, bases: [repositoryThemesDirectory])

    @Test func everyCatalogSoundResolvesToItsFileInOurThemeAndDecodes() throws {
        #expect(SystemSoundCatalog.sounds.count > 90)
        var durations: [String: Double] = [:]
        for sound in SystemSoundCatalog.sounds {
            let result = Self.shippedResolver.resolve(sound)
            guard case .resolved(let found) = result else {
                Issue.record("\(sound.id) \(sound.event): \(result)")
                continue
            }
            #expect(found.path == shippedThemeDirectory + "/" + sound.themeFile, "\(sound.id)")
            #expect(found.matchedName == sound.event, "\(sound.id) must not rely on the name fallback in our theme")
            if durations[found.path] == nil {
                let decoded = try SoundDecoder().decode(fileAt: found.path)
                durations[found.path] = decoded.buffer.duration
            }
            let duration = try #require(durations[found.path])
            #expect(duration > 0.02 && duration < 4, "\(sound.id) lasts \(duration) s")
        }
    }

    @Test func everyCatalogSoundResolvesWhateverTheDesktopThemeIs() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("sparse", in: base)
        let theirs = tree.file("sparse/stereo/message-new-instant.oga", in: base)
        let resolver = makeResolver(theme: "sparse", bases: [base, repositoryThemesDirectory])
        for sound in SystemSoundCatalog.sounds {
            #expect(resolvedPath(resolver.resolve(sound)) != nil, "\(sound.id)")
        }
        // The desktop's own sound wins where it has one.
        #expect(resolvedPath(resolver.resolve(try SystemSoundCatalog.sound(for: 1007))) == theirs)
    }

    @Test(arguments: feedbackdEvents)
    func everyFeedbackdEventHasItsOwnFile(event: String) throws {
        let result = try Self.shippedResolver.resolve(event)
        guard case .resolved(let found) = result else { Issue.record("\(event): \(result)"); return }
        #expect(found.matchedName == event)
        #expect(found.theme == SoundThemeSelection.defaultThemeName)
    }

    @Test func documentedNamesAndEvents() throws {
        let expected: [(SystemSoundID, String, String)] = [
            (1000, "new-mail", "message-new-email"), (1001, "mail-sent", "message-sent-email"),
            (1002, "Voicemail", "message-new-voicemail"), (1003, "ReceivedMessage", "message-new-sms"),
            (1004, "SentMessage", "message-sent-instant"), (1005, "alarm", "alarm-clock-elapsed"),
            (1006, "low_power", "battery-low"), (1007, "sms-received1", "message-new-instant"),
            (1057, "Tink", "button-pressed"), (1070, "ct-busy", "phone-outgoing-busy"),
            (1071, "ct-congestion", "phone-outgoing-congestion"), (1074, "ct-call-waiting", "phone-call-waiting"),
            (1100, "lock", "desktop-screen-lock"), (1101, "unlock", "desktop-screen-unlock"),
            (1103, "Tink", "button-pressed"), (1104, "Tock", "key-pressed"), (1105, "Tock", "key-pressed"),
            (1108, "photoShutter", "camera-shutter"), (1200, "dtmf-0", "dtmf-0"), (1209, "dtmf-9", "dtmf-9"),
            (1210, "dtmf-star", "dtmf-star"), (1211, "dtmf-pound", "dtmf-pound"),
            (1325, "Fanfare", "message-new-instant-fanfare"), (1330, "Sherwood_Forest", "message-new-instant-sherwood-forest"),
        ]
        for (id, name, event) in expected {
            let sound = try SystemSoundCatalog.sound(for: id)
            #expect(sound.name == name, "\(id)")
            #expect(sound.event == event, "\(id)")
            #expect(sound.id == id)
        }
        #expect(SystemSoundCatalog.sounds.map(\.id) == SystemSoundCatalog.sounds.map(\.id).sorted())
        #expect(Set(SystemSoundCatalog.sounds.map(\.id)).count == SystemSoundCatalog.sounds.count)
    }

    @Test func vibrationOnlyIDsVibrate() throws {
        for id: SystemSoundID in [1011, 1102, 1311, 1350, 1351, kSystemSoundID_Vibrate] {
            guard case .vibrate = try SystemSoundCatalog.action(for: id) else {
                Issue.record("\(id) should vibrate")
                continue
            }
            #expect(throws: SystemSoundCatalogError(.vibrationOnly, id: id)) { try SystemSoundCatalog.sound(for: id) }
        }
    }

    @Test func unassignedIDsAreErrorsNeverSilence() throws {
        var assigned = 0
        for id in SoundRegistry.systemSoundIDs {
            do {
                _ = try SystemSoundCatalog.action(for: id)
                assigned += 1
            } catch {
                #expect(error.reason == .unassigned, "\(id)")
                #expect(error.description.contains("\(id)"))
            }
        }
        #expect(assigned == SystemSoundCatalog.sounds.count + 5)
        #expect(throws: SystemSoundCatalogError(.unassigned, id: 1017)) { try SystemSoundCatalog.sound(for: 1017) }
        #expect(throws: SystemSoundCatalogError(.notASystemSound, id: 999)) { try SystemSoundCatalog.action(for: 999) }
        #expect(throws: SystemSoundCatalogError(.notASystemSound, id: 1352)) { try SystemSoundCatalog.action(for: 1352) }
        #expect(throws: SystemSoundCatalogError(.notASystemSound, id: 4097)) { try SystemSoundCatalog.action(for: 4097) }
    }
}
