import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// What feedbackd's own sources and tests define, on our service: the cases of feedbackd's
/// `tests/test-lfb-integration.c` (Dummy feedbacks, end reasons, `InvalidArgs` for an empty event,
/// the `Profile` property) driven by libfeedback from Python on a theme of our own written like
/// feedbackd's `tests/data/test.json`, checked on Debian's feedbackd too; and device themes chosen
/// by the device tree.
@Suite(.serialized, .enabled(if: DaemonTools.shouldRun))
struct FeedbackdBehaviourTests {
    let pulse: PulseAudioTestServer

    init() throws {
        pulse = try PulseAudioTestServer.shared(named: "daemon")
    }

    /// Dummies as feedbackd's test theme has them (one ending at once, one of 10 s), a short one,
    /// and a `silent` profile with no `feedbacks`.
    static let theme = #"""
        { "name": "default", "profiles": [
          { "name": "full", "feedbacks": [
            { "type": "Dummy", "event-name": "dummy-0" },
            { "type": "Dummy", "event-name": "dummy-10", "duration": 10000 },
            { "type": "Dummy", "event-name": "dummy-short", "duration": 400 } ] },
          { "name": "quiet", "feedbacks": [
            { "type": "Dummy", "event-name": "dummy-0" },
            { "type": "Dummy", "event-name": "dummy-10", "duration": 10000 } ] },
          { "name": "silent" } ] }
        """#

    /// libfeedback's calls in the order feedbackd's integration test makes them, one line each:
    /// `NAME reason R state S [seconds T]`, or `NAME error MESSAGE invalid-args BOOL`.
    static let cases = """
        import sys, time
        import gi
        gi.require_version('Lfb', '0.0')
        from gi.repository import Lfb, GLib, Gio
        Lfb.init('org.example.FeedbackdCases')
        loop = GLib.MainLoop()
        def wait(ev, seconds=12):
            if ev.get_state() == Lfb.EventState.ENDED:
                return
            fired = []
            def expire():
                fired.append(True)
                loop.quit()
                return False
            handler = ev.connect('feedback-ended', lambda *a: loop.quit())
            source = GLib.timeout_add(int(seconds * 1000), expire)
            loop.run()
            if not fired:
                GLib.source_remove(source)
            ev.disconnect(handler)
        def say(name, ev, began=None):
            extra = '' if began is None else ' seconds %.3f' % (time.monotonic() - began)
            print(name, 'reason', int(ev.get_end_reason()), 'state', int(ev.get_state()), extra, flush=True)
        # event_sync: a Dummy without duration ends at once; one of 10 s runs until ended.
        e0 = Lfb.Event.new('dummy-0'); e0.trigger_feedback(); wait(e0); say('sync-0', e0)
        e10 = Lfb.Event.new('dummy-10'); e10.trigger_feedback()
        time.sleep(0.5); print('sync-10 running', int(e10.get_state()) == int(Lfb.EventState.RUNNING), flush=True)
        e10.end_feedback(); wait(e10); say('sync-10', e10)
        # event_async/success: timeout 1, profile quiet, ended through the async call.
        ea = Lfb.Event.new('dummy-10'); ea.set_timeout(1); ea.set_feedback_profile('quiet')
        def triggered(ev, res, *a):
            print('async triggered', ev.trigger_feedback_finish(res), int(ev.get_state()) == int(Lfb.EventState.RUNNING), flush=True)
            loop.quit()
        ea.trigger_feedback_async(None, triggered); loop.run()
        def ended(ev, res, *a):
            print('async end', ev.end_feedback_finish(res), flush=True)
            loop.quit()
        ea.end_feedback_async(None, ended); loop.run(); wait(ea); say('async', ea)
        # event_async/error: an empty event name.
        ee = Lfb.Event.new('')
        def refused(ev, res, *a):
            try:
                ev.trigger_feedback_finish(res)
                print('empty accepted', flush=True)
            except GLib.Error as error:
                print('empty error', error.message, 'invalid-args', error.matches(Gio.dbus_error_quark(), Gio.DBusError.INVALID_ARGS), flush=True)
            loop.quit()
        ee.trigger_feedback_async(None, refused); loop.run()
        # event_not_found, sync and async.
        en = Lfb.Event.new('test-does-not-exist'); en.trigger_feedback(); wait(en); say('not-found', en)
        ena = Lfb.Event.new('test-does-not-exist')
        ena.trigger_feedback_async(None, lambda ev, res, *a: (ev.trigger_feedback_finish(res), loop.quit())); loop.run()
        wait(ena); say('not-found-async', ena)
        # A Dummy's duration, once (timeout -1), and a looping one, which runs until ended.
        began = time.monotonic(); es = Lfb.Event.new('dummy-short'); es.trigger_feedback(); wait(es); say('short', es, began)
        el = Lfb.Event.new('dummy-short'); el.set_timeout(0); el.trigger_feedback()
        time.sleep(1.0); print('loop running', int(el.get_state()) == int(Lfb.EventState.RUNNING), flush=True)
        el.end_feedback(); wait(el); say('loop', el)
        # profile: the property, set and announced.
        print('profile', Lfb.get_feedback_profile(), flush=True)
        proxy = Lfb.get_proxy()
        proxy.connect('notify::profile', lambda *a: loop.quit())
        Lfb.set_feedback_profile('quiet')
        source = GLib.timeout_add(5000, loop.quit); loop.run()
        print('profile', Lfb.get_feedback_profile(), flush=True)
        """

    /// Starts `service` (ours, or `feedbackd`, the reference) on `harness`'s bus with the theme;
    /// returns the reference's process, which lives as long as it is kept.
    func start(_ service: String, on harness: DaemonHarness) throws -> ChildProcess? {
        let theme = harness.directory.write(Array(Self.theme.utf8), to: "test.json")
        guard service == "feedbackd" else {
            try harness.startDaemon(environment: ["FEEDBACK_THEME": theme])
            return nil
        }
        // Its profile in memory, as feedbackd's own test keeps it.
        let feedbackd = try ChildProcess(
            DaemonTools.feedbackd, [], environment: harness.environment(["FEEDBACK_THEME": theme, "GSETTINGS_BACKEND": "memory"]))
        let deadline = MonotonicClock.now + 10
        while harness.ownerPID() != feedbackd.pid && MonotonicClock.now < deadline { usleep(20_000) }
        try #require(harness.ownerPID() == feedbackd.pid, "feedbackd did not start: \(feedbackd.errors)")
        return feedbackd
    }

    /// The cases on our service, and on Debian's feedbackd (0.0.3), the reference, whose answers
    /// must be the same.
    @Test(arguments: ["feedbackservicesd", "feedbackd"])
    func feedbackdsIntegrationCasesPass(service: String) throws {
        let harness = try DaemonHarness(pulse: pulse)
        let reference = try start(service, on: harness)
        defer { withExtendedLifetime(reference) {} }
        let client = try ChildProcess(
            DaemonTools.python, ["-u", "-c", Self.cases], environment: harness.environment())
        #expect(client.wait(timeout: 40) == 0, "\(client.output) \(client.errors)")
        let lines = client.output.split(separator: "\n").map(String.init)
        /// The end line of case `name`: `NAME reason R state S …`.
        func ended(_ name: String) -> String { lines.first { $0.hasPrefix(name + " reason ") } ?? "(none)" }
        // LfbEventEndReason: 0 natural, 1 expired, 2 explicit, -1 not found; LfbEventState 2 ended.
        #expect(ended("sync-0").hasPrefix("sync-0 reason 0 state 2"), "\(client.output)")
        #expect(lines.contains("sync-10 running True"), "\(client.output)")
        #expect(ended("sync-10").hasPrefix("sync-10 reason 2 state 2"), "\(client.output)")
        #expect(lines.contains("async triggered True True"), "\(client.output)")
        #expect(lines.contains("async end True"), "\(client.output)")
        #expect(ended("async").hasPrefix("async reason 2 state 2"), "\(client.output)")
        #expect(lines.contains { $0.hasPrefix("empty error ") && $0.hasSuffix(" invalid-args True") }, "\(client.output)")
        #expect(ended("not-found").hasPrefix("not-found reason -1 state 2"), "\(client.output)")
        #expect(ended("not-found-async").hasPrefix("not-found-async reason -1 state 2"), "\(client.output)")
        #expect(ended("short").hasPrefix("short reason 0 state 2"), "\(client.output)")
        let seconds = Double(ended("short").split(separator: " ").last ?? "") ?? 0
        #expect(seconds >= 0.4 && seconds < 2, "a 400 ms Dummy ran \(seconds) s")
        #expect(lines.contains("loop running True"), "\(client.output)")
        #expect(ended("loop").hasPrefix("loop reason 2 state 2"), "\(client.output)")
        #expect(lines.filter { $0.hasPrefix("profile ") } == ["profile full", "profile quiet"], "\(client.output)")
    }

    /// The arguments feedbackd refuses with `InvalidArgs` (an empty app id or event), and a
    /// timeout below −1, which it takes as −1: on ours and on feedbackd.
    @Test(arguments: ["feedbackservicesd", "feedbackd"])
    func feedbackdsInvalidArgumentsAreRefusedAsItRefusesThem(service: String) throws {
        let harness = try DaemonHarness(pulse: pulse)
        let reference = try start(service, on: harness)
        defer { withExtendedLifetime(reference) {} }
        let monitor = try harness.monitor()
        for (app, event) in [("", "dummy-0"), ("org.example.App", "")] {
            let refused = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", [app, event, "{}", "-1"])
            #expect(refused.status != 0)
            #expect(refused.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "'\(app)' '\(event)': \(refused.errors)")
        }
        // From a client that stays (feedbackd ends a leaving client's feedbacks, reason 2).
        let client = try harness.python("hold", "dummy-short", "-7", holdStdin: true)
        let line = try #require(client.waitForOutput(containing: "id ", timeout: 10), "\(client.errors)")
        let id = try #require(UInt32(line.dropFirst(3)))
        #expect(monitor.ended(id, timeout: 5) == 0, "played once: \(monitor.output)")
        client.closeStdin()
    }

    /// A theme's `media-role` (feedbackd's `FbdFeedbackSound:media-role`, which `fbd_dev_sound_play`
    /// hands to libcanberra, `event` when none is named) reaches the sound server as the stream's
    /// `media.role`: the alarm on a stream of its own beside the event sounds' one.
    @Test func aThemesMediaRoleReachesTheServer() throws {
        // A server of its own: the daemon suite beside this one records "daemon"'s sink, and
        // these sounds would be heard in its checks.
        let server = try PulseAudioTestServer.shared(named: "daemon-roles", recording: false)
        let harness = try DaemonHarness(pulse: server)
        let theme = harness.directory.write(
            Array(#"""
                { "name": "default", "profiles": [ { "name": "full", "feedbacks": [
                  { "event-name": "alarm", "type": "Sound", "effect": "message-new-instant", "media-role": "alarm" },
                  { "event-name": "plain", "type": "Sound", "effect": "message-new-instant" } ] } ] }
                """#.utf8), to: "roles.json")
        let daemon = try harness.startDaemon(environment: ["FEEDBACK_THEME": theme])
        let monitor = try harness.monitor()
        #expect(!daemon.errors.contains("media-role"), "\(daemon.errors)")
        var ids: [UInt32] = []
        for event in ["plain", "alarm"] {
            // Played once: to its end, though gdbus leaves at once.
            let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", event, "{}", "-1"])
            ids.append(try #require(reply.output.split(separator: "uint32 ").last.flatMap { UInt32($0.filter(\.isNumber)) }, "\(reply)"))
        }
        let listing = waitForPactl(server: server.server, ["list", "sink-inputs"], timeout: 5) {
            $0.contains("media.role = \"alarm\"") && $0.contains("media.role = \"event\"")
        }
        #expect(listing.satisfied, "an alarm stream beside the event sounds' one: \(listing.last) \(daemon.errors)")
        for id in ids {
            #expect(monitor.ended(id, timeout: 10) == 0, "played to its end: \(monitor.output)")
        }
    }

    /// The device tree names the device; its theme (`$device`, the parent of nothing but the
    /// default theme) gives its events; SIGHUP finds a theme installed since.
    @Test func deviceThemeIsChosenByTheDeviceTreeAndReloadedOnSighup() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let directory = harness.directory
        for path in ["root", "root/sys", "root/sys/firmware", "root/sys/firmware/devicetree",
            "root/sys/firmware/devicetree/base", "data", "data/feedbackd", "data/feedbackd/themes"]
        {
            mkdir(directory.file(path), 0o700)
        }
        directory.write(Array("vendor,phone\u{0}vendor,soc\u{0}".utf8), to: "root/sys/firmware/devicetree/base/compatible")
        func deviceTheme(_ event: String) -> [UInt8] {
            Array(#"""
                { "name": "$device", "parent-name": "default", "profiles": [
                  { "name": "silent", "feedbacks": [ { "event-name": "\#(event)", "type": "Dummy", "duration": 100 } ] } ] }
                """#.utf8)
        }
        let soc = directory.write(deviceTheme("soc-event"), to: "data/feedbackd/themes/vendor,soc.json")
        let daemon = try harness.startDaemon(
            ["--sysfs-root", directory.file("root")], environment: ["XDG_DATA_DIRS": directory.file("data")])
        let monitor = try harness.monitor()
        #expect(daemon.errors.contains("feedback theme '$device' (\(soc) → "), "\(daemon.errors)")
        #expect(daemon.errors.contains("device vendor,phone, vendor,soc"), "\(daemon.errors)")
        func trigger(_ event: String) -> UInt32? {
            let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", event, "{}", "-1"])
            return reply.output.split(separator: "uint32 ").last.flatMap { UInt32($0.filter(\.isNumber)) }
        }
        let first = try #require(trigger("soc-event"))
        #expect(monitor.ended(first, timeout: 5) == 0, "the device theme's Dummy ran: \(monitor.output)")
        // The more specific compatible's theme, installed later, is found on SIGHUP.
        let phone = directory.write(deviceTheme("phone-event"), to: "data/feedbackd/themes/vendor,phone.json")
        kill(daemon.pid, SIGHUP)
        #expect(daemon.waitForLog(containing: "reloaded: feedback theme '$device' (\(phone) → ", timeout: 5), "\(daemon.errors)")
        let second = try #require(trigger("phone-event"))
        #expect(monitor.ended(second, timeout: 5) == 0, "\(monitor.output)")
        let third = try #require(trigger("soc-event"))
        #expect(monitor.ended(third, timeout: 5) == 4_294_967_295, "\(monitor.output)")
    }
}
