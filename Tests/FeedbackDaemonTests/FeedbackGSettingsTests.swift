import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// feedbackd's GSettings and the desktop's, followed live through a real dconf: `dconf-service`
/// activated on the private bus, `gsettings` (the dconf backend) as settings apps write, and a
/// private schema directory with feedbackd 0.8's schema as its documentation gives the keys (Debian
/// 12's feedbackd 0.0.3 installs no schema). In the suite, so that they share its recording.
extension FeedbackDaemonTests {
    /// feedbackd 0.8's keys: `profile`, `theme`, `prefer-flash`, `allow-important`,
    /// `max-haptic-strength`, and the relocatable per-app `profile`.
    static let feedbackdSchema = """
        <schemalist>
          <schema id="org.sigxcpu.feedbackd" path="/org/sigxcpu/feedbackd/">
            <key name="profile" type="s">
              <choices><choice value='full'/><choice value='quiet'/><choice value='silent'/></choices>
              <default>'full'</default>
            </key>
            <key name="theme" type="s"><default>'default'</default></key>
            <key name="prefer-flash" type="b"><default>false</default></key>
            <key name="allow-important" type="as"><default>['org.sigxcpu.FbdAlertSlider']</default></key>
            <key name="max-haptic-strength" type="d"><range min="0.0" max="1.0"/><default>1.0</default></key>
          </schema>
          <schema id="org.sigxcpu.feedbackd.application">
            <key name="profile" type="s">
              <choices><choice value='full'/><choice value='quiet'/><choice value='silent'/></choices>
              <default>'full'</default>
            </key>
          </schema>
        </schemalist>
        """

    /// A private bus that activates the real `dconf-service`, and the environment for the dconf
    /// backend and a schema directory holding feedbackd's schema (`withSchema`) or nothing of ours.
    private func dconfHarness(withSchema: Bool = true) throws -> (DaemonHarness, [String: String]) {
        let dconfService = "/usr/libexec/dconf-service"
        guard access(dconfService, X_OK) == 0, access("/usr/bin/gsettings", X_OK) == 0,
            access("/usr/bin/glib-compile-schemas", X_OK) == 0
        else {
            throw TestFailure("dconf-service, gsettings or glib-compile-schemas is missing (scripts/setup installs them)")
        }
        let harness = try DaemonHarness(pulse: pulse)
        // The bus watches its service directory, so the file is seen once written.
        _ = harness.directory.write(
            Array("[D-BUS Service]\nName=ca.desrt.dconf\nExec=\(dconfService)\n".utf8),
            to: "services/ca.desrt.dconf.service")
        let schemas = harness.directory.file("schemas")
        mkdir(schemas, 0o700)
        if withSchema {
            _ = harness.directory.write(Array(Self.feedbackdSchema.utf8), to: "schemas/org.sigxcpu.feedbackd.gschema.xml")
        }
        let compiled = runProcess("/usr/bin/glib-compile-schemas", [schemas])
        #expect(compiled.status == 0, "\(compiled.output)")
        return (harness, ["GSETTINGS_BACKEND": "dconf", "GSETTINGS_SCHEMA_DIR": schemas])
    }

    private func gsettings(_ harness: DaemonHarness, _ environment: [String: String], _ arguments: String...)
        -> ProcessResult
    {
        runProcess(
            "/usr/bin/gsettings", arguments, environment: harness.environment(environment).map { "\($0.key)=\($0.value)" })
    }

    private func trigger(_ harness: DaemonHarness, app: String, _ event: String, hints: String = "{}") -> ProcessResult {
        harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", [app, event, hints, "-1"])
    }

    /// The profile the settings file holds (what every process obeys).
    private func storedProfile(_ harness: DaemonHarness) -> FeedbackProfile {
        FeedbackSettings(environment: harness.environment()).profile
    }

    /// Waits up to `timeout` seconds for `condition`; whether it came true.
    private func eventually(_ timeout: Double = 1, _ condition: () -> Bool) -> Bool {
        let deadline = MonotonicClock.now + timeout
        while !condition() {
            guard MonotonicClock.now < deadline else { return false }
            usleep(1_000)
        }
        return true
    }

    /// Whether `event` triggered by `app` is heard, once the sound before it is over (the last
    /// 0.1 s of the recording silent).
    private func heard(_ harness: DaemonHarness, app: String, _ event: String, hints: String = "{}") -> Bool {
        #expect(
            eventually(5) {
                let now = recorder.frameCount
                return now > 4_800 && recorder.peak(from: now - 4_800, to: now) < 0.01
            }, "the sound before did not end")
        let start = recorder.frameCount
        let reply = trigger(harness, app: app, event, hints: hints)
        #expect(reply.status == 0, "\(reply.output)")
        return recorder.firstSound(after: start, timeout: 1) != nil
    }

    @Test func aProfileWrittenToGSettingsAppliesAtOnceAndTheServiceWritesItsOwnBack() throws {
        let (harness, settings) = try dconfHarness()
        let daemon = try harness.startDaemon(environment: settings)
        #expect(daemon.waitForLog(containing: "feedbackd's settings (org.sigxcpu.feedbackd) are read", timeout: 5))
        #expect(heard(harness, app: "org.example.App", "message-new-instant"), "\(daemon.errors)")

        // A settings app writes the profile: the file, the Profile property and the next trigger follow.
        let written = gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", "silent")
        #expect(written.status == 0 && written.output.isEmpty, "\(written.output)")
        #expect(eventually { storedProfile(harness) == .silent }, "\(daemon.errors) \(harness.busErrors)")
        let property = harness.gdbus(
            "call", "--session", "--dest", "org.sigxcpu.Feedback", "--object-path", "/org/sigxcpu/Feedback", "--method",
            "org.freedesktop.DBus.Properties.Get", "org.sigxcpu.Feedback", "Profile")
        #expect(property.output.contains("'silent'"), "\(property.output)")
        #expect(!heard(harness, app: "org.example.App", "message-new-instant"), "silent in GSettings, yet a sound played")

        // The other way: `Profile` set over D-Bus reaches GSettings, as feedbackd writes it there.
        let set = harness.gdbus(
            "call", "--session", "--dest", "org.sigxcpu.Feedback", "--object-path", "/org/sigxcpu/Feedback", "--method",
            "org.freedesktop.DBus.Properties.Set", "org.sigxcpu.Feedback", "Profile", "<'full'>")
        #expect(set.status == 0, "\(set.output)")
        #expect(
            eventually { gsettings(harness, settings, "get", "org.sigxcpu.feedbackd", "profile").output == "'full'\n" },
            "\(daemon.errors)")
        #expect(heard(harness, app: "org.example.App", "message-new-instant"))
    }

    /// feedbackd's `theme` names the user's theme (`~/.config/feedbackd/themes/NAME.json`, as
    /// `fbd_theme_expander_find_user_theme_path` finds it): taken at start, and at once when a
    /// settings app writes another; a name with no theme leaves the default one, and says so.
    @Test func theThemeKeyChoosesTheUsersThemeAtStartAndLive() throws {
        let (harness, settings) = try dconfHarness()
        _ = runProcess("/bin/mkdir", ["-p", harness.directory.file("home/.config/feedbackd/themes")])
        for (name, event) in [("first", "first-event"), ("second", "second-event")] {
            _ = harness.directory.write(
                Array(#"""
                    { "name": "\#(name)", "parent-name": "default", "profiles": [ { "name": "full", "feedbacks": [
                      { "event-name": "\#(event)", "type": "Dummy", "duration": 50 } ] } ] }
                    """#.utf8), to: "home/.config/feedbackd/themes/\(name).json")
        }
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "theme", "first").status == 0)
        let daemon = try harness.startDaemon(environment: settings)
        let monitor = try harness.monitor()
        #expect(daemon.waitForLog(containing: "theme changed: feedback theme 'first'", timeout: 5), "\(daemon.errors)")
        /// How feedback for `event` ended (0 the Dummy ran, 4294967295 no such event).
        func ended(_ event: String) -> UInt32? {
            let reply = trigger(harness, app: "org.example.App", event)
            guard let id = reply.output.split(separator: "uint32 ").last.flatMap({ UInt32($0.filter(\.isNumber)) }) else {
                Issue.record("\(reply.output) \(reply.errors)")
                return nil
            }
            return monitor.ended(id, timeout: 5)
        }
        #expect(ended("first-event") == 0, "\(daemon.errors)")
        // The parent chain still ends in the default theme.
        #expect(ended("second-event") == UInt32.max)
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "theme", "second").status == 0)
        #expect(daemon.waitForLog(containing: "theme changed: feedback theme 'second'", timeout: 2), "\(daemon.errors)")
        #expect(ended("second-event") == 0, "\(daemon.errors)")
        #expect(ended("first-event") == UInt32.max)
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "theme", "nowhere").status == 0)
        #expect(daemon.waitForLog(containing: "no feedback theme \"nowhere\" in \(harness.directory.file("home/.config/feedbackd/themes")): the default one is used", timeout: 2), "\(daemon.errors)")
        #expect(daemon.waitForLog(containing: "theme changed: feedback theme 'feedbackservices'", timeout: 2), "\(daemon.errors)")
        #expect(ended("second-event") == UInt32.max)
    }

    /// `$FEEDBACK_THEME` names the theme file whatever `theme` says, at start and after a change.
    @Test func feedbackThemeOutranksTheThemeKey() throws {
        let (harness, settings) = try dconfHarness()
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "theme", "first").status == 0)
        let file = harness.directory.write(
            Array(#"{ "name": "pinned", "profiles": [ { "name": "full", "feedbacks": [ { "event-name": "pinned-event", "type": "Dummy" } ] } ] }"#.utf8),
            to: "pinned.json")
        var environment = settings
        environment["FEEDBACK_THEME"] = file
        let daemon = try harness.startDaemon(environment: environment)
        #expect(daemon.waitForLog(containing: "feedbackd's settings (org.sigxcpu.feedbackd) are read and followed", timeout: 5))
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "theme", "second").status == 0)
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", "quiet").status == 0)
        // The profile's change is seen, so the theme's was read too.
        #expect(eventually(2) { storedProfile(harness) == .quiet }, "\(daemon.errors)")
        #expect(!daemon.errors.contains("theme changed"), "\(daemon.errors)")
        #expect(daemon.errors.contains("feedback theme 'pinned'"), "\(daemon.errors)")
    }

    @Test func perAppLevelsAllowImportantAndEventSoundsFollowGSettingsLive() throws {
        let (harness, settings) = try dconfHarness()
        let clocks = "org.sigxcpu.feedbackd.application:/org/sigxcpu/feedbackd/application/org-example-quietapp/"
        #expect(gsettings(harness, settings, "set", clocks, "profile", "silent").status == 0)
        let daemon = try harness.startDaemon(environment: settings)
        #expect(daemon.waitForLog(containing: "feedbackd's settings (org.sigxcpu.feedbackd) are read", timeout: 5))

        // The app's own level (its id munged as feedbackd does) lowers its feedbacks only.
        #expect(!heard(harness, app: "org.example.QuietApp", "message-new-instant"), "\(daemon.errors)")
        #expect(daemon.waitForLog(containing: "the app's own level", timeout: 2), "\(daemon.errors)")
        #expect(heard(harness, app: "org.example.LoudApp", "message-new-instant"), "\(daemon.errors)")
        // The first app with no setting, read with gsettings, showed the schema installed and its
        // default: from then on levels are read from dconf in the service's process.
        #expect(
            daemon.waitForLog(
                containing: "per-app levels are read from dconf in this process (libdconf) from now on; an app with no setting is full",
                timeout: 2), "\(daemon.errors)")
        let otherQuiet = "org.sigxcpu.feedbackd.application:/org/sigxcpu/feedbackd/application/org-example-otherquietapp/"
        #expect(gsettings(harness, settings, "set", otherQuiet, "profile", "silent").status == 0)
        #expect(!heard(harness, app: "org.example.OtherQuietApp", "message-new-instant"), "\(daemon.errors)")
        #expect(heard(harness, app: "org.example.OtherLoudApp", "message-new-instant"), "\(daemon.errors)")
        // Changed while the service runs: the next feedback obeys.
        #expect(gsettings(harness, settings, "set", clocks, "profile", "full").status == 0)
        #expect(eventually(2) { heard(harness, app: "org.example.QuietApp", "message-new-instant") }, "\(daemon.errors)")

        // allow-important names who may override the level, replacing the built-in list.
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", "quiet").status == 0)
        #expect(eventually { storedProfile(harness) == .quiet })
        let important = "{'important': <true>}"
        #expect(!heard(harness, app: "org.example.Alarm", "message-new-instant", hints: important))
        #expect(
            gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "allow-important", "['org.example.Alarm']").status
                == 0)
        #expect(
            eventually(2) { heard(harness, app: "org.example.Alarm", "message-new-instant", hints: important) },
            "\(daemon.errors)")
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", "full").status == 0)
        #expect(eventually { storedProfile(harness) == .full })

        // The desktop's event-sounds switch, live too (no SIGHUP).
        #expect(gsettings(harness, settings, "set", "org.gnome.desktop.sound", "event-sounds", "false").status == 0)
        #expect(eventually(2) { !heard(harness, app: "org.example.LoudApp", "message-new-instant") }, "\(daemon.errors)")
        #expect(gsettings(harness, settings, "set", "org.gnome.desktop.sound", "event-sounds", "true").status == 0)
        #expect(eventually(2) { heard(harness, app: "org.example.LoudApp", "message-new-instant") }, "\(daemon.errors)")
    }

    @Test func notificationSoundsObeyTheAppsLevelAndTheEventSoundsSwitch() throws {
        let (harness, settings) = try dconfHarness()
        let quietApp = "org.sigxcpu.feedbackd.application:/org/sigxcpu/feedbackd/application/org-example-quietapp/"
        #expect(gsettings(harness, settings, "set", quietApp, "profile", "silent").status == 0)
        let daemon = try harness.startDaemon(environment: settings)
        let server = try harness.startNotificationServer(name: "plain", capabilities: ["body"])
        defer { _ = server }
        #expect(daemon.waitForLog(containing: "notification server plain", timeout: 5), "\(daemon.errors)")
        // The per-app level, keyed on desktop-entry (the app id), not on app_name.
        let sound = "string:sound-name:message-new-instant"
        harness.notify("-a", "Quiet", "-h", "string:desktop-entry:org.example.QuietApp", "-h", sound)
        #expect(
            daemon.waitForLog(containing: "from 'org.example.QuietApp' plays no sound: the app's own level is silent", timeout: 3),
            "\(daemon.errors)")
        let start = recorder.frameCount
        harness.notify("-a", "Loud", "-h", "string:desktop-entry:org.example.LoudApp", "-h", sound)
        #expect(recorder.firstSound(after: start, timeout: 3) != nil, "\(daemon.errors)")
        // The desktop's event-sounds switch, live.
        #expect(gsettings(harness, settings, "set", "org.gnome.desktop.sound", "event-sounds", "false").status == 0)
        var attempt = 0
        #expect(
            eventually(3) {
                attempt += 1
                harness.notify("-a", "later\(attempt)", "-h", sound)
                return daemon.waitForLog(containing: "from 'later\(attempt)' plays no sound: event sounds are off", timeout: 0.5)
            }, "\(daemon.errors)")
    }

    @Test func preferFlashBlinksTheCameraFlashLEDAndFollowsItsSetting() throws {
        let tree = FakeSysfs()
        try tree.add("red:status", udev: ["FEEDBACKD_TYPE": "led"])
        // A flash LED as the kernel's LED flash class shows it (what feedbackd probes for).
        try tree.add("white:flash")
        tree.write(tree.root + "/sys/class/leds/white:flash/flash_strobe", "0\n")
        tree.write(tree.root + "/sys/class/leds/white:flash/flash_brightness", "0\n")
        let (harness, settings) = try dconfHarness()
        let theme = harness.directory.write(
            Array(
                #"{ "name": "leds", "profiles": [ { "name": "silent", "feedbacks": [ { "event-name": "blink", "type": "Led", "color": "red", "frequency": 2000 } ] } ] }"#
                    .utf8), to: "leds.json")
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "prefer-flash", "true").status == 0)
        var environment = settings
        environment["FEEDBACK_THEME"] = theme
        let daemon = try harness.startDaemon(["--sysfs-root", tree.root], environment: environment)
        // A client holding a looping feedback (timeout 0): the LED blinks until it is killed.
        func blinks(_ led: String) throws -> Bool {
            let holder = try harness.python("hold", "blink", holdStdin: true)
            defer {
                holder.signal(SIGKILL)
                holder.wait(timeout: 5)
            }
            _ = holder.waitForOutput(containing: "id ", timeout: 10)
            return eventually(3) { tree.read(led, "trigger") == "pattern" }
        }
        #expect(try blinks("white:flash"), "\(daemon.errors)")
        #expect(tree.read("red:status", "trigger") == "[none] timer pattern", "the notification LED is left alone")

        // Turned off while the service runs: the notification LED again.
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "prefer-flash", "false").status == 0)
        #expect(eventually(2) { (try? blinks("red:status")) == true }, "\(daemon.errors)")
    }

    /// GSettings is the profile's home where feedbackd's schema is: the service takes it at start
    /// over the file, and `feedbackctl profile` with no service running writes it, so the next
    /// start keeps what the user chose.
    @Test func theServiceTakesGSettingsProfileAtStartAndFeedbackctlWritesIt() throws {
        let (harness, settings) = try dconfHarness()
        try FeedbackSettings(environment: harness.environment()).store(.full)
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", "quiet").status == 0)
        let daemon = try harness.startDaemon(environment: settings)
        #expect(storedProfile(harness) == .quiet, "\(daemon.errors)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 5) == 0)
        let command = runProcess(
            builtProduct("feedbackctl"), ["profile", "silent"],
            environment: harness.environment(settings).map { "\($0.key)=\($0.value)" })
        #expect(command.status == 0, "\(command.output)")
        #expect(gsettings(harness, settings, "get", "org.sigxcpu.feedbackd", "profile").output == "'silent'\n")
        let again = try harness.startDaemon(environment: settings)
        #expect(storedProfile(harness) == .silent, "\(again.errors)")
    }

    /// `Profile` set: the reply comes before the `PropertiesChanged` it causes, as from feedbackd
    /// (GDBus emits it from an idle). libfeedback's own test sets the profile, leaves when it sees
    /// the change, and failed (fatal warning: the Set's connection closed) in 1 of 2 runs when the
    /// change came first.
    @Test func aProfileSetIsAnsweredBeforeItsChangeIsAnnounced() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let script = """
            import sys
            from gi.repository import Gio, GLib
            bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            order, loop = [], GLib.MainLoop()
            def seen(what):
                order.append(what)
                if len(order) == 2: loop.quit()
            bus.signal_subscribe('org.sigxcpu.Feedback', 'org.freedesktop.DBus.Properties', 'PropertiesChanged',
                '/org/sigxcpu/Feedback', None, 0, lambda *args: seen('changed'))
            def answered(connection, result):
                connection.call_finish(result)
                seen('reply')
            bus.call('org.sigxcpu.Feedback', '/org/sigxcpu/Feedback', 'org.freedesktop.DBus.Properties', 'Set',
                GLib.Variant('(ssv)', ('org.sigxcpu.Feedback', 'Profile', GLib.Variant('s', sys.argv[1]))),
                None, 0, -1, None, answered)
            GLib.timeout_add(5000, loop.quit)
            loop.run()
            print(' '.join(order))
            """
        for profile in ["quiet", "full", "silent", "full"] {
            let run = runProcess(
                DaemonTools.python, ["-c", script, profile],
                environment: harness.environment().map { "\($0.key)=\($0.value)" })
            #expect(run.output == "reply changed\n", "\(profile): \(run.output)")
        }
    }

    /// Change → effect: from just before `gsettings set` starts (so the writer's own start is in
    /// it) to the settings file holding the new profile, which the next trigger reads; 100 changes,
    /// each seen. The figures are printed for docs/service.md; the check is that each arrives
    /// within 2 s. scripts/test runs it alone, after the main suite, with the other timing checks:
    /// each change is a `gsettings` process of the test's and one of the service's, which the main
    /// suite's servers, races and floods delay by seconds on two cores.
    @Test func everyGSettingsChangeOfAHundredArrives() throws {
        let (harness, settings) = try dconfHarness()
        let daemon = try harness.startDaemon(environment: settings)
        #expect(daemon.waitForLog(containing: "feedbackd's settings (org.sigxcpu.feedbackd) are read", timeout: 5))
        var latencies: [Double] = []
        for round in 0..<100 {
            let profile: FeedbackProfile = round % 2 == 0 ? .quiet : .full
            let start = MonotonicClock.now
            #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", profile.rawValue).status == 0)
            #expect(eventually(2) { storedProfile(harness) == profile }, "round \(round): \(daemon.errors)")
            latencies.append((MonotonicClock.now - start) * 1000)
        }
        latencies.sort()
        func ms(_ value: Double) -> String { "\((value * 10).rounded() / 10) ms" }
        print(
            "GSettings change → effect, 100 changes: median \(ms(latencies[49])), p90 \(ms(latencies[89])), max \(ms(latencies[99]))"
        )
    }
}

extension FeedbackDaemonTests {
    /// Following GSettings live costs no wake-ups: with a real dconf-service, feedbackd's schema,
    /// a change followed, two apps' levels read (the first with `gsettings`, the next from dconf's
    /// databases by libdconf in the service's process) and a level changed, the service's threads
    /// sleep once its stream has closed, whatever libdconf started with them.
    @Test func anIdleServiceFollowingDconfSleeps() throws {
        let (harness, settings) = try dconfHarness()
        let daemon = try harness.startDaemon(["--idle-timeout", "1"], environment: settings)
        #expect(daemon.waitForLog(containing: "feedbackd's settings (org.sigxcpu.feedbackd) are read", timeout: 5))
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", "quiet").status == 0)
        #expect(eventually(2) { storedProfile(harness) == .quiet }, "\(daemon.errors)")
        #expect(gsettings(harness, settings, "set", "org.sigxcpu.feedbackd", "profile", "full").status == 0)
        #expect(eventually(2) { storedProfile(harness) == .full }, "\(daemon.errors)")
        #expect(heard(harness, app: "org.example.FirstApp", "message-new-instant"), "\(daemon.errors)")
        #expect(heard(harness, app: "org.example.SecondApp", "message-new-instant"), "\(daemon.errors)")
        #expect(
            daemon.waitForLog(containing: "per-app levels are read from dconf in this process (libdconf)", timeout: 2),
            "\(daemon.errors)")
        let second = "org.sigxcpu.feedbackd.application:/org/sigxcpu/feedbackd/application/org-example-secondapp/"
        #expect(gsettings(harness, settings, "set", second, "profile", "silent").status == 0)
        #expect(eventually(2) { !heard(harness, app: "org.example.SecondApp", "message-new-instant") }, "\(daemon.errors)")
        // The stream closes a second after the last sound; the play's threads end before that.
        usleep(3_000_000)
        let before = Self.wakeUps(daemon.pid)
        usleep(3_000_000)
        let after = Self.wakeUps(daemon.pid)
        let woke = Self.woke(between: before, and: after)
        #expect(woke.isEmpty, "wake-ups while idle, following dconf: \(woke.sorted())")
        print("idle service following dconf: \(woke.count) of \(after.count) threads woke in 3 s (\(after.keys.sorted().joined(separator: ", ")))")
    }
}
