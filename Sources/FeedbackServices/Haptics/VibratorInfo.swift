/// What a force-feedback device can do, from its `EV_FF` capability bits (`EVIOCGBIT(EV_FF, …)`).
public struct ForceFeedbackCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits; they are this type's own, not the kernel's `FF_*` numbers.
    public let rawValue: UInt32
    /// Creates a set from its raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `FF_RUMBLE`: strong and weak motor magnitudes.
    public static let rumble = Self(rawValue: 1 << 0)
    /// `FF_PERIODIC`: waveforms with period and envelope.
    public static let periodic = Self(rawValue: 1 << 1)
    /// `FF_CONSTANT`: a constant force.
    public static let constant = Self(rawValue: 1 << 2)
    /// `FF_SINE` among the periodic waveforms.
    public static let sine = Self(rawValue: 1 << 3)
    /// `FF_SQUARE` among the periodic waveforms.
    public static let square = Self(rawValue: 1 << 4)
    /// `FF_TRIANGLE` among the periodic waveforms.
    public static let triangle = Self(rawValue: 1 << 5)
    /// `FF_SAW_UP` among the periodic waveforms.
    public static let sawUp = Self(rawValue: 1 << 6)
    /// `FF_SAW_DOWN` among the periodic waveforms.
    public static let sawDown = Self(rawValue: 1 << 7)
    /// `FF_GAIN`: the device-wide strength can be set.
    public static let gain = Self(rawValue: 1 << 8)

    static let names: [(Self, String)] = [
        (.rumble, "rumble"), (.periodic, "periodic"), (.constant, "constant"), (.sine, "sine"),
        (.square, "square"), (.triangle, "triangle"), (.sawUp, "saw-up"), (.sawDown, "saw-down"),
        (.gain, "gain"),
    ]

    /// The lower-case names of the members, in a fixed order ("rumble", "periodic", "sine", …).
    public var names: [String] { Self.names.filter { contains($0.0) }.map(\.1) }

    /// The names joined by commas.
    public var description: String { names.joined(separator: ",") }

    /// Whether a device with these capabilities can vibrate: rumble or periodic effects.
    public var canVibrate: Bool { !isDisjoint(with: [.rumble, .periodic]) }
}

/// A vibration-capable evdev device as discovery found it.
public struct VibratorInfo: Sendable, Hashable {
    /// The device node, `/dev/input/eventN`.
    public var path: String
    /// The device's name (`EVIOCGNAME`, through `libevdev_get_name`).
    public var name: String
    /// The effects it supports.
    public var capabilities: ForceFeedbackCapabilities
    /// How many effects it holds at once (`EVIOCGEFFECTS`).
    public var maximumEffects: Int

    /// Creates a description.
    public init(path: String, name: String, capabilities: ForceFeedbackCapabilities, maximumEffects: Int) {
        self.path = path
        self.name = name
        self.capabilities = capabilities
        self.maximumEffects = maximumEffects
    }

    /// Whether the device-wide strength can be set (`FF_GAIN`).
    public var supportsGain: Bool { capabilities.contains(.gain) }
}
