import FoundationEssentials
import Glibc

/// A haptic pattern, in Apple's sense: vibration events, sounds and lights on one timeline, with
/// the curves that shape them over time. Not a `VibrationPattern`, which is one motor's steps.
///
/// Read from a file (`init(fileAt:)`) in either of two JSON forms: FeedbackServices' own (an
/// object with `events`: sounds by ID, event name or file, vibrations, named primitives and LED
/// lights; see `docs/haptics.md`), or an AHAP file, Apple Core Haptics' JSON: `Version`, an optional
/// `Metadata`, and `Pattern`, a list whose entries are each one of
/// - `Event`: `Time` (s), `EventType` — `HapticTransient` (a tap), `HapticContinuous` (held for
///   `EventDuration`), `AudioCustom` (a sound file, `EventWaveformPath`, relative to the AHAP
///   file's directory) or `AudioContinuous` (a tone Core Haptics synthesizes) — and
///   `EventParameters`, `ParameterID` + `ParameterValue`: `HapticIntensity`, `HapticSharpness`,
///   `AttackTime`, `DecayTime`, `ReleaseTime`, `Sustained`, `AudioVolume`, `AudioPan`,
///   `AudioPitch`, `AudioBrightness`;
/// - `Parameter`: a dynamic parameter (`HapticIntensityControl`, `HapticSharpnessControl`,
///   `AudioVolumeControl`, …) that from its `Time` on scales what plays;
/// - `ParameterCurve`: the same, changing along `ParameterCurveControlPoints` (`Time` relative to
///   the curve's own `Time`, `ParameterValue`), linearly between points.
///
/// What a Linux device cannot play as written is kept and said once in `notes`: sharpness (an
/// evdev rumble motor has one frequency), `AudioContinuous` (no synthesizer here), audio pitch and
/// brightness. Every input is bounded (`Limits`); a file out of bounds or malformed is refused
/// with a `HapticPatternError` naming the entry and the field.
///
/// A value; safe to share across threads.
public struct HapticPattern: Sendable, Equatable {
    /// One thing on the timeline.
    public enum Event: Sendable, Equatable {
        /// A tap at `time` (s): `intensity` and `sharpness` 0…1.
        case transient(time: Double, intensity: Double, sharpness: Double)
        /// A vibration held from `time` for `duration` (s), shaped by `envelope`.
        case continuous(time: Double, duration: Double, intensity: Double, sharpness: Double, envelope: HapticEnvelope)
        /// A sound from `time` — a sound ID, a sound theme event or a file (an absolute path), as
        /// `AlertSound` names it — at `volume` 0…1 and `pan` −1…1; `duration` (s) cuts it short,
        /// nil plays it whole.
        case sound(time: Double, sound: AlertSound, volume: Double, pan: Double, duration: Double?)
        /// An LED lit from `time` for `duration` (s): the first LED that shows `color` (one udev
        /// tagged for feedback first, as `LEDSelector.color` picks), at `brightness` (above 0,
        /// at most 1), blinking at `frequency` Hz (0: steady).
        case light(time: Double, duration: Double, color: LEDColor, brightness: Double, frequency: Double)

        /// When it starts, in seconds from the pattern's start.
        public var time: Double {
            switch self {
            case .transient(let time, _, _), .continuous(let time, _, _, _, _), .sound(let time, _, _, _, _),
                .light(let time, _, _, _, _):
                time
            }
        }

        /// When it ends: a transient `transientDuration` after its start; a sound of no given
        /// duration after `unknownSoundLength`.
        func end(unknownSoundLength: Double) -> Double {
            switch self {
            case .transient(let time, _, _): time + HapticPattern.transientDuration
            case .continuous(let time, let duration, _, _, _), .light(let time, let duration, _, _, _): time + duration
            case .sound(let time, _, _, _, let duration): time + (duration ?? unknownSoundLength)
            }
        }

        /// Whether it is felt (a transient or a continuous vibration).
        package var vibrates: Bool {
            switch self {
            case .transient, .continuous: true
            case .sound, .light: false
            }
        }

        /// Whether it is a sound.
        package var isSound: Bool { if case .sound = self { true } else { false } }

        /// Whether it is a light.
        package var isLight: Bool { if case .light = self { true } else { false } }
    }

    /// How a continuous vibration rises and falls: seconds to full intensity (`attack`), to the
    /// sustained level (`decay`), and back to nothing at the end (`release`); `sustained` false
    /// lets it fade over its whole duration, as Core Haptics does.
    public struct HapticEnvelope: Sendable, Equatable {
        /// Seconds from the start to full intensity.
        public var attack: Double
        /// Seconds from full intensity to the sustained level.
        public var decay: Double
        /// Seconds over which it falls to nothing at its end.
        public var release: Double
        /// Whether it holds its level to the end (false: it fades over its whole duration).
        public var sustained: Bool

        /// An envelope; the default is flat and held.
        public init(attack: Double = 0, decay: Double = 0, release: Double = 0, sustained: Bool = true) {
            self.attack = attack
            self.decay = decay
            self.release = release
            self.sustained = sustained
        }
    }

    /// What a dynamic parameter or a curve changes.
    public enum Control: String, Sendable, Equatable, CaseIterable {
        /// Multiplies the haptic intensity (0…1).
        case hapticIntensity = "HapticIntensityControl"
        /// Adds to the haptic sharpness (−1…1).
        case hapticSharpness = "HapticSharpnessControl"
        /// Changes continuous haptics' attack time (−1…1, exponentially).
        case hapticAttackTime = "HapticAttackTimeControl"
        /// Changes continuous haptics' decay time (−1…1).
        case hapticDecayTime = "HapticDecayTimeControl"
        /// Changes continuous haptics' release time (−1…1).
        case hapticReleaseTime = "HapticReleaseTimeControl"
        /// Multiplies the sounds' volume (0…1).
        case audioVolume = "AudioVolumeControl"
        /// Adds to the sounds' pan (−1…1).
        case audioPan = "AudioPanControl"
        /// Adds to the sounds' pitch (−1…1; not played here).
        case audioPitch = "AudioPitchControl"
        /// Adds to the sounds' brightness (−1…1; not played here).
        case audioBrightness = "AudioBrightnessControl"
        /// Changes the sounds' attack time (−1…1).
        case audioAttackTime = "AudioAttackTimeControl"
        /// Changes the sounds' decay time (−1…1).
        case audioDecayTime = "AudioDecayTimeControl"
        /// Changes the sounds' release time (−1…1).
        case audioReleaseTime = "AudioReleaseTimeControl"
    }

    /// A parameter's value over time: `points` (time in seconds from the pattern's start, value),
    /// in time order; one point is a step (a `Parameter`), more a line through them (a
    /// `ParameterCurve`).
    public struct Curve: Sendable, Equatable {
        /// What it changes.
        public var control: Control
        /// Its points, in time order.
        public var points: [(time: Double, value: Double)]

        /// A curve through `points` (time order).
        public init(control: Control, points: [(time: Double, value: Double)]) {
            self.control = control
            self.points = points
        }

        /// The same control and the same points.
        public static func == (lhs: Curve, rhs: Curve) -> Bool {
            lhs.control == rhs.control && lhs.points.elementsEqual(rhs.points) { $0.time == $1.time && $0.value == $1.value }
        }

        /// The curve's value at `time`: before its first point nil (it does not act yet); after
        /// the last, the last; between two, the line through them.
        public func value(at time: Double) -> Double? {
            guard let first = points.first, time >= first.time else { return nil }
            guard let next = points.firstIndex(where: { $0.time > time }) else { return points[points.count - 1].value }
            let (a, b) = (points[next - 1], points[next])
            return a.value + (b.value - a.value) * (time - a.time) / (b.time - a.time)
        }
    }

    /// The bounds every pattern read obeys.
    public enum Limits {
        /// The largest file read, in bytes.
        public static let fileSize = 1 << 20
        /// The most `Pattern` entries.
        public static let entries = 4_096
        /// The most control points in one curve, and in all.
        public static let curvePoints = 1_024
        /// The most control points in all the curves together.
        public static let totalCurvePoints = 16_384
        /// The latest time anything may start or end, in seconds.
        public static let duration = 60.0
        /// The longest text (a path, a name), in bytes.
        public static let textLength = 4_096
    }

    /// The events, in time order.
    public var events: [Event]
    /// The dynamic parameters and curves, in the order given.
    public var curves: [Curve]
    /// What is in the file but does not play as written here, each said once.
    public var notes: [String]
    /// The file it was read from, as it was named; nil for a pattern made in code or read from
    /// bytes with no name.
    public var path: String?

    /// A pattern of these parts; `events` are sorted by time.
    public init(events: [Event], curves: [Curve] = [], notes: [String] = [], path: String? = nil) {
        self.events = events.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        self.curves = curves
        self.notes = notes
        self.path = path
    }

    /// When the last event or curve point ends, in seconds (a transient counts as
    /// `transientDuration`; a sound of no given duration as its start).
    public var duration: Double {
        let ends = events.map { $0.end(unknownSoundLength: 0) }
        return max(ends.max() ?? 0, curves.compactMap { $0.points.last?.time }.max() ?? 0)
    }

    /// How long a transient is felt, for drawing and for a motor that needs a length (Core
    /// Haptics' taps last about this long).
    public static let transientDuration = 0.022

    /// Reads the pattern file at `path`, in either form (see the type); sound files it names by
    /// a relative path are relative to its directory.
    /// - Throws: `HapticPatternError` naming the file, and the entry and field at fault.
    public init(fileAt path: String) throws(HapticPatternError) {
        let read: [UInt8]?
        do {
            read = try AtomicFile.read(path, limit: Limits.fileSize)
        } catch {
            throw HapticPatternError(path: path, problem: error.description, fileError: error)
        }
        guard let bytes = read else { throw HapticPatternError(path: path, problem: "no such file") }
        try self.init(bytes: bytes, path: path, directory: Self.directory(of: path))
    }

    /// The absolute directory of the file at `path`, a relative one taken from the working directory.
    package static func directory(of path: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let working =
            path.hasPrefix("/") || getcwd(&buffer, buffer.count) == nil
            ? "/" : String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory(of: path, workingDirectory: working)
    }

    /// The absolute directory of the file at `path`, a relative one taken from `workingDirectory`.
    static func directory(of path: String, workingDirectory: String) -> String {
        let parent = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : ""
        if path.hasPrefix("/") { return parent.isEmpty ? "/" : parent }
        let base = workingDirectory == "/" ? "" : workingDirectory
        return parent.isEmpty ? (base.isEmpty ? "/" : base) : "\(base)/\(parent)"
    }

    /// Reads a pattern document in either form: an object with `Pattern` is AHAP, one with
    /// `events` FeedbackServices' own. `path` names it in errors (and becomes `path`);
    /// `directory` (absolute) is where sound files named by a relative path are, nil when there
    /// is none (a pattern passed as an open file): such a file is then refused.
    /// - Throws: `HapticPatternError`.
    public init(bytes: [UInt8], path: String, directory: String?) throws(HapticPatternError) {
        guard bytes.count <= Limits.fileSize else {
            throw HapticPatternError(path: path, problem: "more than \(Limits.fileSize) bytes")
        }
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch {
            throw HapticPatternError(path: path, problem: "not JSON: \(error)")
        }
        var reader = PatternReader(path: path, directory: directory)
        if case .object(let fields) = root, fields["Pattern"] == nil, fields["events"] != nil {
            self = try reader.readOwnForm(root)
        } else {
            self = try reader.readAHAP(root)
        }
        self.path = path
    }

    /// `path` (as a pattern's file names a sound) as an absolute path: itself when absolute,
    /// else relative to `directory`.
    /// - Throws: `fail`'s error for a relative path with no directory.
    static func soundPath(_ path: String, directory: String?, place: String, fail: (String) -> HapticPatternError)
        throws(HapticPatternError) -> String
    {
        if path.hasPrefix("/") { return path }
        guard let directory else {
            throw fail("\(place) '\(path.prefix(256))' is relative, and a pattern passed as an open file has no directory: name the sound by an absolute path, an ID or an event")
        }
        return "\(directory)/\(path)"
    }
}

/// Why a haptic pattern could not be read: the file, and what is wrong, naming the entry
/// (`Pattern[3]`) and the field. A value; safe to share across threads.
public struct HapticPatternError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What is wrong.
    public var problem: String
    /// The file could not be read (nil: it was read, and is not a pattern, or there is no file).
    public var fileError: FileError?

    /// An error about `path`; `fileError` when the file could not be read.
    public init(path: String, problem: String, fileError: FileError? = nil) {
        self.path = path
        self.problem = problem
        self.fileError = fileError
    }

    /// "PATH: PROBLEM" (a file that could not be read: the file error's own words, which name it).
    public var description: String { fileError.map(\.description) ?? "\(path): \(problem)" }
}

/// A pattern's JSON (AHAP here; FeedbackServices' own form in `HapticPatternJSON.swift`), walked
/// by hand so that each error names its entry and field.
struct PatternReader {
    let path: String
    let directory: String?
    var notes: [String] = []
    var noted: Set<String> = []
    var curvePoints = 0

    init(path: String, directory: String?) {
        self.path = path
        self.directory = directory
    }

    func fail(_ problem: String) -> HapticPatternError { HapticPatternError(path: path, problem: problem) }

    mutating func note(_ key: String, _ text: String) {
        if noted.insert(key).inserted { notes.append(text) }
    }

    /// Says once that sharpness is not felt.
    mutating func noteSharpness() {
        note("sharpness", "sharpness is drawn but not felt: an evdev rumble motor has one frequency (a periodic effect's period is not a motor's sharpness)")
    }

    func object(_ value: JSONValue, _ place: String) throws(HapticPatternError) -> [String: JSONValue] {
        guard case .object(let fields) = value else { throw fail("\(place) is not an object") }
        return fields
    }

    func number(_ value: JSONValue?, _ place: String, in range: ClosedRange<Double>) throws(HapticPatternError) -> Double {
        guard let value else { throw fail("\(place) is missing") }
        guard case .number(let number) = value, number.isFinite else { throw fail("\(place) is not a number") }
        guard range.contains(number) else { throw fail("\(place) \(number) is outside \(range.lowerBound)…\(range.upperBound)") }
        return number
    }

    mutating func readAHAP(_ root: JSONValue) throws(HapticPatternError) -> HapticPattern {
        let document = try object(root, "the document")
        if let version = document["Version"] {
            guard case .number(let number) = version, number.isFinite else { throw fail("Version is not a number") }
            if number != 1 { note("version", "Version \(number): read as Version 1.0, the one Apple documents") }
        }
        guard case .array(let entries)? = document["Pattern"] else { throw fail("Pattern is missing or not a list") }
        guard entries.count <= HapticPattern.Limits.entries else {
            throw fail("Pattern has \(entries.count) entries, more than \(HapticPattern.Limits.entries)")
        }
        var events: [HapticPattern.Event] = []
        var curves: [HapticPattern.Curve] = []
        for (index, entry) in entries.enumerated() {
            let place = "Pattern[\(index)]"
            let fields = try object(entry, place)
            guard fields.count == 1, let (kind, body) = fields.first else {
                throw fail("\(place) must hold exactly one of Event, Parameter, ParameterCurve")
            }
            switch kind {
            case "Event":
                if let event = try self.event(try object(body, "\(place).Event"), "\(place).Event") { events.append(event) }
            case "Parameter":
                curves.append(try parameter(try object(body, "\(place).Parameter"), "\(place).Parameter", curve: false))
            case "ParameterCurve":
                curves.append(try parameter(try object(body, "\(place).ParameterCurve"), "\(place).ParameterCurve", curve: true))
            default:
                throw fail("\(place): '\(kind.prefix(64))' is not Event, Parameter or ParameterCurve")
            }
        }
        return HapticPattern(events: events, curves: curves, notes: notes)
    }

    mutating func event(_ fields: [String: JSONValue], _ place: String) throws(HapticPatternError) -> HapticPattern.Event? {
        let limit = HapticPattern.Limits.duration
        let time = try number(fields["Time"], "\(place).Time", in: 0...limit)
        guard case .string(let type)? = fields["EventType"] else { throw fail("\(place).EventType is missing or not text") }
        var parameters: [String: Double] = [:]
        if let given = fields["EventParameters"] {
            guard case .array(let list) = given else { throw fail("\(place).EventParameters is not a list") }
            for (index, item) in list.enumerated() {
                let where_ = "\(place).EventParameters[\(index)]"
                let parameter = try object(item, where_)
                guard case .string(let id)? = parameter["ParameterID"] else { throw fail("\(where_).ParameterID is missing or not text") }
                let value: Double
                if case .bool(let flag)? = parameter["ParameterValue"] {
                    value = flag ? 1 : 0
                } else {
                    value = try number(parameter["ParameterValue"], "\(where_).ParameterValue (\(id.prefix(64)))", in: Self.range(of: id))
                }
                guard Self.eventParameters.contains(id) else {
                    throw fail("\(where_).ParameterID '\(id.prefix(64))' is not an event parameter (\(Self.eventParameters.sorted().joined(separator: ", ")))")
                }
                parameters[id] = value
            }
        }
        func duration(required: Bool) throws(HapticPatternError) -> Double? {
            guard fields["EventDuration"] != nil || required else { return nil }
            let duration = try number(fields["EventDuration"], "\(place).EventDuration", in: 0...limit)
            guard time + duration <= limit else { throw fail("\(place) ends after \(limit) s") }
            return duration
        }
        let intensity = parameters["HapticIntensity"] ?? 1
        let sharpness = parameters["HapticSharpness"] ?? 0.5
        if parameters["HapticSharpness"] != nil {
            noteSharpness()
        }
        switch type {
        case "HapticTransient":
            return .transient(time: time, intensity: intensity, sharpness: sharpness)
        case "HapticContinuous":
            let envelope = HapticPattern.HapticEnvelope(
                attack: parameters["AttackTime"] ?? 0, decay: parameters["DecayTime"] ?? 0,
                release: parameters["ReleaseTime"] ?? 0, sustained: (parameters["Sustained"] ?? 1) != 0)
            return .continuous(
                time: time, duration: try duration(required: true)!, intensity: intensity, sharpness: sharpness, envelope: envelope)
        case "AudioCustom":
            guard case .string(let file)? = fields["EventWaveformPath"], !file.isEmpty, file.utf8.count <= HapticPattern.Limits.textLength
            else { throw fail("\(place).EventWaveformPath is missing or not a path of 1 to \(HapticPattern.Limits.textLength) bytes") }
            for ignored in ["AudioPitch", "AudioBrightness"] where parameters[ignored] != nil {
                note(ignored, "\(ignored) is not played: sounds play as recorded")
            }
            let resolved = try HapticPattern.soundPath(file, directory: directory, place: "\(place).EventWaveformPath", fail: fail)
            return .sound(
                time: time, sound: .file(resolved), volume: parameters["AudioVolume"] ?? 1,
                pan: parameters["AudioPan"] ?? 0, duration: try duration(required: false))
        case "AudioContinuous":
            _ = try duration(required: true)
            note("AudioContinuous", "AudioContinuous events (a tone Core Haptics synthesizes) are not played: there is no synthesizer here")
            return nil
        default:
            throw fail("\(place).EventType '\(type.prefix(64))' is not HapticTransient, HapticContinuous, AudioCustom or AudioContinuous")
        }
    }

    mutating func parameter(_ fields: [String: JSONValue], _ place: String, curve: Bool) throws(HapticPatternError) -> HapticPattern.Curve {
        guard case .string(let id)? = fields["ParameterID"] else { throw fail("\(place).ParameterID is missing or not text") }
        guard let control = HapticPattern.Control(rawValue: id) else {
            throw fail("\(place).ParameterID '\(id.prefix(64))' is not a dynamic parameter (\(HapticPattern.Control.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let time = try number(fields["Time"], "\(place).Time", in: 0...HapticPattern.Limits.duration)
        let range = Self.range(of: id)
        if [.audioPitch, .audioBrightness].contains(control) {
            note(id, "\(id) is not played: sounds play as recorded")
        }
        guard curve else {
            return .init(control: control, points: [(time, try number(fields["ParameterValue"], "\(place).ParameterValue", in: range))])
        }
        guard case .array(let list)? = fields["ParameterCurveControlPoints"], !list.isEmpty else {
            throw fail("\(place).ParameterCurveControlPoints is missing, empty or not a list")
        }
        return .init(
            control: control,
            points: try points(
                list, from: time, place: place, keys: ("ParameterCurveControlPoints", "Time", "ParameterValue"), range: range))
    }

    /// The control points of the curve at `place` (its list `keys.list`): each an object with a
    /// time (`keys.time`, seconds after `start`) and a value in `range` (`keys.value`); at most
    /// `Limits.curvePoints`, and `Limits.totalCurvePoints` over the pattern; never going back in time.
    mutating func points(
        _ list: [JSONValue], from start: Double, place: String, keys: (list: String, time: String, value: String),
        range: ClosedRange<Double>
    ) throws(HapticPatternError) -> [(time: Double, value: Double)] {
        guard list.count <= HapticPattern.Limits.curvePoints else {
            throw fail("\(place) has \(list.count) control points, more than \(HapticPattern.Limits.curvePoints)")
        }
        curvePoints += list.count
        guard curvePoints <= HapticPattern.Limits.totalCurvePoints else {
            throw fail("\(place): more than \(HapticPattern.Limits.totalCurvePoints) control points in all")
        }
        var points: [(time: Double, value: Double)] = []
        for (index, item) in list.enumerated() {
            let where_ = "\(place).\(keys.list)[\(index)]"
            let point = try object(item, where_)
            let at = start + (try number(point[keys.time], "\(where_).\(keys.time)", in: 0...HapticPattern.Limits.duration))
            guard at <= HapticPattern.Limits.duration else { throw fail("\(where_) is after \(HapticPattern.Limits.duration) s") }
            if let last = points.last, at < last.time { throw fail("\(where_).\(keys.time) goes back in time") }
            points.append((at, try number(point[keys.value], "\(where_).\(keys.value)", in: range)))
        }
        return points
    }

    /// The event parameters Apple documents.
    static let eventParameters: Set<String> = [
        "HapticIntensity", "HapticSharpness", "AttackTime", "DecayTime", "ReleaseTime", "Sustained", "AudioVolume", "AudioPan",
        "AudioPitch", "AudioBrightness",
    ]

    /// The values a parameter takes, as Core Haptics documents them: an event's attack, decay
    /// and release times in seconds; pan and pitch −1…1; the dynamic parameters that add to an
    /// event's value (sharpness, the times, pan, pitch, brightness) −1…1; the rest, among them the
    /// intensity and volume controls, which multiply, 0…1.
    static func range(of id: String) -> ClosedRange<Double> {
        switch id {
        case "AttackTime", "DecayTime", "ReleaseTime": 0...HapticPattern.Limits.duration
        case "AudioPan", "AudioPitch", "AudioPanControl", "AudioPitchControl", "HapticSharpnessControl", "HapticAttackTimeControl",
            "HapticDecayTimeControl", "HapticReleaseTimeControl", "AudioAttackTimeControl", "AudioDecayTimeControl",
            "AudioReleaseTimeControl", "AudioBrightnessControl":
            -1...1
        default: 0...1
        }
    }
}

extension HapticPattern {
    /// What a pattern gives at one instant.
    public struct Level: Sendable, Equatable {
        /// The strongest vibration playing, with the intensity controls applied (0…1); nil when
        /// none plays.
        public var intensity: Double?
        /// The sharpest vibration playing, with the sharpness controls applied (0…1); nil when
        /// none plays.
        public var sharpness: Double?
        /// Whether a sound plays.
        public var sound: Bool
        /// The colour of the first light lit (in time order); nil when none is.
        public var light: LEDColor?

        /// A level; the default is nothing at all.
        public init(intensity: Double? = nil, sharpness: Double? = nil, sound: Bool = false, light: LEDColor? = nil) {
            self.intensity = intensity
            self.sharpness = sharpness
            self.sound = sound
            self.light = light
        }
    }

    /// What the pattern gives at each of `times` (seconds): vibrations shaped by their envelopes,
    /// intensity curves multiplying and sharpness curves adding (Core Haptics' dynamic
    /// parameters), and whether a sound plays (one of no given duration counts as
    /// `unknownSoundLength` seconds long). One sweep through the events in time order: the cost
    /// is the number of times by the events playing at once, plus the events and curve points.
    public func levels(at times: [Double], unknownSoundLength: Double = 0) -> [Level] {
        func end(_ event: Event) -> Double { event.end(unknownSoundLength: unknownSoundLength) }
        var result = [Level](repeating: Level(), count: times.count)
        var next = 0
        var active: [Int] = []
        var pointers = [Int](repeating: 0, count: curves.count)
        for index in times.indices.sorted(by: { times[$0] < times[$1] }) {
            let time = times[index]
            while next < events.count, events[next].time <= time {
                active.append(next)
                next += 1
            }
            active.removeAll { end(events[$0]) <= time }
            var intensityScale = 1.0
            var sharpnessShift = 0.0
            for (number, curve) in curves.enumerated() where curve.control == .hapticIntensity || curve.control == .hapticSharpness {
                let points = curve.points
                guard let first = points.first, time >= first.time else { continue }
                while pointers[number] + 1 < points.count, points[pointers[number] + 1].time <= time { pointers[number] += 1 }
                let at = pointers[number]
                var value = points[at].value
                if at + 1 < points.count {
                    let (a, b) = (points[at], points[at + 1])
                    value = a.value + (b.value - a.value) * (time - a.time) / (b.time - a.time)
                }
                if curve.control == .hapticIntensity { intensityScale *= value } else { sharpnessShift += value }
            }
            var level = Level()
            for number in active {
                switch events[number] {
                case .transient(_, let intensity, let sharpness):
                    level.intensity = max(level.intensity ?? 0, intensity)
                    level.sharpness = max(level.sharpness ?? 0, sharpness)
                case .continuous(let start, let duration, let intensity, let sharpness, let envelope):
                    level.intensity = max(level.intensity ?? 0, intensity * envelope.level(at: time - start, of: duration))
                    level.sharpness = max(level.sharpness ?? 0, sharpness)
                case .sound:
                    level.sound = true
                case .light(_, _, let color, _, _):
                    level.light = level.light ?? color
                }
            }
            level.intensity = level.intensity.map { min(max($0 * intensityScale, 0), 1) }
            level.sharpness = level.sharpness.map { min(max($0 + sharpnessShift, 0), 1) }
            result[index] = level
        }
        return result
    }

    /// The steps of intensity one motor can play: `VibrationPattern` steps as `HapticEngine`
    /// plays them (rumble, or a sine where a device has only periodic effects). The intensity
    /// (`levels(at:)`) is sampled every millisecond (coarser for a pattern of many overlapping
    /// events, so that no more than about four million event samples are taken), rounded to
    /// 1/32, and equal neighbours are one step; the time before the first vibration is a pause.
    /// Sounds, lights and sharpness are not in it; nil when nothing vibrates.
    public var vibrationPattern: VibrationPattern? {
        let ends = events.filter(\.vibrates).map { $0.end(unknownSoundLength: 0) }
        guard let last = ends.max(), last > 0 else { return nil }
        let milliseconds = Int((last * 1000).rounded(.up))
        let resolution = max(1, Int((Double(milliseconds) * Double(events.count) / 4_000_000).rounded(.up)))
        let count = (milliseconds + resolution - 1) / resolution
        let times = (0..<count).map { (Double($0 * resolution) + Double(resolution) / 2) / 1000 }
        var steps: [VibrationPattern.Step] = []
        for level in levels(at: times) {
            let intensity = ((level.intensity ?? 0) * 32).rounded() / 32
            if let previous = steps.last, previous.intensity == intensity {
                steps[steps.count - 1].duration += resolution
            } else {
                steps.append(.init(duration: resolution, intensity: intensity))
            }
        }
        return try? VibrationPattern(steps: steps)
    }
}

extension HapticPattern.HapticEnvelope {
    /// The level, 0…1, `offset` seconds into a vibration `length` seconds long: rising over the
    /// attack, falling over the release; not sustained, fading over the whole length as well.
    /// (`decay` is kept, not applied: an event has no sustain level of its own to decay to.)
    public func level(at offset: Double, of length: Double) -> Double {
        var level = 1.0
        if attack > 0 { level = min(level, offset / attack) }
        if release > 0 { level = min(level, (length - offset) / release) }
        if !sustained, length > 0 { level *= 1 - offset / length }
        return min(max(level, 0), 1)
    }
}
