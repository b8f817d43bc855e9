import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// feedbackservicesd as users run it: started by hand on a private session bus, playing into a
/// private PulseAudio, called by clients no one here wrote (fbcli, libfeedback, gdbus). Sound is
/// checked at the sink's monitor. Serialized: the tests share the suite's recording.
@Suite(.serialized, .enabled(if: DaemonTools.shouldRun))
struct FeedbackDaemonTests {
    let pulse: PulseAudioTestServer

    init() throws {
        pulse = try PulseAudioTestServer.shared(named: "daemon")
    }

    var recorder: MonitorRecorder { pulse.recorder }

    /// fbcli looping message-new-instant (timeout 0) until its standard input closes, once its
    /// sound is heard.
    func loopingFbcli(_ harness: DaemonHarness) throws -> ChildProcess {
        let start = recorder.frameCount
        let fbcli = try ChildProcess(
            DaemonTools.fbcli, ["-E", "message-new-instant", "-t", "0"], environment: harness.environment(),
            holdStdin: true)
        _ = try #require(recorder.firstSound(after: start, timeout: 5), "fbcli's feedback was not heard: \(fbcli.errors)")
        return fbcli
    }

    @Test func fbcliTriggerPlaysTheSound() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = recorder.frameCount
        // fbcli ends its feedback when its standard input closes: hold it open.
        let fbcli = try ChildProcess(
            DaemonTools.fbcli, ["-E", "message-new-instant"], environment: harness.environment(), holdStdin: true)
        let onset = try #require(recorder.firstSound(after: start, timeout: 5), "nothing reached the sound server")
        #expect(fbcli.wait(timeout: 5) == 0, "fbcli: \(fbcli.output) \(fbcli.errors)")
        // The whole sound, not a click: message-new-instant lasts well over 100 ms.
        let last = try #require(recorder.lastSound(from: onset, before: recorder.frameCount))
        #expect(last - onset > PulseAudioTestServer.rate / 10)
    }

    /// Where only PipeWire runs, the service plays on PipeWire itself, as feedbackctl and the
    /// library choose (`AudioOutputSelection.automatic`); it tried PulseAudio alone, and was silent.
    @Test(.enabled(if: SoundServerKind.testable.contains(.pipeWire), "pipewire is not installed (scripts/setup)"))
    func whereOnlyPipeWireRunsTheServicePlaysOnIt() throws {
        let pipeWire = try PipeWireTestServer.shared(named: "daemon-pipewire")
        defer { PipeWireTestServer.shutDownShared(named: "daemon-pipewire") }
        let harness = try DaemonHarness(pulse: pulse)
        // No PulseAudio server named or at the default socket; PipeWire's socket as a desktop names it.
        try harness.startDaemon(environment: ["PULSE_SERVER": "", "PIPEWIRE_REMOTE": pipeWire.socket])
        let start = pipeWire.recorder.frameCount
        let fbcli = try ChildProcess(
            DaemonTools.fbcli, ["-E", "message-new-instant"], environment: harness.environment(), holdStdin: true)
        #expect(pipeWire.recorder.firstSound(after: start, timeout: 5) != nil, "nothing reached PipeWire's sink")
        #expect(fbcli.wait(timeout: 5) == 0, "fbcli: \(fbcli.output) \(fbcli.errors)")
    }

    @Test func libfeedbackTriggerEndsNaturally() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = recorder.frameCount
        let client = try harness.python("trigger", "message-new-instant")
        #expect(client.wait(timeout: 10) == 0, "\(client.errors)")
        #expect(client.output.contains("ended 0 "), "\(client.output)")
        #expect(recorder.firstSound(after: start, timeout: 1) != nil)
    }

    @Test func loopEndsOnEndFeedbackWithinTheRamp() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = recorder.frameCount
        let client = try harness.python("loop-then-end", "message-new-instant", "1.5")
        #expect(client.wait(timeout: 10) == 0, "\(client.errors)")
        let lines = client.output.split(separator: "\n")
        let ending = try #require(lines.first { $0.hasPrefix("ending ") }.flatMap { Double($0.split(separator: " ")[1]) })
        #expect(lines.contains { $0.hasPrefix("ended 2 ") }, "\(client.output)")
        // Loud while it loops (1.5 s of a shorter sound: it repeated) ...
        let onset = try #require(recorder.firstSound(after: start, timeout: 1))
        recorder.wait(seconds: 0.5)
        let endFrame = try #require(recorder.frame(at: ending))
        #expect(endFrame - onset > PulseAudioTestServer.rate)
        // ... and silent soon after EndFeedback: the stop ramp is 2.5 ms; the rest is the D-Bus
        // round trip and the sound server's latency.
        let last = try #require(recorder.lastSound(from: onset, before: recorder.frameCount))
        let lastTime = try #require(recorder.arrivalTime(ofFrame: last))
        #expect(lastTime - ending < 0.1, "sound went on \(lastTime - ending) s after EndFeedback")
    }

    @Test func timedFeedbackRepeatsThenExpires() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let start = recorder.frameCount
        // Timed from before the client starts: the service's timer starts before its reply, and
        // the clock read after the ID came back lagged it by the reply's way to the test (the
        // same race the LED test's timeout had: 0.2 s once under a full CI run).
        let beforeTrigger = MonotonicClock.now
        let client = try harness.python("hold", "button-pressed", "1", holdStdin: true)
        let line = try #require(client.waitForOutput(containing: "id ", timeout: 10), "\(client.errors)")
        let id = try #require(UInt32(line.dropFirst(3)))
        let replied = MonotonicClock.now
        #expect(monitor.ended(id, timeout: 3) == 1, "\(monitor.output)")
        let ended = MonotonicClock.now
        #expect(ended - beforeTrigger > 0.9 && ended - replied < 1.5, "ended \(ended - beforeTrigger) s after the client started, \(ended - replied) s after the reply")
        // button-pressed is a short click: a second of it is many onsets, not one.
        let first = try #require(recorder.firstSound(after: start, timeout: 1))
        let last = try #require(recorder.lastSound(from: first, before: recorder.frameCount))
        #expect(last - first > PulseAudioTestServer.rate / 2, "it repeated")
        client.closeStdin()
    }

    @Test func oneShotFromAFireAndForgetCallerPlaysToItsEnd() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let start = recorder.frameCount
        // gdbus leaves the bus as soon as the reply comes; a play-once feedback still plays.
        let reply = harness.callFeedback(
            "org.sigxcpu.Feedback.TriggerFeedback", ["org.example.Shell", "message-new-instant", "{}", "-1"])
        #expect(reply.output == "(uint32 1,)\n", "\(reply.errors)")
        #expect(recorder.firstSound(after: start, timeout: 2) != nil)
        #expect(monitor.ended(1, timeout: 5) == 0, "\(monitor.output)")
    }

    @Test func killedClientsFeedbackEndsAndFallsSilent() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let fbcli = try loopingFbcli(harness)
        recorder.wait(seconds: 0.3)
        fbcli.signal(SIGKILL)
        let killed = MonotonicClock.now
        fbcli.wait(timeout: 5)
        // fbcli's feedback is the first of this daemon.
        #expect(monitor.ended(1, timeout: 2) == 2, "\(monitor.output)")
        recorder.wait(seconds: 0.3)
        let from = try #require(recorder.frame(at: killed + 0.15))
        #expect(recorder.peak(from: from, to: recorder.frameCount) < 0.01, "the sound went on after its client died")
    }

    @Test func anotherClientsEndFeedbackIsRefused() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let owner = try harness.python("hold", "message-new-instant", holdStdin: true)
        let line = try #require(owner.waitForOutput(containing: "id ", timeout: 10), "\(owner.errors)")
        let id = try #require(UInt32(line.dropFirst(3)))
        let refused = harness.callFeedback("org.sigxcpu.Feedback.EndFeedback", ["\(id)"])
        #expect(refused.status != 0)
        #expect(refused.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(refused.errors)")
        #expect(monitor.endedCount(id) == 0, "a refused EndFeedback must not end it")
        owner.closeStdin()
        #expect(owner.wait(timeout: 5) == 0)
        #expect(monitor.ended(id, timeout: 2) == 2)
    }

    @Test func concurrentFeedbacksPerClientAreLimited() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let limit = FeedbackService.Limits().feedbacksPerClient
        let client = try harness.python("flood", "button-pressed", "\(limit + 2)", "0", holdStdin: true)
        let accepted = try #require(client.waitForOutput(containing: "ok ", timeout: 10), "\(client.errors)")
        #expect(accepted == "ok \(limit)")
        #expect(client.output.contains("org.freedesktop.DBus.Error.LimitsExceeded"), "\(client.output)")
        #expect(client.output.contains("concurrent feedbacks per client"), "the error names the limit: \(client.output)")
        // Another client is not held back by this one.
        let other = harness.callFeedback(
            "org.sigxcpu.Feedback.TriggerFeedback", ["org.example.Other", "no-such-event", "{}", "-1"])
        #expect(other.status == 0, "\(other.errors)")
        // Its loops end when it leaves.
        client.closeStdin()
        #expect(client.wait(timeout: 5) == 0)
        for id in UInt32(1)...UInt32(limit) { #expect(monitor.ended(id, timeout: 2) == 2) }
    }

    @Test func triggerRatePerClientIsLimited() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let limits = FeedbackService.Limits()
        let client = try harness.python("flood", "no-such-event", "\(Int(limits.triggerBurst) * 2)", "-1", holdStdin: true)
        let line = try #require(client.waitForOutput(containing: "ok ", timeout: 10), "\(client.errors)")
        let accepted = try #require(Int(line.dropFirst(3)))
        let took = try #require(
            client.output.split(separator: "\n").first { $0.hasPrefix("elapsed ") }.flatMap { Double($0.dropFirst(8)) },
            "\(client.output)")
        // The burst, plus what refilled while the calls went out (a loaded machine may take more
        // than a second over them).
        let refilled = Int(limits.triggersPerSecond * took) + 1
        #expect(
            accepted >= Int(limits.triggerBurst) && accepted <= Int(limits.triggerBurst) + refilled,
            "\(accepted) accepted in \(took) s")
        #expect(client.output.contains("org.freedesktop.DBus.Error.LimitsExceeded"), "\(client.output)")
        #expect(client.output.contains("trigger rate"), "the error names the limit: \(client.output)")
        // Budgets are per client: a new one has its own.
        client.closeStdin()
        let again = try harness.python("flood", "no-such-event", "5", "-1", holdStdin: true)
        #expect(again.waitForOutput(containing: "ok ", timeout: 10) == "ok 5", "a new client has its own budget")
    }

    @Test func profileRoundTripIsTheSettingsProfile() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let properties = "org.freedesktop.DBus.Properties"
        #expect(harness.callFeedback("\(properties).Get", ["org.sigxcpu.Feedback", "Profile"]).output == "(<'full'>,)\n")
        // fbcli -P sets it as feedbackd's users do.
        let fbcli = try ChildProcess(DaemonTools.fbcli, ["-P", "quiet"], environment: harness.environment())
        #expect(fbcli.wait(timeout: 5) == 0, "\(fbcli.errors)")
        #expect(harness.callFeedback("\(properties).Get", ["org.sigxcpu.Feedback", "Profile"]).output == "(<'quiet'>,)\n")
        #expect(monitor.process.waitForOutput(containing: "{'Profile': <'quiet'>}", timeout: 2) != nil, "\(monitor.output)")
        // The same setting feedbackctl profile reads and writes.
        let environment = harness.environment().map { "\($0.key)=\($0.value)" }
        #expect(runProcess(feedbackctlBinary, ["profile"], environment: environment).output.contains("quiet"))
        #expect(runProcess(feedbackctlBinary, ["profile", "silent"], environment: environment).status == 0)
        #expect(harness.callFeedback("\(properties).Get", ["org.sigxcpu.Feedback", "Profile"]).output == "(<'silent'>,)\n")
        let wrong = harness.callFeedback("\(properties).Set", ["org.sigxcpu.Feedback", "Profile", "<'loud'>"])
        #expect(wrong.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(wrong.errors)")
    }

    @Test func unknownEventEndsAtOnceAsNotFound() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        let monitor = try harness.monitor()
        let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "no-such-event", "{}", "-1"])
        #expect(reply.output == "(uint32 1,)\n", "\(reply.errors)")
        #expect(monitor.ended(1, timeout: 2) == 4_294_967_295)
        // libfeedback sees its not-found reason (−1).
        let client = try harness.python("trigger", "no-such-event")
        #expect(client.wait(timeout: 10) == 0, "\(client.errors)")
        #expect(client.output.contains("ended -1 "), "\(client.output)")
        #expect(daemon.errors.contains("event 'no-such-event'"), "one log line for it: \(daemon.errors)")
    }

    @Test func debianDefaultThemeIsLoadedAsItIs() throws {
        let harness = try DaemonHarness(pulse: pulse)
        // A machine without LEDs.
        let daemon = try harness.startDaemon(
            ["--sysfs-root", FakeSysfs().root], environment: ["FEEDBACK_THEME": DaemonTools.debianTheme])
        let monitor = try harness.monitor()
        #expect(daemon.errors.contains("feedback theme 'default' (\(DaemonTools.debianTheme))"), "\(daemon.errors)")
        #expect(!daemon.errors.contains("not played"), "its six Led feedbacks are read: \(daemon.errors)")
        // message-new-sms plays the effect message-new-instant there.
        let start = recorder.frameCount
        let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "message-new-sms", "{}", "-1"])
        #expect(reply.output == "(uint32 1,)\n")
        #expect(recorder.firstSound(after: start, timeout: 2) != nil)
        #expect(monitor.ended(1, timeout: 5) == 0)
        // battery-caution has only an Led feedback, and there is no LED: nothing to give.
        _ = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "battery-caution", "{}", "-1"])
        #expect(monitor.ended(2, timeout: 2) == 4_294_967_295)
        #expect(daemon.errors.contains("no LED, so feedbacks give no LED blink"), "\(daemon.errors)")
    }

    @Test func nameTakenExitsWithTheOwnersPID() throws {
        let harness = try DaemonHarness(pulse: pulse)
        // feedbackd owns the name and does not let it go.
        let feedbackd = try ChildProcess(DaemonTools.feedbackd, [], environment: harness.environment())
        let deadline = MonotonicClock.now + 10
        while harness.ownerPID() != feedbackd.pid && MonotonicClock.now < deadline { usleep(20_000) }
        try #require(harness.ownerPID() == feedbackd.pid, "feedbackd did not start: \(feedbackd.errors)")
        for arguments in [[], ["--replace"]] {
            let ours = runProcess(
                builtProduct("feedbackservicesd"), arguments,
                environment: harness.environment().map { "\($0.key)=\($0.value)" })
            #expect(ours.status == 69)
            #expect(ours.errors.contains("owned by process \(feedbackd.pid) (feedbackd)"), "\(ours.errors)")
            #expect(ours.errors.contains("kill \(feedbackd.pid)"), "\(ours.errors)")
        }
        #expect(harness.ownerPID() == feedbackd.pid)
    }

    @Test func busActivationStartsTheInstalledService() throws {
        // scripts/install into a prefix of the test's own, from the programs this run built.
        let prefix = TemporaryDirectory()
        var root = "\(#filePath)"
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        let build = String(builtProduct("feedbackservicesd").dropLast("/feedbackservicesd".count))
        let install = runProcess("/bin/bash", ["\(root)/scripts/install", "--from-build", build, prefix.path])
        try #require(install.status == 0, "\(install.errors)")
        let installed = prefix.file("bin/feedbackservicesd")
        let activation = try String(
            contentsOfFile: prefix.file("share/dbus-1/services/org.sigxcpu.Feedback.service"), encoding: .utf8)
        #expect(activation.contains("Exec=\(installed)\n"))
        let unit = try String(contentsOfFile: prefix.file("share/systemd/user/feedbackservicesd.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=\(installed)\n") && unit.contains("BusName=org.sigxcpu.Feedback\n"))
        #expect(unit.contains("ExecReload=/bin/kill -HUP $MAINPID\n"))

        let harness = try DaemonHarness(pulse: pulse, services: prefix.file("share/dbus-1/services"))
        #expect(harness.activatableNames().contains("org.sigxcpu.Feedback"))
        #expect(harness.ownerPID() == nil)
        let start = recorder.frameCount
        // The first call starts it.
        let reply = harness.callFeedback(
            "org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "message-new-instant", "{}", "-1"])
        #expect(reply.output == "(uint32 1,)\n", "\(reply.errors)")
        let pid = try #require(harness.ownerPID())
        defer { kill(pid, SIGTERM) }
        var executable = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &executable, executable.count - 1)
        #expect(String(decoding: executable.prefix(max(count, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self) == installed)
        #expect(recorder.firstSound(after: start, timeout: 2) != nil)
        // It found the feedback theme installed beside it, not this source tree's.
        let theme = prefix.file("share/feedbackservices/themes/feedbackservices.json")
        #expect(harness.busErrors.contains("feedback theme 'feedbackservices' (\(theme))"), "\(harness.busErrors)")
    }

    @Test func theServiceStopsWhenItsBusGoesAway() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        harness.killBus()
        #expect(daemon.wait(timeout: 2) == 69, "\(daemon.errors)")
        #expect(daemon.errors.contains("the session bus connection broke"))
    }

    @Test func replaceTakesOverOurOwnInstance() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let first = try harness.startDaemon()
        let second = try harness.startDaemon(["--replace"])
        #expect(harness.ownerPID() == second.pid)
        #expect(first.wait(timeout: 2) == 0, "the replaced instance stops: \(first.errors)")
        // The PID file is the new instance's: the old one, leaving, did not remove it.
        let pidFile = harness.directory.file("feedbackservicesd.pid")
        #expect((try? String(contentsOfFile: pidFile, encoding: .utf8)) == "\(second.pid)\n")
    }

    @Test func sigtermEndsEveryFeedbackAndExitsWithinASecond() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        let monitor = try harness.monitor()
        let fbcli = try loopingFbcli(harness)
        let sent = MonotonicClock.now
        daemon.signal(SIGTERM)
        let status = daemon.wait(timeout: 1)
        let took = MonotonicClock.now - sent
        #expect(status == 0, "exit \(String(describing: status)) after \(took) s: \(daemon.errors)")
        #expect(took < 1)
        #expect(monitor.ended(1, timeout: 1) == 2, "\(monitor.output)")
        #expect(harness.ownerPID() == nil, "the name is released")
        fbcli.closeStdin()
    }
}
