/// Why a sound-theme lookup was refused before any file was searched.
///
/// A sound that is simply not in any theme is not an error: `SoundThemeResolver.resolve(_:)`
/// returns `SoundLookupResult.notFound` for it, and `.disabled` for one a theme silences on purpose.
public struct SoundThemeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong with the request.
    public enum Reason: Sendable, Equatable {
        /// The event name is empty, holds `/`, `..` or a control character, or is longer than
        /// `SoundThemeResolver.maximumEventNameLength` bytes. Such a name could reach outside the
        /// theme directories (`../../etc/passwd`), forge terminal output, or cost work out of all
        /// proportion, so it is refused instead of looked up.
        case invalidEventName
        /// The theme name is empty, or holds `/`, `..`, a comma, a space, a control character or a
        /// non-ASCII character (the Sound Theme spec allows none of these in a theme name).
        case invalidThemeName
    }

    /// Why the request was refused.
    public var reason: Reason
    /// The name as it was given.
    public var name: String
    /// Which rule the name broke.
    public var detail: String

    /// Creates an error.
    public init(_ reason: Reason, name: String, detail: String) {
        self.reason = reason
        self.name = name
        self.detail = detail
    }

    /// "invalid event name "…": …", with control characters escaped so the message is safe to
    /// print, and a name over 128 bytes cut to its first 64 characters.
    public var description: String {
        let what = reason == .invalidEventName ? "event name" : "theme name"
        let shown = name.utf8.count > SoundThemeResolver.maximumEventNameLength ? "\(name.prefix(64))…" : name
        return "invalid \(what) \"\(escaped(shown))\": \(detail)"
    }
}

/// `name` with control characters and backslashes written as `\u{…}` escapes.
func escaped(_ name: String) -> String {
    var text = ""
    for scalar in name.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\\" {
            text += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            text.unicodeScalars.append(scalar)
        }
    }
    return text
}

/// The checks both kinds of name share; returns the broken rule, or nil.
func nameProblem(_ name: String) -> String? {
    if name.isEmpty { return "the name is empty" }
    if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
        return "the name holds a control character"
    }
    // Bytes, as the file system sees them; and not `contains(String)`, _StringProcessing's generic
    // search (~1 % of a `fire`'s main thread by perf: every lookup checks its names).
    let bytes = Array(name.utf8)
    if bytes.contains(UInt8(ascii: "/")) { return "the name holds '/'" }
    if zip(bytes, bytes.dropFirst()).contains(where: { $0 == UInt8(ascii: ".") && $1 == UInt8(ascii: ".") }) {
        return "the name holds '..'"
    }
    return nil
}

/// Refuses an event name that could escape a theme directory or is too long to be one; see
/// `SoundThemeError.Reason.invalidEventName`.
func validateEventName(_ name: String) throws(SoundThemeError) {
    let length = name.utf8.count
    if length > SoundThemeResolver.maximumEventNameLength {
        throw SoundThemeError(
            .invalidEventName, name: name,
            detail: "\(length) bytes; event names have at most \(SoundThemeResolver.maximumEventNameLength)")
    }
    if let problem = nameProblem(name) {
        throw SoundThemeError(.invalidEventName, name: name, detail: problem)
    }
}

/// Refuses a theme name the Sound Theme spec does not allow.
func validateThemeName(_ name: String) throws(SoundThemeError) {
    if let problem = nameProblem(name) {
        throw SoundThemeError(.invalidThemeName, name: name, detail: problem)
    }
    if name.unicodeScalars.contains(where: { $0 == "," || $0 == " " || !$0.isASCII }) {
        throw SoundThemeError(
            .invalidThemeName, name: name, detail: "theme names are ASCII without commas or spaces")
    }
}
