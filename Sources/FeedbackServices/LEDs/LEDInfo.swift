/// A colour an LED can show: feedbackd's `Led` colours (its theme files name them in lower case).
public enum LEDColor: String, Sendable, Hashable, CaseIterable {
    /// White: a white LED, or every channel of a red/green/blue one.
    case white
    /// Red.
    case red
    /// Green.
    case green
    /// Blue.
    case blue
}

/// An LED class device as discovery found it under `/sys/class/leds`.
///
/// Thread safety: a value, a snapshot of sysfs when it was read; safe to share across threads.
public struct LEDInfo: Sendable, Hashable {
    /// What kind of LED it is, and so how its colour is chosen.
    public enum Kind: Sendable, Hashable {
        /// One colour (known from feedbackd's udev hint or the name's colour part, or unknown: nil).
        case single(color: LEDColor?)
        /// A multicolor LED (`multi_index`): one intensity per channel, named as the kernel names
        /// them (`red`, `green`, `blue`, …), in `multi_intensity`'s order.
        case multicolor(channels: [String])
    }

    /// The class device's name, `devicename:color:function` (`input3::capslock`, `rgb:status`).
    public var name: String
    /// Its sysfs directory (`/sys/class/leds/NAME`).
    public var path: String
    /// The largest `brightness` it takes (`max_brightness`).
    public var maximumBrightness: Int
    /// Single or multicolor.
    public var kind: Kind
    /// Whether udev tagged it for notification feedback, as feedbackd expects: the property
    /// `FEEDBACKD_TYPE=led` in udev's database (`/run/udev/data/+leds:NAME`).
    public var isFeedbackLED: Bool
    /// The triggers it offers (`trigger`, the active one without brackets).
    public var triggers: [String]
    /// The active trigger (the bracketed one in `trigger`); `none` when the brightness is set by hand.
    public var activeTrigger: String

    /// Creates a description.
    public init(
        name: String, path: String, maximumBrightness: Int, kind: Kind, isFeedbackLED: Bool, triggers: [String],
        activeTrigger: String
    ) {
        self.name = name
        self.path = path
        self.maximumBrightness = maximumBrightness
        self.kind = kind
        self.isFeedbackLED = isFeedbackLED
        self.triggers = triggers
        self.activeTrigger = activeTrigger
    }

    /// Whether the kernel can keep the blink's timing (`ledtrig-pattern` is loaded): else a
    /// blink writes `brightness` from a thread.
    public var hasPatternTrigger: Bool { triggers.contains("pattern") }

    /// The colours it can show: all of them for a multicolor LED with red, green and blue channels.
    public var colors: [LEDColor] {
        switch kind {
        case .single(let color): color.map { [$0] } ?? []
        case .multicolor: LEDColor.allCases.filter { intensities(for: $0) != nil }
        }
    }

    /// For a multicolor LED, `multi_intensity` showing `color` at full intensity (a channel of that
    /// colour on, or red, green and blue for white); nil when it cannot, or for a single LED.
    func intensities(for color: LEDColor) -> [Int]? {
        guard case .multicolor(let channels) = kind else { return nil }
        var wanted: Set<String> = [color.rawValue]
        if color == .white && !channels.contains("white") { wanted = ["red", "green", "blue"] }
        guard wanted.isSubset(of: channels) else { return nil }
        return channels.map { wanted.contains($0) ? maximumBrightness : 0 }
    }
}
