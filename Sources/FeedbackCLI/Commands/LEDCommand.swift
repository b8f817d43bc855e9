import Dispatch
import FeedbackServices

/// `feedbackctl led [list|blink|off]`: the LEDs, a blink as feedbackd's `Led` feedback makes one,
/// and turning an LED off.
enum LEDCommand: Subcommand {
    static let name = "led"
    static let abstract = "List the LEDs, blink one, or turn one off"
    static let discussion: [Paragraph] = [
        """
        list (the default) shows every LED class device under /sys/class/leds: its colours (a
        multicolor LED's channels), max_brightness, active trigger, and whether udev tagged it
        FEEDBACKD_TYPE=led, the LEDs feedbackd and feedbackservicesd use for notifications.
        """,
        """
        blink blinks an LED on and off in equal halves at --frequency, for --duration seconds,
        then puts back the trigger and brightness it had. The LED is the one --led names; else
        a tagged one that shows --color, else any whose name says that colour or that has red,
        green and blue channels; without either option, the first tagged LED. The kernel keeps
        the timing through the pattern trigger (modprobe ledtrig-pattern); without it the
        command writes the brightness itself.
        """,
        """
        off removes the trigger of the LED --led names (or of every tagged LED) and sets its
        brightness to 0: for an LED a killed program left blinking.
        """,
        """
        LED files belong to root. To use them as another user, give a group write access with
        a udev rule and add the user to it; feedbackd's rules tag the LEDs and do this for
        its group 'feedbackd'. The error names the file that was refused.
        """,
    ]

    static let action = Argument(
        "list|blink|off", .oneOf(["list", "blink", "off"]), optional: true, help: "What to do (default list)")
    static let arguments = [action]

    static let led = Option("--led", value: "NAME", .text, help: "The LED with this name, or whose name contains it")
    static let color = Option(
        "--color", value: "COLOR", .oneOf(LEDColor.allCases.map(\.rawValue)),
        help: "blink: white, red, green or blue (a multicolor LED is set to it)")
    static let frequency = Option(
        "--frequency", value: "HZ", .number, help: "blink: blinks per second, 0.01...20, or 0 for steady (default 1)")
    static let duration = Option("--duration", value: "S", .number, help: "blink: seconds, 0.1...3600 (default 3)")
    static let brightness = Option(
        "--brightness", value: "X", .number, help: "blink: the on level as a fraction of max_brightness (default 1)")
    static let json = Option.json(
        """
        list: {"version", "leds": [{"name", "path", "colors", "channels",
        "maxBrightness", "trigger", "patternTrigger", "feedback"}]};
        channels is null for a single-colour LED. blink and off: {"version",
        "led", "method", "pattern", "repeat"}; method is patternTrigger,
        timer, steady or off
        """)
    /// `--sysfs-root`, which `devices` takes too.
    static let root = Option(
        "--sysfs-root", value: "DIR", .directory,
        help: "Find LEDs under DIR/sys/class/leds and udev's data under DIR/run/udev (default /)")
    static let options = [led, color, frequency, duration, brightness, json, root]

    static let exitStatus: String? = """
        0 listed, blinked to the end, or turned off; 64 bad options; 69 no LED matches or it
        cannot show the colour; 77 a file of the LED may not be written (the message names it);
        130/143 interrupted, after the LED was put back.
        """

    static let examples = [
        "feedbackctl led",
        "feedbackctl led blink --color red --frequency 2 --duration 5",
        "feedbackctl led blink --led input3::capslock --frequency 4",
        "feedbackctl led off --led input3::capslock",
        "feedbackctl led --json | jq '.leds[] | select(.feedback)'",
    ]

    /// What `list --json` prints.
    struct ListReport: Encodable {
        let leds: [LED]

        struct LED: Encodable {
            let name: String
            let path: String
            let colors: [String]
            @Nullable var channels: [String]?
            let maxBrightness: Int
            let trigger: String
            let patternTrigger: Bool
            let feedback: Bool
        }
    }

    /// What `blink --json` and `off --json` print.
    struct ActionReport: Encodable {
        let led: String
        let method: String
        @Nullable var pattern: String?
        @Nullable var `repeat`: String?
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let discovery = LEDDiscovery(root: parser.value(Self.root) ?? "/")
        let action = parser.positionals.first ?? "list"
        let blinkOptions = [color, frequency, duration, brightness]
        if action != "blink", let given = blinkOptions.first(where: { parser.value($0) != nil }) {
            throw CommandError.usage("\(given.name) goes with 'led blink'")
        }
        if action == "list", parser.value(Self.led) != nil {
            throw CommandError.usage("\(Self.led.name) goes with 'led blink' and 'led off'")
        }
        let json = parser.flag(Self.json)
        switch action {
        case "list":
            let leds = try reported { () throws(LEDError) in try discovery.leds() }
            output += json ? JSONOutput.line(ListReport(leds: leds.map(listEntry))) : listText(leds, discovery: discovery)
        case "blink":
            let report = try blink(parser, discovery: discovery)
            output += json ? JSONOutput.line(report) : "\(report.led): blinked (\(report.method))\n"
        case "off":
            let reports = try off(parser.value(Self.led), discovery: discovery)
            output += json ? reports.map(JSONOutput.line).joined() : reports.map { "\($0.led): off\n" }.joined()
        default:
            throw CommandError.usage("'\(action)' is not an action; use list, blink or off")
        }
    }

    private static func blink(_ parser: ArgumentParser, discovery: LEDDiscovery) throws(CommandError) -> ActionReport {
        let color = try parser.value(Self.color).map { text throws(CommandError) in
            guard let color = LEDColor(rawValue: text) else {
                throw CommandError.usage("\(Self.color.name) takes white, red, green or blue, not '\(text)'")
            }
            return color
        }
        let frequency = try number(parser.value(Self.frequency), option: Self.frequency, default: 1, in: 0...20)
        let seconds = try number(parser.value(Self.duration), option: Self.duration, default: 3, in: 0.1...3600)
        let brightness = try number(parser.value(Self.brightness), option: Self.brightness, default: 1, in: 0.001...1)
        let blink = try reported { () throws(LEDError) -> LEDBlink in
            let led: LEDInfo =
                if let name = parser.value(Self.led) {
                    try discovery.led(.name(name))
                } else if let color {
                    try discovery.led(.color(color))
                } else if let tagged = try discovery.leds().first(where: \.isFeedbackLED) {
                    tagged
                } else {
                    throw LEDError(.noDevice, source: discovery.directory, detail: "none tagged FEEDBACKD_TYPE=led; name one with --led")
                }
            // The kernel counts the blinks, so that the light ends off even if this process is late.
            let count = frequency == 0 ? nil : max(1, Int((seconds * frequency).rounded()))
            let pattern = try LEDBlinkPattern(frequency: frequency, brightness: brightness, count: count)
            return try LEDBlink(led: led, pattern: pattern, color: color)
        }
        do {
            try Interruption.check("interrupted before the blink started")
        } catch {
            try? blink.end()
            throw error
        }
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { done.signal() }
        // Interrupted, the LED is put back at once and the wait ends without the timer.
        try Interruption.wait(for: done) {
            try? blink.end()
            done.signal()
        }
        try reported { () throws(LEDError) in try blink.end() }
        let usesPattern = blink.method == .patternTrigger
        return ActionReport(
            led: blink.led.name, method: "\(blink.method)",
            pattern: usesPattern ? blink.pattern.patternText(maximum: blink.led.maximumBrightness) : nil,
            repeat: usesPattern ? blink.pattern.repeatText : nil)
    }

    private static func off(_ name: String?, discovery: LEDDiscovery) throws(CommandError) -> [ActionReport] {
        try reported { () throws(LEDError) -> [ActionReport] in
            let leds: [LEDInfo] =
                if let name { [try discovery.led(.name(name))] } else { try discovery.leds().filter(\.isFeedbackLED) }
            if leds.isEmpty {
                throw LEDError(.noDevice, source: discovery.directory, detail: "none tagged FEEDBACKD_TYPE=led; name one with --led")
            }
            for led in leds { try LEDBlink.turnOff(led) }
            return leds.map { ActionReport(led: $0.name, method: "off", pattern: nil, repeat: nil) }
        }
    }

    /// Runs `body`, reporting an `LEDError` with its exit code.
    private static func reported<T>(_ body: () throws(LEDError) -> T) throws(CommandError) -> T {
        do {
            return try body()
        } catch {
            throw CommandError(error)
        }
    }

    private static func number(
        _ text: String?, option: Option, default value: Double, in range: ClosedRange<Double>
    ) throws(CommandError) -> Double {
        guard let text else { return value }
        guard let number = Double(text), range.contains(number) else {
            throw CommandError.usage("\(option.name) takes a number \(range.lowerBound)...\(range.upperBound), not '\(text)'")
        }
        return number
    }

    private static func listText(_ leds: [LEDInfo], discovery: LEDDiscovery) -> String {
        if leds.isEmpty { return "No LEDs in \(discovery.directory).\n" }
        return leds.flatMap(ledText).map { $0 + "\n" }.joined()
    }

    /// The lines `led list` and `devices` show for one LED.
    static func ledText(_ info: LEDInfo) -> [String] {
        var kind: String
        switch info.kind {
        case .single(let color): kind = color.map { "\($0.rawValue)" } ?? "single colour, not known"
        case .multicolor(let channels): kind = "multicolor (\(channels.joined(separator: " ")))"
        }
        return [
            info.name,
            "  colour:    \(kind)",
            "  max:       \(info.maximumBrightness)",
            "  trigger:   \(info.activeTrigger)\(info.hasPatternTrigger ? "" : " (no pattern trigger: modprobe ledtrig-pattern)")",
            "  feedback:  \(info.isFeedbackLED ? "yes (FEEDBACKD_TYPE=led)" : "no")",
        ]
    }

    /// The JSON entry `led list` and `devices` show for one LED.
    static func listEntry(_ info: LEDInfo) -> ListReport.LED {
        var channels: [String]?
        if case .multicolor(let names) = info.kind { channels = names }
        return ListReport.LED(
            name: info.name, path: info.path, colors: info.colors.map(\.rawValue), channels: channels,
            maxBrightness: info.maximumBrightness, trigger: info.activeTrigger, patternTrigger: info.hasPatternTrigger,
            feedback: info.isFeedbackLED)
    }
}
