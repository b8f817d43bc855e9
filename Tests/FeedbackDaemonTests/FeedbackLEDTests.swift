import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// `Led` feedback through the daemon: a fake sysfs tree (`--sysfs-root`) stands for the LEDs, and
/// its files show what the daemon wrote. In the suite, so that the sound checks share its recording
/// one at a time.
extension FeedbackDaemonTests {
    /// A theme of LED events: `blink` (silent level: every profile plays it), `quiet-led` (priority
    /// 1) and `urgent-led` (priority 5) on one LED, `bell-and-led` with a sound too.
    private func ledTheme(_ harness: DaemonHarness) -> String {
        let text = #"""
            { "name": "leds", "profiles": [
              { "name": "full", "feedbacks": [ { "event-name": "bell-and-led", "type": "Sound", "effect": "message-new-instant" } ] },
              { "name": "silent", "feedbacks": [
                { "event-name": "blink", "type": "Led", "color": "red", "frequency": 2000, "max-brightness": 50 },
                { "event-name": "quiet-led", "type": "Led", "color": "red", "frequency": 1000, "priority": 1 },
                { "event-name": "urgent-led", "type": "Led", "color": "red", "frequency": 4000, "priority": 5 },
                { "event-name": "bell-and-led", "type": "Led", "color": "blue", "frequency": 1000 } ] } ] }
            """#
        return harness.directory.write(Array(text.utf8), to: "leds.json")
    }

    /// A tree with a red LED udev tagged for feedbackd, at brightness 3 with no trigger, and an
    /// untagged caps lock the daemon must leave alone.
    private func ledTree() throws -> FakeSysfs {
        let tree = FakeSysfs()
        try tree.add("red:status", brightness: 3, udev: ["FEEDBACKD_TYPE": "led"])
        try tree.add("input3::capslock", maximum: 1, brightness: 1)
        return tree
    }

    /// Waits until `file` of LED `name` reads `value`.
    private func waitFor(_ tree: FakeSysfs, _ name: String, _ file: String, _ value: String, timeout: Double = 3) -> Bool {
        let deadline = MonotonicClock.now + timeout
        while tree.read(name, file) != value {
            guard MonotonicClock.now < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    /// Lists the triggers in `trigger` again, as the kernel always does: a plain file keeps the one
    /// word the blink wrote back, and the next blink would find no pattern trigger there.
    private func relistTriggers(_ tree: FakeSysfs, _ name: String) {
        tree.write(tree.root + "/sys/class/leds/" + name + "/trigger", "[" + tree.read(name, "trigger") + "] timer pattern\n")
    }

    private func pattern(millihertz: UInt32, percent: UInt32 = 100, maximum: Int = 255) throws -> String {
        try LEDBlinkPattern(millihertz: millihertz, brightnessPercent: percent).patternText(maximum: maximum)
    }

    /// The id a `hold` client printed.
    private func heldID(_ client: ChildProcess) throws -> UInt32 {
        let line = try #require(client.waitForOutput(containing: "id ", timeout: 10), "\(client.errors)")
        return try #require(UInt32(line.dropFirst(3).prefix { $0.isNumber }))
    }

    @Test func ledFeedbackBlinksThroughThePatternTriggerUntilEndFeedback() throws {
        let tree = try ledTree()
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(["--sysfs-root", tree.root], environment: ["FEEDBACK_THEME": ledTheme(harness)])
        let client = try harness.python("loop-then-end", "blink", "1.5")
        // `pattern` is the blink's last write (trigger, repeat, then pattern): waiting for the
        // trigger alone raced the two writes after it (a CI run read `pattern` still empty).
        #expect(waitFor(tree, "red:status", "pattern", try pattern(millihertz: 2000, percent: 50)), "\(daemon.errors)")
        #expect(tree.read("red:status", "trigger") == "pattern")
        #expect(tree.read("red:status", "repeat") == "-1")
        #expect(tree.read("input3::capslock", "trigger") == "[none] timer pattern", "the caps lock is left alone")
        #expect(client.wait(timeout: 10) == 0, "\(client.errors)")
        #expect(client.output.contains("ended 2 "), "\(client.output)")
        // EndFeedback put the LED back as it was.
        #expect(tree.read("red:status", "trigger") == "none")
        #expect(tree.read("red:status", "brightness") == "3")
        #expect(!daemon.errors.contains("not played"), "\(daemon.errors)")
    }

    @Test func ledFeedbackEndsWithItsClientAndAtItsTimeout() throws {
        let tree = try ledTree()
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(["--sysfs-root", tree.root], environment: ["FEEDBACK_THEME": ledTheme(harness)])
        let monitor = try harness.monitor()
        // Looping, its client killed: ended (2) and put back.
        let killed = try harness.python("hold", "blink", holdStdin: true)
        let first = try heldID(killed)
        #expect(waitFor(tree, "red:status", "trigger", "pattern"), "\(daemon.errors)")
        killed.signal(SIGKILL)
        killed.wait(timeout: 5)
        #expect(monitor.ended(first, timeout: 3) == 2, "\(monitor.output)")
        #expect(tree.read("red:status", "trigger") == "none" && tree.read("red:status", "brightness") == "3")
        relistTriggers(tree, "red:status")
        // Timeout 1: expired (1) after a second, put back, its client still there. The clock is
        // read before the client starts, so no earlier than the service's timer: read after its ID
        // came back, it lagged the timer by the reply's way through the bus, the client and its
        // pipe (0.2 s once, under a full CI run: 0.80 s measured).
        let triggered = MonotonicClock.now
        let timed = try harness.python("hold", "blink", "1", holdStdin: true)
        let second = try heldID(timed)
        #expect(waitFor(tree, "red:status", "trigger", "pattern"), "\(tree.read("red:status", "trigger")) \(daemon.errors)")
        #expect(monitor.ended(second, timeout: 3) == 1, "\(monitor.output)")
        #expect(MonotonicClock.now - triggered > 0.9)
        #expect(tree.read("red:status", "trigger") == "none")
        relistTriggers(tree, "red:status")
        timed.closeStdin()
        // Play-once from a caller that leaves at once (gdbus): the blink, which nobody could end,
        // ends with it (feedbackd ends every feedback of a client that left).
        tree.write(tree.root + "/sys/class/leds/red:status/repeat", "")
        let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "blink", "{}", "-1"])
        let third = try #require(
            reply.output.split(separator: "uint32 ").last.flatMap { UInt32($0.prefix { $0.isNumber }) },
            "\(reply.output) \(reply.errors)")
        #expect(monitor.ended(third, timeout: 3) == 2, "\(monitor.output)")
        #expect(tree.read("red:status", "repeat") == "-1", "it blinked through the pattern trigger")
        #expect(tree.read("red:status", "trigger") == "none" && tree.read("red:status", "brightness") == "3")
    }

    @Test func silentProfileStillBlinksAndAHigherPriorityKeepsTheLED() throws {
        let tree = try ledTree()
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(
            ["--sysfs-root", tree.root],
            environment: ["FEEDBACK_THEME": ledTheme(harness), "FEEDBACKSERVICES_PROFILE": "silent"])
        let urgent = try harness.python("hold", "urgent-led", holdStdin: true)
        _ = try heldID(urgent)
        #expect(waitFor(tree, "red:status", "pattern", try pattern(millihertz: 4000)), "\(daemon.errors)")
        // Priority 1 under 5: the LED stays with the urgent one.
        let quiet = try harness.python("hold", "quiet-led", holdStdin: true)
        _ = try heldID(quiet)
        #expect(daemon.waitForLog(containing: "stays with feedback", timeout: 3), "\(daemon.errors)")
        #expect(tree.read("red:status", "pattern") == (try pattern(millihertz: 4000)))
        // The same priority or above takes it over, and ending the one taken over leaves it be.
        let again = try harness.python("hold", "urgent-led", holdStdin: true)
        _ = try heldID(again)
        urgent.closeStdin()
        urgent.wait(timeout: 5)
        usleep(300_000)
        #expect(tree.read("red:status", "trigger") == "pattern", "the newer blink runs on")
        again.closeStdin()
        quiet.closeStdin()
        again.wait(timeout: 5)
        #expect(waitFor(tree, "red:status", "trigger", "none"), "\(tree.read("red:status", "trigger"))")
        #expect(tree.read("red:status", "brightness") == "3")
    }

    @Test func debianThemesLedsBlinkAndStopWithTheService() throws {
        let tree = FakeSysfs()
        try tree.add("rgb:status", channels: ["red", "green", "blue"], udev: ["FEEDBACKD_TYPE": "led"])
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(
            ["--sysfs-root", tree.root], environment: ["FEEDBACK_THEME": DaemonTools.debianTheme])
        #expect(!daemon.errors.contains("not played"), "every Led entry is read: \(daemon.errors)")
        let client = try harness.python("hold", "battery-caution", holdStdin: true)
        _ = try heldID(client)
        // Red at 5 Hz on the multicolor LED.
        #expect(waitFor(tree, "rgb:status", "pattern", try pattern(millihertz: 5000)), "\(daemon.errors)")
        #expect(tree.read("rgb:status", "trigger") == "pattern")
        #expect(tree.read("rgb:status", "multi_intensity") == "255 0 0")
        // SIGTERM ends every feedback: the LED is put back before the service exits.
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 5) == 0, "\(daemon.errors)")
        #expect(tree.read("rgb:status", "trigger") == "none")
        #expect(tree.read("rgb:status", "multi_intensity") == "0 0 0")
        client.closeStdin()
    }

    @Test func aPlayOnceFeedbackWithAnLEDBlinksOnAfterItsSoundUntilEnded() throws {
        let tree = FakeSysfs()
        try tree.add("blue:notify", brightness: 0, udev: ["FEEDBACKD_TYPE": "led"])
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(["--sysfs-root", tree.root], environment: ["FEEDBACK_THEME": ledTheme(harness)])
        let monitor = try harness.monitor()
        let start = recorder.frameCount
        let client = try harness.python("hold", "bell-and-led", "-1", holdStdin: true)
        let id = try heldID(client)
        #expect(waitFor(tree, "blue:notify", "trigger", "pattern"), "\(daemon.errors)")
        let onset = try #require(recorder.firstSound(after: start, timeout: 3), "its sound plays")
        // The sound played once and ended; the feedback, as in feedbackd, lasts while the LED blinks.
        recorder.wait(seconds: 1.5)
        let last = try #require(recorder.lastSound(from: onset, before: recorder.frameCount))
        #expect(recorder.frameCount - last > PulseAudioTestServer.rate / 2, "the sound has ended")
        #expect(monitor.endedCount(id) == 0, "\(monitor.output)")
        #expect(tree.read("blue:notify", "trigger") == "pattern")
        // Its client leaving ends it.
        client.closeStdin()
        #expect(monitor.ended(id, timeout: 3) == 2, "\(monitor.output)")
        #expect(tree.read("blue:notify", "trigger") == "none" && tree.read("blue:notify", "brightness") == "0")
    }

    @Test func theLEDIsChosenByFeedbackdsTagThenByColour() throws {
        // A tagged LED of another colour wins over an untagged red one (feedbackd's choice).
        let tagged = FakeSysfs()
        try tagged.add("blue:notify", udev: ["FEEDBACKD_TYPE": "led"])
        try tagged.add("red:status")
        // With no LED tagged, the red one by its name; never the colourless caps lock.
        let untagged = FakeSysfs()
        try untagged.add("input3::capslock", maximum: 1)
        try untagged.add("red:status")
        for (tree, chosen, other) in [(tagged, "blue:notify", "red:status"), (untagged, "red:status", "input3::capslock")] {
            let harness = try DaemonHarness(pulse: pulse)
            let daemon = try harness.startDaemon(["--sysfs-root", tree.root], environment: ["FEEDBACK_THEME": ledTheme(harness)])
            let monitor = try harness.monitor()
            let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "blink", "{}", "-1"])
            #expect(reply.output == "(uint32 1,)\n", "\(reply.errors)")
            // gdbus left at once, which ended the blink; what it wrote stays.
            #expect(monitor.ended(1, timeout: 3) == 2, "\(monitor.output) \(daemon.errors)")
            #expect(tree.read(chosen, "repeat") == "-1", "\(chosen) blinked: \(daemon.errors)")
            #expect(tree.read(other, "repeat") == "", "\(other) was left alone")
        }
    }

    @Test func noLEDIsOneLogLineAndTheRestOfTheFeedbackPlays() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(
            ["--sysfs-root", FakeSysfs().root], environment: ["FEEDBACK_THEME": ledTheme(harness)])
        let monitor = try harness.monitor()
        let start = recorder.frameCount
        let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "bell-and-led", "{}", "-1"])
        #expect(reply.output == "(uint32 1,)\n", "\(reply.errors)")
        #expect(recorder.firstSound(after: start, timeout: 2) != nil, "its sound plays")
        #expect(monitor.ended(1, timeout: 5) == 0, "\(monitor.output)")
        // An LED-only event with no LED: not found, and the missing LED is said once a run.
        _ = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "blink", "{}", "-1"])
        #expect(monitor.ended(2, timeout: 3) == 4_294_967_295, "\(monitor.output)")
        #expect(daemon.errors.components(separatedBy: "no LED, so feedbacks give no LED blink").count == 2, "\(daemon.errors)")
    }
}
