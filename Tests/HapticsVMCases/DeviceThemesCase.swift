import FeedbackServices
import Glibc

/// What one of Debian 12's device themes (package `feedbackd-device-themes` 0.0.r3, copied into
/// the image by scripts/vm/haptics with feedbackd's `default.json`) plays, read from its JSON and
/// feedbackd's rules by hand: under profile `quiet`, `button-pressed` and `message-new-instant` are
/// one `VibraRumble` each (full strength, count 1: one upload of `duration` ms), nil where the
/// chain has none; under `silent`, `message-missed-sms` is an `Led` or nothing.
private struct DeviceThemeExpectation {
    let compatible: String
    let buttonPressed: Int?
    let messageNewInstant: Int?
    let missedSMSBlinks: Bool
}

/// A theme with a `name` and a `parent-name` only plays feedbackd's `default.json` (15 and 150 ms,
/// a blue blink); `xiaomi,beryllium` is a whole theme named `default` with no parent, no
/// `button-pressed` below `full` and no `silent` profile.
private let debianDeviceThemes = [
    DeviceThemeExpectation(compatible: "oneplus,enchilada", buttonPressed: 15, messageNewInstant: 150, missedSMSBlinks: true),
    DeviceThemeExpectation(compatible: "oneplus,fajita", buttonPressed: 15, messageNewInstant: 150, missedSMSBlinks: true),
    DeviceThemeExpectation(compatible: "pine64,pinephone-pro", buttonPressed: 45, messageNewInstant: 750, missedSMSBlinks: true),
    DeviceThemeExpectation(compatible: "pine64,pinephone", buttonPressed: 80, messageNewInstant: 750, missedSMSBlinks: true),
    DeviceThemeExpectation(compatible: "purism,librem5", buttonPressed: 15, messageNewInstant: 150, missedSMSBlinks: true),
    DeviceThemeExpectation(compatible: "samsung,midas", buttonPressed: 45, messageNewInstant: 750, missedSMSBlinks: true),
    DeviceThemeExpectation(compatible: "shift,axolotl", buttonPressed: 13, messageNewInstant: 150, missedSMSBlinks: true),
    DeviceThemeExpectation(compatible: "xiaomi,beryllium", buttonPressed: nil, messageNewInstant: 750, missedSMSBlinks: false),
]

/// Debian's eight device themes on a real kernel, each chosen as feedbackd chooses it: the device
/// tree's `compatible` (a tree under `--sysfs-root`, whose `sys/class` and `run` are the VM's own,
/// so the service finds the real uinput motor and input LED) names `<compatible>.json` in
/// `/usr/share/feedbackd/themes`, loaded as `$device` with feedbackd's `default.json` as its
/// parent, and no `FEEDBACK_THEME`. For each, a service is started; under `quiet` its vibration
/// events reach the uinput device as the theme's rumbles, under `silent` its missed-SMS `Led`
/// blinks the caps lock LED (tagged for feedbackd as udev would tag a phone's notification LED).
func deviceThemesCase(device: (String) throws(CaseFailure) -> DeviceProgram) throws -> String {
    let motor = try device("FBS Device Themes")
    defer { motor.destroy() }
    let lights = try ledDevice("FBS Device Theme LED")
    defer { lights.destroy() }
    let name = try capsLockName(of: lights)
    for path in ["/run", "/run/udev", "/run/udev/data", "/tmp/dt", "/tmp/dt/sys", "/tmp/dt/sys/firmware",
        "/tmp/dt/sys/firmware/devicetree", "/tmp/dt/sys/firmware/devicetree/base"]
    {
        mkdir(path, 0o755)
    }
    let entry = "/run/udev/data/+leds:\(name)"
    try writeFile(entry, "E:FEEDBACKD_TYPE=led\n")
    defer { unlink(entry) }
    unlink("/tmp/dt/sys/class")
    unlink("/tmp/dt/run")
    guard symlink("/sys/class", "/tmp/dt/sys/class") == 0, symlink("/run", "/tmp/dt/run") == 0 else {
        throw CaseFailure("cannot link the device tree's root to /sys/class and /run: \(Errno(rawValue: errno))")
    }
    let installed = "/usr/share/feedbackd/themes"
    for theme in debianDeviceThemes.map(\.compatible) + ["default"] where access("\(installed)/\(theme).json", R_OK) != 0 {
        throw CaseFailure("\(installed)/\(theme).json is not in the initramfs")
    }

    var checked: [String] = []
    for expected in debianDeviceThemes {
        // Most specific first, then the SoC's, as a device tree lists them.
        try writeFile("/tmp/dt/sys/firmware/devicetree/base/compatible", "\(expected.compatible)\u{0}vendor,soc\u{0}")
        let service = try VMDaemon(theme: nil, arguments: ["--sysfs-root", "/tmp/dt"])
        defer { service.stop() }
        let chain = "\(installed)/\(expected.compatible).json → \(installed)/default.json"
        try expect(
            service.log.contains(chain) || (expected.compatible == "xiaomi,beryllium" && service.log.contains("(\(installed)/xiaomi,beryllium.json)")),
            "\(expected.compatible): the theme loaded is not the device's: \(service.log)")

        let profile = service.call("org.freedesktop.DBus.Properties.Set", ["org.sigxcpu.Feedback", "Profile", "<'quiet'>"])
        try expect(profile.status == 0, "\(expected.compatible): setting the profile: \(profile.output)")
        for (event, duration) in [("button-pressed", expected.buttonPressed), ("message-new-instant", expected.messageNewInstant)] {
            let before = uploads(motor.records()).count
            let reply = service.call("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.Phone", event, "{}", "-1"])
            try expect(reply.status == 0 && reply.output.hasPrefix("(uint32 "), "\(expected.compatible) \(event): \(reply.output) \(service.log)")
            var seen: [[Int]] = []
            // A rumble comes within a few ms of the reply; none is waited for 300 ms.
            for _ in 0..<(duration == nil ? 30 : 200) {
                seen = uploads(motor.records()).dropFirst(before).map { [$0.int("strong"), $0.int("length"), $0.int("delay")] }
                if !seen.isEmpty { break }
                sleepMilliseconds(10)
            }
            let wanted = duration.map { [[65535, $0, 0]] } ?? []
            try expect(seen == wanted, "\(expected.compatible) \(event): uploads \(seen), the theme says \(wanted): \(service.log)")
        }

        let silent = service.call("org.freedesktop.DBus.Properties.Set", ["org.sigxcpu.Feedback", "Profile", "<'silent'>"])
        try expect(silent.status == 0, "\(expected.compatible): setting the profile: \(silent.output)")
        let triggered = monotonicMicroseconds()
        let reply = service.call("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.Phone", "message-missed-sms", "{}", "-1"])
        try expect(reply.status == 0 && reply.output.hasPrefix("(uint32 "), "\(expected.compatible) message-missed-sms: \(reply.output)")
        var values: [Int] = []
        for _ in 0..<(expected.missedSMSBlinks ? 300 : 30) {
            values = lights.records().filter { $0.kind == "LED" && $0.int("code") == 1 && $0.time >= triggered }.map { $0.int("value") }
            if !values.isEmpty { break }
            sleepMilliseconds(10)
        }
        try expect(
            expected.missedSMSBlinks ? values.first == 1 : values.isEmpty,
            "\(expected.compatible) message-missed-sms: caps lock events \(values): \(service.log)")
        checked.append(
            "\(expected.compatible) \(expected.buttonPressed.map(String.init) ?? "-")/\(expected.messageNewInstant.map(String.init) ?? "-") ms"
                + (expected.missedSMSBlinks ? " LED" : ""))
    }
    return "Debian's device themes chosen by compatible, rumbles (button-pressed/message-new-instant) and missed-SMS blink: "
        + checked.joined(separator: ", ")
}
