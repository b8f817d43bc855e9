package import FeedbackServices
import FoundationEssentials
import Glibc

/// One feedback a theme gives for an event. A value; safe to share across threads.
package enum ThemeFeedback: Sendable, Equatable {
    /// `Sound`: play the sound theme event `effect`, on a stream of `mediaRole` (the theme's
    /// `media-role`; nil: the output's own, `event`, which is feedbackd's default too).
    case sound(effect: String, mediaRole: String? = nil)
    /// `Sound` with a `file-name` (feedbackd 0.8): play the file at `path` (absolute), which
    /// feedbackd plays instead of the `effect` when a feedback names both.
    case soundFile(path: String, mediaRole: String? = nil)
    /// `VibraRumble`, `VibraPeriodic` or `VibraPattern`, as a pattern.
    case vibration(VibrationPattern)
    /// `Led`: blink a notification LED in `color` (the theme's words: `red`, `green`, `blue`,
    /// `white` or `#RRGGBB`; `FeedbackTheme.ledColor(_:)` maps them) at `millihertz` (0: a steady
    /// light) and `brightnessPercent` of the LED's maximum; `priority` (0…255) decides which of two
    /// feedbacks keeps an LED both want.
    case led(color: String, millihertz: UInt32, brightnessPercent: UInt32, priority: UInt8)
    /// `Dummy`: nothing, for `milliseconds` (0: it ends at once), as feedbackd's own tests use it.
    /// A feedbackd type not known here reads as one too, as feedbackd makes any type it does not
    /// know a `Dummy`.
    case dummy(milliseconds: Int)
    /// A feedback with a `pattern` (our field, which feedbackd skips): the haptic pattern, played
    /// here in place of the event's sounds and vibrations; feedbackd plays the feedback as written
    /// (`instead`).
    indirect case pattern(HapticPattern, instead: ThemeFeedback)
}

/// Why a theme file could not be used. A value; safe to share across threads.
package struct FeedbackThemeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    package var path: String
    /// What is wrong with it.
    package var problem: String

    /// "PATH: PROBLEM".
    package var description: String { "\(path): \(problem)" }
}

/// An event → feedback mapping in feedbackd's JSON theme format, with its parents.
///
/// A theme file has a `name`, an optional `parent-name` and optional `profiles`, each with a
/// `name` (`full`, `quiet`, `silent`) and optional `feedbacks` (a theme or profile without them
/// gives nothing of its own: Debian's device themes are a `name` and a `parent-name` only). A
/// feedback has an `event-name`, a `type` and the type's fields, read as feedbackd 0.8 reads them
/// (`src/fbd-feedback-*.c`, their properties):
/// - `Sound`: `effect` (a sound theme event) or `file-name` (an absolute path, played instead of
///   the effect when both are given); `media-role` is the stream's `media.role` at the sound
///   server (`PlaybackOptions.mediaRole`, as feedbackd hands it to gsound); one no stream can
///   carry is said in `notes`, and that sound plays as an event sound.
/// - `VibraRumble`: `duration` in ms (default 1000, feedbackd's), `count` (default 1; 0, which
///   feedbackd takes, is refused: no rumble), `pause` in ms (default 0), `magnitude` 0…1
///   (default 1, Debian's feedbackd 0.0.3 full strength; feedbackd 0.8 says 0.5).
/// - `VibraPeriodic`: `duration` (default 1000), `magnitude` (0…1 as feedbackd 0.8 reads it; a
///   value above 1 is feedbackd 0.0.3's 0…0x7FFF kernel level; default 0x5000), `fade-in-time`
///   in ms (default 0, 0.0.3's; 0.8 says 500); `fade-in-level` is not used: the fade starts from
///   nothing, as the library's periodic effect has no start level.
/// - `VibraPattern`: `magnitudes` 0…1 and `durations` in ms, pairwise.
/// - `Led`: `color` (default white), `frequency` in mHz (default 0, a steady light),
///   `max-brightness` in percent 1…100 (default 100), `priority` 0…255 (default 0).
/// - `Dummy`: `duration` in ms (default 0: it ends at once).
///
/// Our own field, on a feedback of any type: `pattern`, a haptic pattern file (AHAP or our JSON
/// form; absolute, or relative to the theme file's directory). The feedback is then
/// `.pattern`: the service plays the pattern in place of the event's `Sound` and `Vibra*`
/// feedbacks at that level, its lanes as the level allows (full: all; quiet: the vibration and
/// lights; silent: the lights). feedbackd's JSON reading (json-glib's
/// `json_gobject_deserialize`) skips a member that is no property, so feedbackd and
/// `fbd-theme-validate` read such a theme as valid and play the feedback as written: the pattern
/// degrades to what the theme also says. A pattern file that cannot be read is a note, and the
/// feedback plays as written; at most `maximumPatterns` pattern files a theme file.
///
/// Other fields are ignored, as feedbackd ignores them. A feedback of a type not known here (or
/// without a `type`) is a `Dummy` of its `duration`, as feedbackd makes it one (`ignored` lists
/// them). An LED colour no LED here can be told to show (feedbackd's `#RRGGBB` other than the
/// four colours, or a word it does not know) is shown white, as feedbackd shows a colour it
/// cannot parse; `approximated` lists those entries. A profile of another name than the three is
/// read and never played (a note says so), as in feedbackd. As in feedbackd, a profile has one
/// feedback per event: a later entry for the same event replaces an earlier one.
///
/// Profiles are levels, as feedbackd means them: a profile plays the feedbacks listed under it and
/// under the profiles below it (full ⊃ quiet ⊃ silent). A theme with a `parent-name` inherits: for
/// each profile level and event, the nearest theme in the chain that lists the event there wins.
/// Parents are found by name (`FeedbackThemeLocations.resolve`), as feedbackd's
/// `fbd_theme_expander_load_theme_files` finds them: `$device` and `default` are the device
/// theme, once, then `default` the default theme; a name found nowhere falls back to `default`
/// (a note says so); a theme named `default` may not have a parent. A file already in the chain
/// is not found again, so a cycle ends in the default theme.
///
/// Every input is bounded: a file of at most `maximumFileSize` bytes, at most `maximumEntries`
/// feedbacks per file, strings of at most `maximumStringLength` bytes, a parent chain of at most
/// `maximumParentDepth` themes, durations of at most `maximumDuration` ms.
///
/// Thread safety: a value; every method may be called from any thread.
package struct FeedbackTheme: Sendable {
    /// The largest theme file read, in bytes (Debian's `default.json` has 5 KiB).
    package static let maximumFileSize = 1 << 20
    /// The most feedbacks one file may list.
    package static let maximumEntries = 4_096
    /// The longest name, event or effect, in bytes.
    package static let maximumStringLength = 255
    /// The most themes in a parent chain, the theme itself included.
    package static let maximumParentDepth = 8
    /// The longest vibration step, and the longest whole pattern, in ms.
    package static let maximumDuration = 60_000
    /// The most steps a `VibraPattern` or pulses a `VibraRumble` may have.
    package static let maximumSteps = 256
    /// The most pattern files one theme file reads (each at most `HapticPattern.Limits.fileSize`).
    package static let maximumPatterns = 64
    /// A `VibraRumble`'s or `VibraPeriodic`'s `duration` when it gives none, in ms: feedbackd's
    /// `FBD_FEEDBACK_VIBRA_DEFAULT_DURATION`.
    package static let defaultVibraDuration = 1_000

    /// The theme's `name`.
    package let name: String
    /// The files read, the theme's own first, then its parents'.
    package let files: [String]
    /// The pattern files its feedbacks name (read or not), watched as its files are.
    package let patternFiles: [String]
    /// Feedbacks of an unknown type, accepted and run as a `Dummy`.
    package let ignored: [String]
    /// What else is not played as written (a `media-role` no stream can carry, a profile of
    /// another name, a parent found nowhere), one line each.
    package let notes: [String]
    /// `Led` feedbacks whose colour is shown white (see `ledColor(_:)`), with their colour.
    package let approximated: [String]
    /// The feedbacks by profile level, then event; the parents' already merged in.
    private let levels: [FeedbackProfile: [String: [ThemeFeedback]]]

    /// The feedbacks `profile` gives for `event`: those of its own level and of the levels below it.
    package func feedbacks(for event: String, profile: FeedbackProfile) -> [ThemeFeedback] {
        Self.levelsPlayed(by: profile).flatMap { levels[$0]?[event] ?? [] }
    }

    /// The levels a profile plays, its own first.
    static func levelsPlayed(by profile: FeedbackProfile) -> [FeedbackProfile] {
        switch profile {
        case .full: [.full, .quiet, .silent]
        case .quiet: [.quiet, .silent]
        case .silent: [.silent]
        }
    }

    /// Reads the theme at `path` and its parents, found by name in `parents` (`<name>.json` in each
    /// directory, first match; the file itself is skipped).
    package static func load(path: String, parents: [String]) throws(FeedbackThemeError) -> FeedbackTheme {
        try load(FeedbackThemeLocations(theme: path, parentDirectories: parents))
    }

    /// Reads `locations.theme` and its parents, found by name with `locations.resolve`.
    package static func load(_ locations: FeedbackThemeLocations) throws(FeedbackThemeError) -> FeedbackTheme {
        var chain: [(path: String, file: ThemeFile)] = []
        var seen: Set<String> = []
        var notes: [String] = []
        var next: String? = locations.theme
        while let current = next {
            guard chain.count < maximumParentDepth else {
                throw FeedbackThemeError(
                    path: locations.theme, problem: "the parent-name chain is longer than \(maximumParentDepth) themes")
            }
            seen.insert(canonicalPath(current))
            let file = try ThemeFile.read(current)
            chain.append((current, file))
            guard let parent = file.parentName else {
                next = nil
                continue
            }
            // As feedbackd: the root of every chain is `default`, which inherits nothing.
            guard file.name != FeedbackThemeLocations.defaultName else {
                throw FeedbackThemeError(path: current, problem: "the default theme can't specify a parent")
            }
            let resolved = locations.resolve(parent, excluding: { seen.contains(canonicalPath($0)) })
            switch resolved {
            case .found(let path):
                next = path
            case .fallback(let path):
                notes.append("\(current): no theme named '\(parent)', so its parent is the default theme \(path)")
                next = path
            case .invalid:
                throw FeedbackThemeError(path: current, problem: "'\(parent)' is not a theme name (a file name without '/')")
            case .missing:
                throw FeedbackThemeError(
                    path: current,
                    problem: "no theme named '\(parent)', nor a default theme, in \(locations.parentDirectories)")
            }
        }
        var levels: [FeedbackProfile: [String: [ThemeFeedback]]] = [:]
        // Parents first, so that a nearer theme's list replaces theirs.
        for (_, file) in chain.reversed() {
            for (profile, events) in file.levels {
                levels[profile, default: [:]].merge(events) { _, nearer in nearer }
            }
        }
        return FeedbackTheme(
            name: chain[0].file.name, files: chain.map(\.path), patternFiles: chain.flatMap(\.file.patternFiles),
            ignored: chain.flatMap(\.file.ignored),
            notes: notes + chain.flatMap(\.file.notes), approximated: chain.flatMap(\.file.approximated),
            levels: levels)
    }

    /// The colour an LED shows for a theme's `Led` colour: the four names as they are, a `#RRGGBB`
    /// with one channel lit as that channel's colour and with three equal ones as white; anything
    /// else white, as feedbackd shows a colour it cannot parse (`exact` false). Our LEDs are told
    /// a colour, not a mix, so feedbackd's other RGB values have no exact match here.
    package static func ledColor(_ text: String) -> (color: LEDColor, exact: Bool) {
        if let named = LEDColor(rawValue: text) { return (named, true) }
        let digits = Array(text.utf8.dropFirst())
        guard text.first == "#", digits.count == 6,
            let value = UInt32(String(decoding: digits, as: UTF8.self), radix: 16)
        else { return (.white, false) }
        let channels = [(value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF]
        let lit = channels.filter { $0 != 0 }
        if lit.count == 3 && Set(lit).count == 1 { return (.white, true) }
        guard lit.count == 1, let index = channels.firstIndex(where: { $0 != 0 }) else { return (.white, false) }
        return ([LEDColor.red, .green, .blue][index], true)
    }
}

/// `path` with symbolic links, `.` and `..` resolved, to know one file under two names; `path`
/// itself when it cannot be resolved.
func canonicalPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// One theme file, validated.
struct ThemeFile {
    var name: String
    var parentName: String?
    var levels: [FeedbackProfile: [String: [ThemeFeedback]]] = [:]
    var patternFiles: [String] = []
    var ignored: [String] = []
    var notes: [String] = []
    var approximated: [String] = []

    static func read(_ path: String) throws(FeedbackThemeError) -> ThemeFile {
        let read: [UInt8]?
        do {
            read = try AtomicFile.read(path, limit: FeedbackTheme.maximumFileSize)
        } catch {
            throw FeedbackThemeError(path: path, problem: error.description)
        }
        guard let bytes = read else { throw FeedbackThemeError(path: path, problem: "no such file") }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(bytes))
        } catch {
            throw FeedbackThemeError(path: path, problem: "not a feedback theme: \(Self.explain(error))")
        }
        return try ThemeFile(document, path: path)
    }

    private init(_ document: Document, path: String) throws(FeedbackThemeError) {
        func fail(_ problem: String) -> FeedbackThemeError { FeedbackThemeError(path: path, problem: problem) }
        func bounded(_ text: String, _ what: String) throws(FeedbackThemeError) -> String {
            guard !text.isEmpty, text.utf8.count <= FeedbackTheme.maximumStringLength else {
                throw fail("\(what) must have 1 to \(FeedbackTheme.maximumStringLength) bytes")
            }
            return text
        }
        name = try bounded(document.name, "name")
        parentName = try document.parentName.map { (text: String) throws(FeedbackThemeError) in
            try bounded(text, "parent-name")
        }
        let profiles = document.profiles ?? []
        var patterns = 0
        let total = profiles.reduce(0) { $0 + ($1.feedbacks?.count ?? 0) }
        guard total <= FeedbackTheme.maximumEntries else {
            throw fail("\(total) feedbacks, more than \(FeedbackTheme.maximumEntries)")
        }
        for profile in profiles {
            guard let level = FeedbackProfile(rawValue: profile.name) else {
                // feedbackd keeps it under its name, and only ever looks up the three levels.
                notes.append(
                    "\(path): profile '\(profile.name.prefix(FeedbackTheme.maximumStringLength))' is never played "
                        + "(the profiles are full, quiet and silent)")
                continue
            }
            for (index, entry) in (profile.feedbacks ?? []).enumerated() {
                let place = "profile \(level.rawValue), feedback \(index + 1)"
                let event = try bounded(entry.eventName, "\(place): event-name")
                var feedback = try Self.feedback(entry, place: place, fail: fail)
                switch feedback {
                case .led(let color, _, _, _) where !FeedbackTheme.ledColor(color).exact:
                    approximated.append("\(place) (\(event)): '\(color)'")
                case .dummy where entry.type != "Dummy":
                    let type = entry.type.map { "type \($0.prefix(FeedbackTheme.maximumStringLength))" } ?? "no type"
                    ignored.append("\(place) (\(event)): \(type)")
                case .sound, .soundFile:
                    if let role = entry.mediaRole, Self.usableMediaRole(role) == nil {
                        notes.append(
                            "\(path): \(place) (\(event)): media-role '\(role.prefix(FeedbackTheme.maximumStringLength).debugDescription.dropFirst().dropLast())' is not used "
                                + "(a role is 1 to \(RoleOutputs<PulseAudioOutput>.maximumRoleLength) bytes, no control characters): the sound plays as an event sound")
                    }
                default:
                    break
                }
                if let name = entry.pattern {
                    let file = try bounded(name, "\(place): pattern")
                    if patterns >= FeedbackTheme.maximumPatterns {
                        notes.append("\(path): \(place) (\(event)): more than \(FeedbackTheme.maximumPatterns) patterns: it plays as written")
                    } else {
                        patterns += 1
                        let resolved = file.hasPrefix("/") ? file : HapticPattern.directory(of: path) + "/" + file
                        if !patternFiles.contains(resolved) { patternFiles.append(resolved) }
                        do {
                            feedback = .pattern(try HapticPattern(fileAt: resolved), instead: feedback)
                        } catch {
                            notes.append("\(path): \(place) (\(event)): its pattern cannot be read, so it plays as written: \(error)")
                        }
                    }
                }
                // One feedback per event and profile, the later entry winning, as feedbackd's table of them.
                levels[level, default: [:]][event] = [feedback]
            }
        }
    }

    /// `role` if a stream can carry it: 1 to `RoleOutputs.maximumRoleLength` bytes, no control
    /// characters. (feedbackd hands any string to libcanberra; one not usable here is noted and
    /// the sound plays on the output's own stream.)
    private static func usableMediaRole(_ role: String?) -> String? {
        guard let role, !role.isEmpty, role.utf8.count <= RoleOutputs<PulseAudioOutput>.maximumRoleLength,
            role.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control })
        else { return nil }
        return role
    }

    /// The feedback an entry describes; a `Dummy` for a type not known here.
    private static func feedback(
        _ entry: Entry, place: String, fail: (String) -> FeedbackThemeError
    ) throws(FeedbackThemeError) -> ThemeFeedback {
        func duration(_ given: Int?, _ field: String, default fallback: Int) throws(FeedbackThemeError) -> Int {
            let value = given ?? fallback
            guard (0...FeedbackTheme.maximumDuration).contains(value) else {
                throw fail("\(place): \(field) \(value) is outside 0…\(FeedbackTheme.maximumDuration) ms")
            }
            return value
        }
        func pattern(_ make: () throws(VibrationPattern.Invalid) -> VibrationPattern) throws(FeedbackThemeError)
            -> ThemeFeedback
        {
            let made: VibrationPattern
            do {
                made = try make()
            } catch {
                throw fail("\(place): not a vibration: \(error)")
            }
            guard made.duration <= FeedbackTheme.maximumDuration else {
                throw fail("\(place): the vibration lasts more than \(FeedbackTheme.maximumDuration) ms")
            }
            return .vibration(made)
        }
        switch entry.type {
        case "Sound":
            if let file = entry.fileName {
                guard file.hasPrefix("/"), file.utf8.count < PATH_MAX else {
                    throw fail("\(place): Sound's 'file-name' must be an absolute path of less than \(PATH_MAX) bytes")
                }
                return .soundFile(path: file, mediaRole: usableMediaRole(entry.mediaRole))
            }
            guard let effect = entry.effect, !effect.isEmpty, effect.utf8.count <= FeedbackTheme.maximumStringLength
            else {
                throw fail(
                    "\(place): Sound needs an 'effect' of 1 to \(FeedbackTheme.maximumStringLength) bytes or a 'file-name'")
            }
            return .sound(effect: effect, mediaRole: usableMediaRole(entry.mediaRole))
        case "VibraRumble":
            let total = try duration(entry.duration, "duration", default: FeedbackTheme.defaultVibraDuration)
            let count = entry.count ?? 1
            guard (1...FeedbackTheme.maximumSteps).contains(count) else {
                throw fail("\(place): count \(count) is outside 1…\(FeedbackTheme.maximumSteps)")
            }
            let pause = try duration(entry.pause, "pause", default: 0)
            let magnitude = entry.magnitude ?? 1
            return try pattern { () throws(VibrationPattern.Invalid) in
                try .rumble(duration: total, count: count, pause: pause, magnitude: magnitude)
            }
        case "VibraPeriodic":
            let total = try duration(entry.duration, "duration", default: FeedbackTheme.defaultVibraDuration)
            let fadeIn = try duration(entry.fadeInTime, "fade-in-time", default: 0)
            // feedbackd 0.8's magnitude is 0…1; 0.0.3's was the kernel's level, 0…0x7FFF.
            let given = entry.magnitude ?? 0x5000
            guard given.isFinite, given >= 0 else { throw fail("\(place): magnitude \(given) is negative") }
            let magnitude = given <= 1 ? given : min(given / 0x7FFF, 1)
            return try pattern { () throws(VibrationPattern.Invalid) in
                try .periodic(duration: total, magnitude: magnitude, fadeIn: min(fadeIn, total))
            }
        case "VibraPattern":
            let magnitudes = entry.magnitudes ?? []
            let durations = entry.durations ?? []
            guard magnitudes.count == durations.count, (1...FeedbackTheme.maximumSteps).contains(durations.count) else {
                throw fail(
                    "\(place): VibraPattern needs as many magnitudes as durations, 1…\(FeedbackTheme.maximumSteps)")
            }
            var steps: [VibrationPattern.Step] = []
            for (magnitude, length) in zip(magnitudes, durations) {
                steps.append(VibrationPattern.Step(duration: try duration(length, "durations", default: 0), intensity: magnitude))
            }
            return try pattern { () throws(VibrationPattern.Invalid) in try VibrationPattern(steps: steps) }
        case "Led":
            let color = entry.color ?? "white"
            guard color.utf8.count <= FeedbackTheme.maximumStringLength else { throw fail("\(place): color is too long") }
            let millihertz = entry.frequency ?? 0
            let brightness = entry.maxBrightness ?? 100
            let priority = entry.priority ?? 0
            guard (1...100).contains(brightness) else { throw fail("\(place): max-brightness \(brightness) is outside 1…100 %") }
            guard (0...255).contains(priority) else { throw fail("\(place): priority \(priority) is outside 0…255") }
            guard millihertz >= 0, millihertz <= UInt32.max, (try? LEDBlinkPattern(millihertz: UInt32(millihertz))) != nil else {
                throw fail(
                    "\(place): frequency \(millihertz) mHz is neither 0 (steady) nor "
                        + "\(Int(LEDBlinkPattern.frequencyRange.lowerBound * 1000))…\(Int(LEDBlinkPattern.frequencyRange.upperBound * 1000)) mHz")
            }
            return .led(
                color: color, millihertz: UInt32(millihertz), brightnessPercent: UInt32(brightness),
                priority: UInt8(priority))
        case "Dummy":
            return .dummy(milliseconds: try duration(entry.duration, "duration", default: 0))
        default:
            // feedbackd reads a type it does not know as a Dummy, with the fields a Dummy has.
            return .dummy(milliseconds: (try? duration(entry.duration, "duration", default: 0)) ?? 0)
        }
    }

    /// The decoder's complaint in one line.
    private static func explain(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            "missing '\(key.stringValue)' at \(path(context.codingPath))"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            "wrong type at \(path(context.codingPath)): \(context.debugDescription)"
        case .dataCorrupted(let context)?:
            "\(context.debugDescription) \(path(context.codingPath))"
        default:
            "\(error)"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.isEmpty ? "the top" : keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// The file as JSON has it.
    private struct Document: Decodable {
        var name: String
        var parentName: String?
        var profiles: [Profile]?

        enum CodingKeys: String, CodingKey {
            case name
            case parentName = "parent-name"
            case profiles
        }
    }

    private struct Profile: Decodable {
        var name: String
        var feedbacks: [Entry]?
    }

    private struct Entry: Decodable {
        var eventName: String
        var type: String?
        var effect: String?
        var fileName: String?
        var mediaRole: String?
        var duration: Int?
        var count: Int?
        var pause: Int?
        var magnitude: Double?
        var fadeInTime: Int?
        var magnitudes: [Double]?
        var durations: [Int]?
        var color: String?
        var frequency: Int?
        var maxBrightness: Int?
        var priority: Int?
        var pattern: String?

        enum CodingKeys: String, CodingKey {
            case eventName = "event-name"
            case type, effect
            case fileName = "file-name"
            case mediaRole = "media-role"
            case duration, count, pause, magnitude
            case fadeInTime = "fade-in-time"
            case magnitudes, durations, color, frequency
            case maxBrightness = "max-brightness"
            case priority, pattern
        }
    }
}
