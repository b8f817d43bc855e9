import Glibc

/// Which LED to use.
public enum LEDSelector: Sendable, Equatable {
    /// feedbackd's choice: an LED udev tagged `FEEDBACKD_TYPE=led` that can show the colour. What
    /// the session service uses, so that it never blinks a keyboard's caps lock.
    case feedback(LEDColor)
    /// An LED that can show the colour: a udev-tagged one first, then one whose name says the
    /// colour or that has red, green and blue channels, in name order.
    case color(LEDColor)
    /// The LED with this name, else the first whose name contains this text (case-insensitive).
    case name(String)
}

/// Finds LEDs: the class devices under `ROOT/sys/class/leds`, with feedbackd's udev properties
/// from `ROOT/run/udev/data/+leds:NAME`.
///
/// The root is `/` unless told otherwise: tests build a fake sysfs tree of plain files.
///
/// Thread safety: a value; every method may be called from any thread (each reads sysfs afresh).
public struct LEDDiscovery: Sendable {
    /// The directory everything is found under; `/` on a real system.
    public var root: String

    /// Creates a discovery under `root`.
    public init(root: String = "/") {
        self.root = root.hasSuffix("/") ? root : root + "/"
    }

    /// The scanned directory, `ROOT/sys/class/leds`.
    public var directory: String { root + "sys/class/leds" }

    /// Every LED, in name order; none when the directory is missing (a machine without LEDs, or
    /// a kernel without the LED class). An entry whose `max_brightness` cannot be read is skipped.
    /// - Throws: `.permissionDenied` or `.ioError` when the directory cannot be read.
    public func leds() throws(LEDError) -> [LEDInfo] {
        let names: [String]
        do {
            names = try System.directoryEntries(directory)
        } catch {
            if error == .noSuchFile { return [] }
            throw LEDError(errno: error.rawValue, source: directory)
        }
        return names.filter { !$0.hasPrefix(".") }.sorted().compactMap { try? led(named: $0) }
    }

    /// The LED called `name`.
    /// - Throws: `.deviceGone` when there is none; `.permissionDenied` for an unreadable file.
    public func led(named name: String) throws(LEDError) -> LEDInfo {
        let path = directory + "/" + name
        guard let maximum = Int(try SysfsAttribute.read(path + "/max_brightness")), maximum > 0 else {
            throw LEDError(.ioError(errno: EINVAL), source: path + "/max_brightness", detail: "not a positive number")
        }
        let properties = udevProperties(of: name)
        let kind: LEDInfo.Kind
        if let index = try? SysfsAttribute.read(path + "/multi_index") {
            kind = .multicolor(channels: index.split(separator: " ").map(String.init))
        } else {
            kind = .single(color: properties["FEEDBACKD_LED_COLOR"].flatMap(LEDColor.init) ?? Self.color(inName: name))
        }
        let triggers = SysfsAttribute.triggers((try? SysfsAttribute.read(path + "/trigger")) ?? "")
        return LEDInfo(
            name: name, path: path, maximumBrightness: maximum, kind: kind,
            isFeedbackLED: properties["FEEDBACKD_TYPE"] == "led", triggers: triggers.all, activeTrigger: triggers.active)
    }

    /// The LED `selector` picks.
    /// - Throws: `.noDevice` when none matches.
    public func led(_ selector: LEDSelector) throws(LEDError) -> LEDInfo {
        let all = try leds()
        let found: LEDInfo? =
            switch selector {
            case .feedback(let color): all.first { $0.isFeedbackLED && $0.colors.contains(color) }
            case .color(let color):
                all.first { $0.isFeedbackLED && $0.colors.contains(color) } ?? all.first { $0.colors.contains(color) }
            case .name(let text):
                all.first { $0.name == text } ?? all.first { $0.name.lowercased().contains(text.lowercased()) }
            }
        guard let found else {
            let wanted =
                switch selector {
                case .feedback(let color): "none tagged FEEDBACKD_TYPE=led by udev shows \(color.rawValue)"
                case .color(let color): "none shows \(color.rawValue)"
                case .name(let text): "none named '\(text)'"
                }
            throw LEDError(.noDevice, source: directory, detail: wanted)
        }
        return found
    }

    /// The `E:KEY=value` lines of udev's database entry for the LED; empty without udev.
    func udevProperties(of name: String) -> [String: String] {
        guard let text = try? SysfsAttribute.read(root + "run/udev/data/+leds:" + name) else { return [:] }
        var properties: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("E:") {
            let pair = line.dropFirst(2).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { properties[String(pair[0])] = String(pair[1]) }
        }
        return properties
    }

    /// The colour an LED's name gives: the kernel's `devicename:color:function` colour part, or
    /// (as feedbackd matches names) a colour word anywhere in the name.
    static func color(inName name: String) -> LEDColor? {
        let parts = name.lowercased().split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 3, let color = LEDColor(rawValue: String(parts[1])) { return color }
        return LEDColor.allCases.first { name.lowercased().contains($0.rawValue) }
    }
}
