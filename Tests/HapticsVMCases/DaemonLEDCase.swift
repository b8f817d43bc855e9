import FeedbackServices
import Glibc

/// The session service's `Led` feedback on a real kernel: a uinput keyboard's caps lock LED
/// (input-leds), tagged for feedbackd as its udev rule would tag a phone's notification LED, blinks
/// when an event whose theme entry is `Led` is triggered with `gdbus`. gdbus leaves the bus as soon
/// as the reply comes, and a client leaving ends its blink: so the kernel's EV_LED events show the
/// LED switched on by the pattern trigger, then off, and the trigger is the one it had before.
func daemonLEDCase() throws -> String {
    let device = try ledDevice("FBS Daemon LED")
    defer { device.destroy() }
    let name = try capsLockName(of: device)
    let led: LEDInfo
    do { led = try LEDDiscovery().led(.name(name)) } catch { throw CaseFailure("discovery: \(error)") }
    let before = led.activeTrigger
    // No udev in the VM: its database entry written as udev would write it (feedbackd's property).
    mkdir("/run", 0o755)
    mkdir("/run/udev", 0o755)
    mkdir("/run/udev/data", 0o755)
    let entry = "/run/udev/data/+leds:\(name)"
    guard let file = fopen(entry, "w") else { throw CaseFailure("cannot write \(entry)") }
    fputs("E:FEEDBACKD_TYPE=led\n", file)
    fclose(file)
    defer { unlink(entry) }
    // 0.5 Hz: each half lasts a second, longer than gdbus takes to leave, so the blink is one "on".
    let service = try VMDaemon(
        theme: """
            { "name": "vm-led", "profiles": [ { "name": "silent", "feedbacks": [
              { "event-name": "vm-led", "type": "Led", "color": "white", "frequency": 500 } ] } ] }
            """)
    defer { service.stop() }
    let triggered = monotonicMicroseconds()
    let reply = service.call("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "vm-led", "{}", "-1"])
    try expect(reply.status == 0 && reply.output.hasPrefix("(uint32 "), "TriggerFeedback: \(reply.output) \(service.log)")
    var values: [Int] = []
    for _ in 0..<300 {
        values = device.records().filter { $0.kind == "LED" && $0.int("code") == 1 && $0.time >= triggered }.map { $0.int("value") }
        if values.count >= 2 { break }
        sleepMilliseconds(10)
    }
    try expect(values.prefix(2) == [1, 0], "caps lock events after the trigger \(values): \(service.log)")
    // The kernel switches the LED off as the daemon's write of the old trigger removes the pattern
    // trigger, so the event can be seen before the daemon is done putting the LED back: wait for
    // the trigger rather than read it once.
    var after = readTrigger(led)
    for _ in 0..<200 where !after.contains("[\(before)]") {
        sleepMilliseconds(10)
        after = readTrigger(led)
    }
    try expect(after.contains("[\(before)]"), "trigger after: \(after), before it was \(before)")
    try expect(!service.log.contains("LED"), "the daemon's log: \(service.log)")
    return "gdbus TriggerFeedback of an Led event: EV_LED caps lock \(values) (on by the pattern trigger, off when gdbus left); trigger [\(before)] after"
}
