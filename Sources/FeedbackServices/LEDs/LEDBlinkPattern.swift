/// How an LED blinks: on and off in equal halves at `frequency`, at `brightness`, `count` times
/// or until the blink is ended. Frequency 0 is a steady light (as in feedbackd's themes).
///
/// A value; safe to share across threads.
public struct LEDBlinkPattern: Sendable, Hashable {
    /// The frequencies accepted besides 0, in Hz: from one blink in 100 s to 20 a second, where
    /// each half lasts 25 ms, six jiffies at the usual 250 Hz tick.
    public static let frequencyRange: ClosedRange<Double> = 0.01...20
    /// The most blinks one pattern counts.
    public static let maximumCount = 1_000_000

    /// Blinks per second; 0 for a steady light.
    public let frequency: Double
    /// The "on" brightness as a fraction of the LED's `max_brightness`, above 0 and at most 1.
    public let brightness: Double
    /// How many on/off cycles before the LED stays off; nil to blink until the blink is ended.
    public let count: Int?

    /// Creates a pattern.
    /// - Throws: `.invalidArgument` for a frequency neither 0 nor in `frequencyRange`, a
    ///   brightness outside (0, 1], or a count outside 1…`maximumCount`.
    public init(frequency: Double, brightness: Double = 1, count: Int? = nil) throws(LEDError) {
        guard frequency == 0 || Self.frequencyRange.contains(frequency) else {
            throw LEDError(.invalidArgument, source: "frequency", detail: "\(frequency) Hz; 0 (steady) or 0.01…20 Hz")
        }
        guard brightness > 0 && brightness <= 1 else {
            throw LEDError(.invalidArgument, source: "brightness", detail: "\(brightness); above 0 and at most 1")
        }
        if let count, !(1...Self.maximumCount).contains(count) {
            throw LEDError(.invalidArgument, source: "count", detail: "\(count); 1…\(Self.maximumCount)")
        }
        self.frequency = frequency
        self.brightness = brightness
        self.count = count
    }

    /// The pattern of a feedbackd `Led` feedback: its `frequency` in millihertz, its
    /// `max-brightness` in percent (feedbackd's default 100), blinking until ended.
    /// - Throws: `.invalidArgument` as `init(frequency:brightness:count:)`.
    public init(millihertz: UInt32, brightnessPercent: UInt32 = 100) throws(LEDError) {
        try self.init(frequency: Double(millihertz) / 1000, brightness: Double(brightnessPercent) / 100)
    }

    /// How long each half (on, then off) lasts, in whole milliseconds, the unit of the pattern
    /// trigger; 0 for a steady light.
    public var halfPeriod: Int {
        frequency == 0 ? 0 : max(1, Int((500 / frequency).rounded()))
    }

    /// How long the whole pattern lasts in seconds; nil when it runs until ended or is steady.
    public var duration: Double? {
        guard let count, frequency > 0 else { return nil }
        return Double(count * 2 * halfPeriod) / 1000
    }

    /// The `brightness` value of "on" for an LED whose `max_brightness` is `maximum`: at least 1.
    public func level(maximum: Int) -> Int {
        max(1, min(maximum, Int((brightness * Double(maximum)).rounded())))
    }

    /// What is written to the pattern trigger's `pattern` file: "brightness duration" pairs. Each
    /// level comes twice, the second time for 0 ms, because the trigger ramps the brightness
    /// between two different neighbouring levels and steps only between equal ones
    /// (Documentation/ABI/testing/sysfs-class-led-trigger-pattern): a square wave, not a triangle.
    public func patternText(maximum: Int) -> String {
        let on = level(maximum: maximum)
        return "\(on) \(halfPeriod) \(on) 0 0 \(halfPeriod) 0 0"
    }

    /// What is written to `repeat`: the count, or -1 for "until the trigger is changed".
    public var repeatText: String { count.map(String.init) ?? "-1" }
}
