@testable import FeedbackServices
import FeedbackTestSupport
import Glibc
import Testing

struct LEDDiscoveryTests {
    @Test func noLEDClassMeansNoLEDs() throws {
        let tree = FakeSysfs()
        #expect(try tree.discovery.leds().isEmpty)
        #expect(throws: LEDError.self) { try tree.discovery.led(.color(.red)) }
        #expect(tree.discovery.directory == tree.root + "/sys/class/leds")
    }

    @Test func singleAndMulticolorLEDsAreDescribed() throws {
        let tree = FakeSysfs()
        try tree.add("rgb:status", channels: ["red", "green", "blue"], udev: ["FEEDBACKD_TYPE": "led"])
        try tree.add("input3::capslock", maximum: 1, triggers: "none [kbd-capslock] kbd-numlock")
        try tree.add("lp5523:r", udev: ["FEEDBACKD_TYPE": "led", "FEEDBACKD_LED_COLOR": "red"])
        try tree.add("platform::green:indicator")
        let leds = try tree.discovery.leds()
        #expect(leds.map(\.name) == ["input3::capslock", "lp5523:r", "platform::green:indicator", "rgb:status"])
        let rgb = try #require(leds.last)
        #expect(rgb.kind == .multicolor(channels: ["red", "green", "blue"]))
        #expect(rgb.colors == [.white, .red, .green, .blue])
        #expect(rgb.isFeedbackLED && rgb.maximumBrightness == 255 && rgb.hasPatternTrigger)
        #expect(rgb.intensities(for: .green) == [0, 255, 0])
        #expect(rgb.intensities(for: .white) == [255, 255, 255])
        #expect(leds[0].kind == .single(color: nil) && leds[0].colors.isEmpty)
        #expect(leds[0].activeTrigger == "kbd-capslock" && leds[0].triggers == ["none", "kbd-capslock", "kbd-numlock"])
        #expect(!leds[0].hasPatternTrigger && !leds[0].isFeedbackLED)
        #expect(leds[1].kind == .single(color: .red), "the udev hint names the colour the name does not")
        #expect(leds[2].kind == .single(color: .green), "the colour part of a 3-part name")
    }

    @Test func colorsFromNames() {
        #expect(LEDDiscovery.color(inName: "white:status") == .white, "a colour word anywhere, as feedbackd matches")
        #expect(LEDDiscovery.color(inName: "tpacpi::red:power") == .red)
        #expect(LEDDiscovery.color(inName: "dev:red:status") == .red)
        #expect(LEDDiscovery.color(inName: "dev::status") == nil)
        #expect(LEDDiscovery.color(inName: "blue-led") == .blue)
    }

    @Test func feedbackdsChoiceIsTheUdevTaggedLED() throws {
        let tree = FakeSysfs()
        // Sorted first, but untagged: never feedbackd's choice, and only a fallback by colour.
        try tree.add("a::red:power")
        try tree.add("b::red:notification", udev: ["FEEDBACKD_TYPE": "led"])
        try tree.add("c:rgb:status", channels: ["red", "green", "blue"], udev: ["FEEDBACKD_TYPE": "led"])
        try tree.add("d::blue:charging")
        let discovery = tree.discovery
        #expect(try discovery.led(.feedback(.red)).name == "b::red:notification")
        #expect(try discovery.led(.feedback(.blue)).name == "c:rgb:status", "multicolor shows blue")
        #expect(try discovery.led(.color(.red)).name == "b::red:notification", "a tagged LED before an untagged one")
        #expect(try discovery.led(.color(.blue)).name == "c:rgb:status")
        #expect(try discovery.led(.name("d::blue:charging")).name == "d::blue:charging")
        #expect(try discovery.led(.name("POWER")).name == "a::red:power", "a part of the name, any case")
        let error = try #require(throws: LEDError.self) { try discovery.led(.name("nothing")) }
        #expect(error.reason == .noDevice && error.description.contains("none named 'nothing'"))
    }

    @Test func untaggedLEDsAreNeverFeedbackdsChoice() throws {
        let tree = FakeSysfs()
        try tree.add("phone::white:status")
        try tree.add("kbd:rgb:backlight", channels: ["red", "green", "blue"], udev: ["ID_PATH": "x"])
        let error = try #require(throws: LEDError.self) { try tree.discovery.led(.feedback(.white)) }
        #expect(error.reason == .noDevice && error.description.contains("FEEDBACKD_TYPE=led"))
        #expect(try tree.discovery.led(.color(.white)).name == "kbd:rgb:backlight")
    }

    @Test func uneventPropertiesAreParsed() {
        let datagram = Array("add@/devices/virtual/input/input3/input3::capslock\0ACTION=add\0SUBSYSTEM=leds\0SEQNUM=12\0".utf8)
        let properties = UEventSocket.properties(datagram[...])
        #expect(properties["SUBSYSTEM"] == "leds" && properties["ACTION"] == "add" && properties["SEQNUM"] == "12")
        #expect(properties.count == 3)
    }

    @Test func theMonitorStartsAndCancels() throws {
        let tree = FakeSysfs()
        try tree.add("rgb:status", channels: ["red", "green", "blue"])
        let monitor = try LEDMonitor(discovery: tree.discovery) { _ in }
        #expect(monitor.current.map(\.name) == ["rgb:status"])
        monitor.cancel()
        monitor.cancel()
    }
}

struct LEDPatternTests {
    @Test func aBlinkIsASquareWaveOfEqualHalves() throws {
        let pattern = try LEDBlinkPattern(frequency: 2)
        #expect(pattern.halfPeriod == 250)
        #expect(pattern.patternText(maximum: 255) == "255 250 255 0 0 250 0 0")
        #expect(pattern.repeatText == "-1")
        #expect(pattern.duration == nil)
        let counted = try LEDBlinkPattern(frequency: 4, brightness: 0.5, count: 3)
        #expect(counted.patternText(maximum: 255) == "128 125 128 0 0 125 0 0")
        #expect(counted.repeatText == "3" && counted.duration == 0.75)
        #expect(try LEDBlinkPattern(frequency: 20, brightness: 0.01).patternText(maximum: 1) == "1 25 1 0 0 25 0 0",
                "a dim level is at least 1")
        #expect(try LEDBlinkPattern(frequency: 3).halfPeriod == 167)
    }

    @Test func feedbackdsUnitsAreMillihertzAndPercent() throws {
        let pattern = try LEDBlinkPattern(millihertz: 1500, brightnessPercent: 40)
        #expect(pattern.frequency == 1.5 && pattern.brightness == 0.4 && pattern.count == nil)
        #expect(pattern.halfPeriod == 333)
        #expect(try LEDBlinkPattern(millihertz: 0).halfPeriod == 0, "0 mHz: a steady light")
    }

    @Test(arguments: [(25.0, 1.0, nil), (0.001, 1, nil), (-1, 1, nil), (.nan, 1, nil), (1, 0, nil), (1, 1.5, nil),
                      (1, 1, 0), (1, 1, 1_000_001)] as [(Double, Double, Int?)])
    func boundsAreEnforced(frequency: Double, brightness: Double, count: Int?) {
        #expect(throws: LEDError.self) { try LEDBlinkPattern(frequency: frequency, brightness: brightness, count: count) }
    }
}

struct LEDBlinkTests {
    @Test func thePatternTriggerGetsThePatternAndTheLEDIsPutBack() throws {
        let tree = FakeSysfs()
        try tree.add("rgb:status", channels: ["red", "green", "blue"], udev: ["FEEDBACKD_TYPE": "led"])
        tree.write(tree.root + "/sys/class/leds/rgb:status/multi_intensity", "10 20 30\n")
        tree.write(tree.root + "/sys/class/leds/rgb:status/brightness", "7\n")
        let blink = try LEDBlink(color: .blue, frequency: 2, discovery: tree.discovery)
        #expect(blink.method == .patternTrigger && blink.led.name == "rgb:status")
        #expect(tree.read("rgb:status", "trigger") == "pattern")
        #expect(tree.read("rgb:status", "repeat") == "-1")
        #expect(tree.read("rgb:status", "pattern") == "255 250 255 0 0 250 0 0")
        #expect(tree.read("rgb:status", "multi_intensity") == "0 0 255")
        try blink.end()
        #expect(blink.isEnded)
        #expect(tree.read("rgb:status", "trigger") == "none")
        #expect(tree.read("rgb:status", "brightness") == "7", "with no trigger, the brightness is put back")
        #expect(tree.read("rgb:status", "multi_intensity") == "10 20 30")
        tree.write(tree.root + "/sys/class/leds/rgb:status/trigger", "changed")
        try blink.end()
        #expect(tree.read("rgb:status", "trigger") == "changed", "a second end does nothing")
    }

    @Test func aPreviousTriggerIsPutBackAndItsBrightnessLeftToIt() throws {
        let tree = FakeSysfs()
        try tree.add("input3::capslock", maximum: 1, triggers: "none [kbd-capslock] pattern", brightness: 1)
        let led = try tree.discovery.led(.name("capslock"))
        do {
            let blink = try LEDBlink(led: led, pattern: try LEDBlinkPattern(frequency: 5, count: 10))
            #expect(tree.read("input3::capslock", "pattern") == "1 100 1 0 0 100 0 0")
            #expect(tree.read("input3::capslock", "repeat") == "10")
            tree.write(led.path + "/brightness", "0\n")
            _ = blink
        }
        // The handle went away without end(): its deinit put the LED back.
        #expect(tree.read("input3::capslock", "trigger") == "kbd-capslock")
        #expect(tree.read("input3::capslock", "brightness") == "0", "not written under a trigger")
    }

    @Test func withoutThePatternTriggerAThreadBlinks() throws {
        let tree = FakeSysfs()
        try tree.add("white:status", maximum: 100, triggers: "[none] timer")
        let led = try tree.discovery.led(.name("white:status"))
        let blink = try LEDBlink(led: led, pattern: try LEDBlinkPattern(frequency: 4, brightness: 0.5, count: 2), color: .white)
        #expect(blink.method == .timer)
        #expect(tree.read("white:status", "brightness") == "50", "on at once")
        // 2 cycles of 125 + 125 ms: off at 125, on at 250, off for good at 375 ms (at 20 Hz, a
        // test thread preempted for 25 ms missed the first step). A loaded machine may hide the
        // middle steps from this sampling, never the first and the last.
        var seen: [String] = []
        let started = MonotonicClock.now
        while MonotonicClock.now - started < 2, seen.count < 4 {
            let value = tree.read("white:status", "brightness")
            // A read between the thread's truncation and its write sees an empty file.
            if !value.isEmpty && seen.last != value { seen.append(value) }
            usleep(1_000)
        }
        #expect(seen.first == "50" && seen.last == "0" && seen.allSatisfy { ["0", "50"].contains($0) }, "\(seen)")
        usleep(300_000)
        #expect(tree.read("white:status", "brightness") == "0", "the thread ended with the LED off")
        try blink.end()
        #expect(tree.read("white:status", "trigger") == "none")
    }

    @Test func aSecondBlinkTakesTheLEDOverAndPutsBackWhatTheFirstFound() throws {
        let tree = FakeSysfs()
        try tree.add("rgb:status", channels: ["red", "green", "blue"], triggers: "none [timer] pattern", udev: ["FEEDBACKD_TYPE": "led"])
        tree.write(tree.root + "/sys/class/leds/rgb:status/multi_intensity", "1 2 3\n")
        let first = try LEDBlink(color: .red, frequency: 1, discovery: tree.discovery)
        let second = try LEDBlink(color: .green, frequency: 4, discovery: tree.discovery)
        #expect(tree.read("rgb:status", "multi_intensity") == "0 255 0")
        #expect(tree.read("rgb:status", "pattern") == "255 125 255 0 0 125 0 0")
        try first.end()
        #expect(tree.read("rgb:status", "trigger") == "pattern", "the first's end leaves the second running")
        try second.end()
        #expect(tree.read("rgb:status", "trigger") == "timer", "the trigger before the first blink")
        #expect(tree.read("rgb:status", "multi_intensity") == "1 2 3")
    }

    @Test func anLEDFeedbackdLeftOnThePatternTriggerKeepsIt() throws {
        let tree = FakeSysfs()
        try tree.add("red:status", triggers: "none timer [pattern]", udev: ["FEEDBACKD_TYPE": "led"])
        let blink = try LEDBlink(color: .red, frequency: 2, discovery: tree.discovery)
        #expect(tree.read("red:status", "trigger") == "none timer [pattern]", "the trigger is not written again")
        #expect(tree.read("red:status", "pattern") == "255 250 255 0 0 250 0 0")
        try blink.end()
        #expect(tree.read("red:status", "trigger") == "none timer [pattern]")
        #expect(tree.read("red:status", "pattern") == "0 1000 0 0" && tree.read("red:status", "repeat") == "1",
                "an empty pattern before: off, once")

        tree.write(tree.root + "/sys/class/leds/red:status/pattern", "9 100 0 100\n")
        tree.write(tree.root + "/sys/class/leds/red:status/repeat", "-1\n")
        try LEDBlink(color: .red, frequency: 5, discovery: tree.discovery).end()
        #expect(tree.read("red:status", "pattern") == "9 100 0 100" && tree.read("red:status", "repeat") == "-1",
                "another program's pattern is put back")
    }

    @Test func aSteadyLightWritesTheBrightnessOnce() throws {
        let tree = FakeSysfs()
        try tree.add("green:status", maximum: 10)
        let blink = try LEDBlink(led: try tree.discovery.led(.color(.green)), pattern: try LEDBlinkPattern(frequency: 0))
        #expect(blink.method == .steady && tree.read("green:status", "brightness") == "10")
        try blink.end()
        #expect(tree.read("green:status", "brightness") == "0")
    }

    @Test func aColourTheLEDCannotShowIsRefusedBeforeAnythingIsWritten() throws {
        let tree = FakeSysfs()
        try tree.add("input3::capslock", maximum: 1, triggers: "none [kbd-capslock] pattern")
        let led = try tree.discovery.led(.name("capslock"))
        let error = try #require(throws: LEDError.self) { try LEDBlink(led: led, pattern: try LEDBlinkPattern(frequency: 1), color: .red) }
        #expect(error.reason == .unsupportedColor(.red) && error.description.contains("leave the colour out"))
        #expect(tree.read("input3::capslock", "trigger") == "none [kbd-capslock] pattern")
    }

    @Test func aRefusedFileIsNamedWithWhatToDo() {
        let error = LEDError(errno: EACCES, source: "/sys/class/leds/x/trigger")
        #expect(error.reason == .permissionDenied)
        #expect(error.description.hasPrefix("/sys/class/leds/x/trigger: permission denied"))
        #expect(error.description.contains("udev rule") && error.description.contains("group"))
        #expect(LEDError(errno: ENODEV, source: "x").reason == .deviceGone)
    }

    @Test func aLEDGoneMidBlinkIsReportedByEnd() throws {
        let tree = FakeSysfs()
        try tree.add("rgb:status", channels: ["red", "green", "blue"], udev: ["FEEDBACKD_TYPE": "led"])
        let blink = try LEDBlink(color: .red, frequency: 1, discovery: tree.discovery)
        let path = tree.root + "/sys/class/leds/rgb:status"
        for file in ["max_brightness", "brightness", "trigger", "pattern", "repeat", "multi_index", "multi_intensity"] {
            unlink(path + "/" + file)
        }
        rmdir(path)
        let error = try #require(throws: LEDError.self) { try blink.end() }
        #expect(error.reason == .deviceGone && error.source == path + "/trigger")
    }
}
