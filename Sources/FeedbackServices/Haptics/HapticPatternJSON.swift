/// FeedbackServices' own pattern form: what AHAP cannot say (a sound by ID or theme event, a named
/// primitive, an LED), in the words of this library. An object:
///
/// ```json
/// { "version": 1,
///   "events": [
///     { "type": "sound", "time": 0, "id": 1007, "volume": 0.8, "pan": -0.5 },
///     { "type": "sound", "time": 0.5, "event": "message-new-instant" },
///     { "type": "sound", "time": 1, "file": "knock.oga", "duration": 0.3 },
///     { "type": "transient", "time": 0, "intensity": 1, "sharpness": 0.5 },
///     { "type": "continuous", "time": 0.1, "duration": 0.4, "intensity": 0.8, "attack": 0.1, "release": 0.2 },
///     { "type": "primitive", "time": 0.6, "name": "double-click", "intensity": 0.7 },
///     { "type": "light", "time": 0, "duration": 1.5, "color": "blue", "brightness": 1, "frequency": 2 } ],
///   "curves": [ { "control": "intensity", "points": [ { "time": 0, "value": 1 }, { "time": 1, "value": 0.2 } ] } ] }
/// ```
///
/// A sound names exactly one of `id`, `event`, `file` (relative to the pattern's directory). A
/// primitive becomes its steps (`HapticPrimitive`) as continuous events. Curves (`intensity`,
/// `sharpness`, `volume`, `pan`) act as AHAP's dynamic parameter curves, from their `time` on.
/// Defaults: intensity, volume and brightness 1, sharpness 0.5, pan 0, a steady white light.
/// A field not listed here is an error, so that a misspelt one is not silently ignored.
extension PatternReader {
    /// The fields each event type takes, besides `type` and `time`.
    static let ownFormFields: [String: Set<String>] = [
        "sound": ["id", "event", "file", "volume", "pan", "duration"],
        "transient": ["intensity", "sharpness"],
        "continuous": ["duration", "intensity", "sharpness", "attack", "decay", "release", "sustained"],
        "primitive": ["name", "intensity"],
        "light": ["duration", "color", "brightness", "frequency"],
    ]

    /// The curves' controls by their names in this form.
    static let ownFormControls: [String: HapticPattern.Control] = [
        "intensity": .hapticIntensity, "sharpness": .hapticSharpness, "volume": .audioVolume, "pan": .audioPan,
    ]

    mutating func readOwnForm(_ root: JSONValue) throws(HapticPatternError) -> HapticPattern {
        let document = try object(root, "the document")
        try only(["version", "events", "curves"], in: document, "the document")
        if let version = document["version"] {
            guard case .number(let number) = version, number.isFinite else { throw fail("version is not a number") }
            if number != 1 { note("version", "version \(number): read as version 1, the only one there is") }
        }
        guard case .array(let list)? = document["events"] else { throw fail("events is not a list") }
        var curveList: [JSONValue] = []
        if let given = document["curves"] {
            guard case .array(let curves) = given else { throw fail("curves is not a list") }
            curveList = curves
        }
        guard list.count + curveList.count <= HapticPattern.Limits.entries else {
            throw fail("events and curves have \(list.count + curveList.count) entries, more than \(HapticPattern.Limits.entries)")
        }
        var events: [HapticPattern.Event] = []
        for (index, entry) in list.enumerated() {
            events += try ownEvent(try object(entry, "events[\(index)]"), "events[\(index)]")
        }
        guard events.count <= HapticPattern.Limits.entries else {
            throw fail("the events' primitives make \(events.count) events, more than \(HapticPattern.Limits.entries)")
        }
        var curves: [HapticPattern.Curve] = []
        for (index, entry) in curveList.enumerated() {
            let place = "curves[\(index)]"
            let fields = try object(entry, place)
            try only(["control", "time", "points"], in: fields, place)
            guard case .string(let name)? = fields["control"], let control = Self.ownFormControls[name] else {
                throw fail("\(place).control is not one of \(Self.ownFormControls.keys.sorted().joined(separator: ", "))")
            }
            let start = try fields["time"].map { value throws(HapticPatternError) in
                try number(value, "\(place).time", in: 0...HapticPattern.Limits.duration)
            } ?? 0
            guard case .array(let list)? = fields["points"], !list.isEmpty else {
                throw fail("\(place).points is missing, empty or not a list")
            }
            let points = try points(
                list, from: start, place: place, keys: ("points", "time", "value"), range: Self.range(of: control.rawValue))
            if control == .hapticSharpness {
                noteSharpness()
            }
            curves.append(.init(control: control, points: points))
        }
        return HapticPattern(events: events, curves: curves, notes: notes)
    }

    /// One entry of `events`: one event, or a primitive's steps.
    mutating func ownEvent(_ fields: [String: JSONValue], _ place: String) throws(HapticPatternError) -> [HapticPattern.Event] {
        let limit = HapticPattern.Limits.duration
        guard case .string(let type)? = fields["type"], let allowed = Self.ownFormFields[type] else {
            throw fail("\(place).type is not one of \(Self.ownFormFields.keys.sorted().joined(separator: ", "))")
        }
        try only(allowed.union(["type", "time"]), in: fields, place)
        let time = try number(fields["time"], "\(place).time", in: 0...limit)
        func value(_ key: String, in range: ClosedRange<Double>, default fallback: Double) throws(HapticPatternError) -> Double {
            guard let given = fields[key] else { return fallback }
            return try number(given, "\(place).\(key)", in: range)
        }
        func duration() throws(HapticPatternError) -> Double {
            let duration = try number(fields["duration"], "\(place).duration", in: 0...limit)
            guard time + duration <= limit else { throw fail("\(place) ends after \(limit) s") }
            return duration
        }
        if fields["sharpness"] != nil {
            noteSharpness()
        }
        switch type {
        case "sound":
            let named = ["id", "event", "file"].filter { fields[$0] != nil }
            guard named.count == 1 else { throw fail("\(place) must name exactly one of id, event, file") }
            let sound: AlertSound
            switch (named[0], fields[named[0]]!) {
            case ("id", .number(let id)) where id >= 0 && id <= Double(UInt32.max) && id.rounded() == id:
                sound = .id(SystemSoundID(id))
            case ("event", .string(let name)) where !name.isEmpty && name.utf8.count <= HapticPattern.Limits.textLength:
                sound = .event(name)
            case ("file", .string(let file)) where !file.isEmpty && file.utf8.count <= HapticPattern.Limits.textLength:
                sound = .file(try HapticPattern.soundPath(file, directory: directory, place: "\(place).file", fail: fail))
            case ("id", _): throw fail("\(place).id is not a sound ID (a whole number, 0…\(UInt32.max))")
            default: throw fail("\(place).\(named[0]) is not text of 1 to \(HapticPattern.Limits.textLength) bytes")
            }
            let cut = fields["duration"] == nil ? nil : try duration()
            return [
                .sound(
                    time: time, sound: sound, volume: try value("volume", in: 0...1, default: 1),
                    pan: try value("pan", in: -1...1, default: 0), duration: cut)
            ]
        case "transient":
            return [
                .transient(
                    time: time, intensity: try value("intensity", in: 0...1, default: 1),
                    sharpness: try value("sharpness", in: 0...1, default: 0.5))
            ]
        case "continuous":
            var sustained = true
            if let given = fields["sustained"] {
                guard case .bool(let flag) = given else { throw fail("\(place).sustained is not true or false") }
                sustained = flag
            }
            let envelope = HapticPattern.HapticEnvelope(
                attack: try value("attack", in: 0...limit, default: 0), decay: try value("decay", in: 0...limit, default: 0),
                release: try value("release", in: 0...limit, default: 0), sustained: sustained)
            return [
                .continuous(
                    time: time, duration: try duration(), intensity: try value("intensity", in: 0...1, default: 1),
                    sharpness: try value("sharpness", in: 0...1, default: 0.5), envelope: envelope)
            ]
        case "primitive":
            guard case .string(let name)? = fields["name"], let primitive = HapticPrimitive(rawValue: name) else {
                throw fail("\(place).name is not one of \(HapticPrimitive.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let intensity = try value("intensity", in: 0...1, default: 1)
            var events: [HapticPattern.Event] = []
            var offset = time
            for step in primitive.steps {
                let length = Double(step.duration) / 1000
                if step.intensity > 0 {
                    events.append(
                        .continuous(
                            time: offset, duration: length, intensity: step.intensity * intensity, sharpness: 0.5,
                            envelope: HapticPattern.HapticEnvelope()))
                }
                offset += length
            }
            guard offset <= limit else { throw fail("\(place) ends after \(limit) s") }
            return events
        case "light":
            var color = LEDColor.white
            if let given = fields["color"] {
                guard case .string(let name) = given, let known = LEDColor(rawValue: name) else {
                    throw fail("\(place).color is not one of \(LEDColor.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                color = known
            }
            let brightness = try value("brightness", in: 0...1, default: 1)
            guard brightness > 0 else { throw fail("\(place).brightness is 0: a light that is off is no light (leave it out)") }
            let frequency = try value("frequency", in: 0...LEDBlinkPattern.frequencyRange.upperBound, default: 0)
            guard frequency == 0 || LEDBlinkPattern.frequencyRange.contains(frequency) else {
                throw fail("\(place).frequency \(frequency) is neither 0 (steady) nor within \(LEDBlinkPattern.frequencyRange.lowerBound)…\(LEDBlinkPattern.frequencyRange.upperBound) Hz")
            }
            return [.light(time: time, duration: try duration(), color: color, brightness: brightness, frequency: frequency)]
        default:
            return []
        }
    }

    /// Refuses a field of `fields` not in `allowed`, naming it.
    func only(_ allowed: Set<String>, in fields: [String: JSONValue], _ place: String) throws(HapticPatternError) {
        if let stray = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw fail("\(place).\(stray.prefix(64)) is not a field here (\(allowed.sorted().joined(separator: ", ")))")
        }
    }
}
