// The LED cases: a uinput device declaring keyboard LEDs (EV_LED) gets LED class devices from the
// kernel's input-leds (/sys/class/leds/inputN::capslock); FeedbackServices blinks one through the
// pattern trigger, and the device program records the EV_LED events the LED core sent, stamped by
// the kernel, so the cases check the blink the kernel actually produced.
import FeedbackCLI
import FeedbackServices
import Glibc
import Synchronization

/// The kernel's tick: Debian's kernel has CONFIG_HZ=250. The pattern trigger's timer runs on it.
private let jiffy = 4.0

/// Runs the LED cases (main.swift calls this once, after the haptics cases).
func runLEDCases() {
    // The run's alarm was set for the haptics cases alone; these get their own minute.
    alarm(60)

    run("led-hotplug-uevent") {
        let seen = Lock<[LEDMonitor.Change]>([])
        let monitor: LEDMonitor
        do {
            monitor = try LEDMonitor { change in seen.withLock { $0.append(change) } }
        } catch { throw CaseFailure("monitor: \(error)") }
        defer { monitor.cancel() }
        let device = try ledDevice("FBS LED Hotplug")
        let name = try capsLockName(of: device)
        func appeared() -> Bool { seen.withLock { $0.contains { if case .appeared(let info) = $0 { info.name == name } else { false } } } }
        for _ in 0..<200 where !appeared() { sleepMilliseconds(5) }
        try expect(appeared(), "the monitor saw no \(name) appear: \(seen.withLock { $0 })")
        device.destroy()
        for _ in 0..<200 where !seen.withLock({ $0.contains(.disappeared(name: name)) }) { sleepMilliseconds(5) }
        try expect(seen.withLock { $0.contains(.disappeared(name: name)) }, "the monitor saw no \(name) go")
        return "\(name) appeared and went, from NETLINK_KOBJECT_UEVENT"
    }

    run("led-pattern-trigger-blink") {
        let device = try ledDevice("FBS LED Blink")
        let name = try capsLockName(of: device)
        let led: LEDInfo
        do { led = try LEDDiscovery().led(.name(name)) } catch { throw CaseFailure("discovery: \(error)") }
        try expect(led.maximumBrightness == 1 && led.kind == .single(color: nil), "\(led)")
        try expect(led.hasPatternTrigger, "no pattern trigger among \(led.triggers)")
        let before = led.activeTrigger
        try expect(before != "pattern", "trigger before: \(before)")
        // 5 Hz: halves of 100 ms, 25 jiffies exactly; 4 cycles, then the kernel leaves it off.
        let pattern: LEDBlinkPattern
        do { pattern = try LEDBlinkPattern(frequency: 5, count: 4) } catch { throw CaseFailure("\(error)") }
        let blink: LEDBlink
        do { blink = try LEDBlink(led: led, pattern: pattern) } catch { throw CaseFailure("blink: \(error)") }
        try expect(blink.method == .patternTrigger, "method \(blink.method)")
        let during = readTrigger(led)
        sleepMilliseconds(1_000)
        do { try blink.end() } catch { throw CaseFailure("end: \(error)") }
        let after = readTrigger(led)
        try expect(during.contains("[pattern]"), "trigger during the blink: \(during)")
        try expect(after.contains("[\(before)]"), "trigger after: \(after), before it was \(before)")

        let events = device.records().filter { $0.kind == "LED" && $0.int("code") == Int(1) }  // LED_CAPSL
        let blinkEvents = Array(events.prefix(8))
        try expect(blinkEvents.map { $0.int("value") } == [1, 0, 1, 0, 1, 0, 1, 0], "caps lock events \(events)")
        try expect(events.count == 8 || events.dropFirst(8).allSatisfy { $0.int("value") == 0 }, "after the blink: \(events)")
        let tolerance = jiffy + 5
        var errors: [Double] = []
        for (previous, next) in zip(blinkEvents, blinkEvents.dropFirst()) {
            let error = Double(next.time - previous.time) / 1000 - Double(pattern.halfPeriod)
            errors.append(error)
            if abs(error) > tolerance {
                throw TimingMiss(description: "a step lasted \(format(Double(next.time - previous.time) / 1000)) ms, not \(pattern.halfPeriod) ± \(tolerance)")
            }
        }
        let drift = Double(blinkEvents.last!.time - blinkEvents.first!.time) / 1000 - Double(7 * pattern.halfPeriod)
        return "8 EV_LED steps of 100 ms, step errors \(errors.map(format)) ms (drift over 700 ms \(format(drift)) ms); trigger [pattern] during, [\(before)] after"
    }

    run("led-feedbackd-setup-as-user") {
        // What feedbackd's udev rule does (fbd-ledctrl -t pattern -G feedbackd): the LED stays on the
        // pattern trigger, and its pattern and repeat files are the group's to write. Here they
        // are nobody's; the trigger file stays root's, so the blink must not write it.
        let device = try ledDevice("FBS LED Feedbackd")
        let name = try capsLockName(of: device)
        let path = "/sys/class/leds/\(name)"
        do { try writeAttribute(path + "/trigger", "pattern") } catch { throw CaseFailure("\(error)") }
        try expect(chown(path + "/pattern", 65534, 65534) == 0 && chown(path + "/repeat", 65534, 65534) == 0, "chown")
        let led: LEDInfo
        do { led = try LEDDiscovery().led(.name(name)) } catch { throw CaseFailure("discovery: \(error)") }
        try expect(led.activeTrigger == "pattern", "trigger \(led.activeTrigger)")
        try expect(setegid(65534) == 0 && seteuid(65534) == 0, "cannot act as uid 65534")
        let outcome = Result { () throws(LEDError) in
            let blink = try LEDBlink(led: led, pattern: try LEDBlinkPattern(frequency: 5, count: 2))
            sleepMilliseconds(600)
            try blink.end()
        }
        _ = seteuid(0)
        _ = setegid(0)
        if case .failure(let error) = outcome { throw CaseFailure("as uid 65534: \(error)") }
        let values = device.records().filter { $0.kind == "LED" && $0.int("code") == 1 }.map { $0.int("value") }
        try expect(values.prefix(4) == [1, 0, 1, 0], "caps lock events \(values)")
        try expect(readTrigger(led).contains("[pattern]"), "trigger after: \(readTrigger(led))")
        let after = readAttribute(path + "/pattern").split(separator: "\n").joined()
        return "uid 65534 blinked through group-writable pattern/repeat without touching trigger; pattern after: '\(after)'"
    }

    run("led-permission-denied") {
        let device = try ledDevice("FBS LED Locked")
        let name = try capsLockName(of: device)
        let led: LEDInfo
        do { led = try LEDDiscovery().led(.name(name)) } catch { throw CaseFailure("discovery: \(error)") }
        // nobody (65534), in its effective ids only, so that root comes back for the cases after.
        try expect(setegid(65534) == 0 && seteuid(65534) == 0, "cannot act as uid 65534")
        defer {
            _ = seteuid(0)
            _ = setegid(0)
        }
        do {
            _ = try LEDBlink(led: led, pattern: try LEDBlinkPattern(frequency: 2))
            throw CaseFailure("a blink as uid 65534 started")
        } catch let error as LEDError {
            try expect(error.reason == .permissionDenied, "blink: \(error)")
            try expect(error.source == led.path + "/trigger", "the error names \(error.source)")
            try expect(error.description.contains("udev rule") && error.description.contains("group"), "message: \(error)")
        }
        var output = ""
        var errors = ""
        let status = FeedbackCommand.run(arguments: ["led", "blink", "--led", name, "--duration", "0.2"], output: &output, errors: &errors)
        try expect(status == 77 && errors.contains(led.path + "/trigger"), "feedbackctl: \(status) \(errors)")
        try expect(readTrigger(led).contains("[\(led.activeTrigger)]"), "the trigger changed: \(readTrigger(led))")
        return "EACCES → permissionDenied naming \(led.path)/trigger; feedbackctl led blink exits 77"
    }
}

/// A uinput device with keyboard LEDs and no force feedback.
func ledDevice(_ name: String) throws(CaseFailure) -> DeviceProgram {
    try DeviceProgram(program: program, name: name, capabilities: "leds", maximumEffects: 0)
}

/// The name of the caps lock LED input-leds made for the device: `inputN::capslock`, N from the
/// input device its event node belongs to (/sys/class/input/eventM/device → …/inputN).
func capsLockName(of device: DeviceProgram) throws(CaseFailure) -> String {
    let event = device.path.split(separator: "/").last.map(String.init) ?? ""
    var target = [CChar](repeating: 0, count: 512)
    let count = readlink("/sys/class/input/\(event)/device", &target, target.count - 1)
    guard count > 0 else { throw CaseFailure("no input device for \(device.path)") }
    let input = String(decoding: target.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/").last!
    let name = "\(input)::capslock"
    for _ in 0..<200 where access("/sys/class/leds/\(name)", F_OK) != 0 { sleepMilliseconds(5) }
    guard access("/sys/class/leds/\(name)", F_OK) == 0 else { throw CaseFailure("the kernel made no /sys/class/leds/\(name)") }
    return name
}

/// The LED's `trigger` file as the kernel shows it, the active trigger bracketed.
func readTrigger(_ led: LEDInfo) -> String {
    readAttribute(led.path + "/trigger")
}

/// A sysfs file's content.
private func readAttribute(_ path: String) -> String {
    guard let file = fopen(path, "r") else { return "<unreadable>" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 8192)
    let count = fread(&buffer, 1, buffer.count - 1, file)
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Writes a sysfs attribute as root would with `echo`.
private func writeAttribute(_ path: String, _ value: String) throws(CaseFailure) {
    guard let file = fopen(path, "w") else { throw CaseFailure("cannot open \(path): \(Errno(rawValue: errno))") }
    defer { fclose(file) }
    guard fputs(value, file) >= 0, fflush(file) == 0 else { throw CaseFailure("cannot write \(path): \(Errno(rawValue: errno))") }
}
