public import FoundationEssentials
import Glibc
import Synchronization

/// The system feedback profile, with feedbackd's names and meaning. A value; safe to share across threads.
public enum FeedbackProfile: String, Sendable, CaseIterable {
    /// Sound and vibration.
    case full
    /// No sound; vibration is allowed.
    case quiet
    /// Neither sound nor vibration.
    case silent

    /// Whether sound may play under this profile.
    public var allowsSound: Bool { self == .full }
    /// Whether the vibrator may run under this profile.
    public var allowsVibration: Bool { self != .silent }
}

/// Where the profile comes from: an environment variable, else a settings file, else `full`.
///
/// The file is `$XDG_CONFIG_HOME/feedbackservices/settings` (`~/.config/…` when `XDG_CONFIG_HOME` is
/// unset), a text file of `key=value` lines; `profile=quiet` sets the profile, `#` starts a comment,
/// other keys are ignored. `FEEDBACKSERVICES_PROFILE=quiet` in the environment overrides the file.
/// A value that is not a profile name is ignored, as if the line were absent. The file may have at
/// most 64 KiB (real ones have a line or two): a larger one, or one that is not a regular file, is
/// not read and counts as absent (`readFileProfile()` says why).
///
/// The file is read again whenever its modification time, size or inode changed since the last read
/// (one `stat` per lookup), so a change applies to the next play without a restart, whether the file
/// is edited in place or replaced by a rename.
///
/// Thread safety: `profile` may be read from any thread; the cache is behind a lock.
public final class FeedbackSettings: Sendable {
    /// The environment variable that overrides the settings file.
    public static let environmentVariable = "FEEDBACKSERVICES_PROFILE"

    /// The settings file read, or nil when neither `XDG_CONFIG_HOME` nor `HOME` is set.
    public let path: String?
    /// The value of `FEEDBACKSERVICES_PROFILE` when the settings were made, if it names a profile.
    public let environmentProfile: FeedbackProfile?

    private let cache = Lock<(stamp: FileStamp?, profile: FeedbackProfile?)>((nil, nil))
    private let valuesCache = Lock<(stamp: FileStamp?, values: [String: String])>((nil, [:]))

    /// Settings for the current user: the path and variable from `environment`.
    public convenience init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.init(path: Self.defaultPath(environment: environment), environment: environment)
    }

    /// Settings read from `path` (nil: no file), with `environment`'s override.
    public init(path: String?, environment: [String: String] = [:]) {
        self.path = path
        environmentProfile = environment[Self.environmentVariable].flatMap(Self.parse)
    }

    /// The path the settings file has for `environment`.
    public static func defaultPath(environment: [String: String]) -> String? {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return "\(config)/feedbackservices/settings"
        }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return "\(home)/.config/feedbackservices/settings"
    }

    /// The profile in force now: the environment's, else the file's, else `full`.
    public var profile: FeedbackProfile {
        environmentProfile ?? fileProfile ?? .full
    }

    /// The profile the settings file names, or nil (no file, no `profile=` line, or an unknown name).
    /// A file that cannot be read as settings (see `readFileProfile()`) counts as no file: the
    /// profile is then the environment's or `full`; `feedbackctl profile` reports why.
    public var fileProfile: FeedbackProfile? {
        guard let path else { return nil }
        let stamp = FileStamp(path: path)
        if let cached = cache.withLock({ $0.stamp == stamp && stamp != nil ? $0 : nil }) { return cached.profile }
        let profile = stamp == nil ? nil : (try? readFileProfile()) ?? nil
        cache.withLock { $0 = (stamp, profile) }
        return profile
    }

    /// Every `key=value` line of the settings file, key and value trimmed (the last line of a key
    /// wins): the settings other parts read from the same file (the service's notification
    /// sounds). Empty without a file, or when it cannot be read as settings. Read again only when
    /// the file changed (one `stat`).
    package var fileValues: [String: String] {
        guard let path else { return [:] }
        let stamp = FileStamp(path: path)
        if let cached = valuesCache.withLock({ $0.stamp == stamp && stamp != nil ? $0.values : nil }) { return cached }
        var values: [String: String] = [:]
        if stamp != nil, let bytes = try? SettingsFile.read(path) {
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                guard !Self.trimmed(line).hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
                values[Self.trimmed(line[..<equals])] = Self.trimmed(line[line.index(after: equals)...])
            }
        }
        valuesCache.withLock { $0 = (stamp, values) }
        return values
    }

    /// Writes `profile` to the settings file (creating its directory), replacing the file atomically
    /// and keeping its other lines.
    /// - Throws: `FileError`: `.cannotCreate` (also when neither `XDG_CONFIG_HOME` nor `HOME` is
    ///   set) or `.cannotWrite` with the system's message; the reasons of reading it
    ///   (`.permissionDenied`, `.notARegularFile`, `.tooLarge`, …) when the file there cannot be read.
    public func store(_ profile: FeedbackProfile) throws(FileError) {
        guard let path else {
            throw FileError(.cannotCreate, path: "feedback settings", detail: "neither XDG_CONFIG_HOME nor HOME is set")
        }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        try AtomicFile.makeDirectories(directory, mode: 0o700)
        let existing = try SettingsFile.read(path).map { String(decoding: $0, as: UTF8.self) }
        var lines = existing?.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) ?? []
        lines.removeAll { Self.key(of: $0) == "profile" }
        while lines.last == "" { lines.removeLast() }
        lines.append("profile=\(profile.rawValue)")
        // Keep a mode the user chose for the file (0644 less the umask for a new one).
        try AtomicFile.write(
            Array((lines.joined(separator: "\n") + "\n").utf8), to: path, permissions: .keepingExisting(new: 0o644),
            streams: .refuse)
    }

    /// The profile the settings file names, or nil (no file, no `profile=` line, or an unknown name).
    /// - Throws: `FileError` when the file is there but cannot be read as settings: over
    ///   `SettingsFile.sizeLimit` (`.tooLarge`), not a regular file, or unreadable.
    public func readFileProfile() throws(FileError) -> FeedbackProfile? {
        guard let path, let bytes = try SettingsFile.read(path) else { return nil }
        return Self.profile(in: String(decoding: bytes, as: UTF8.self))
    }

    static func parse(_ text: String) -> FeedbackProfile? {
        FeedbackProfile(rawValue: trimmed(text).lowercased())
    }

    private static func key(of line: String) -> String? {
        guard let equals = line.firstIndex(of: "=") else { return nil }
        return trimmed(line[..<equals])
    }

    private static func profile(in text: String) -> FeedbackProfile? {
        var profile: FeedbackProfile?
        for line in text.split(separator: "\n") {
            let line = String(line)
            guard !trimmed(line).hasPrefix("#"), key(of: line) == "profile",
                let equals = line.firstIndex(of: "=")
            else { continue }
            if let value = parse(String(line[line.index(after: equals)...])) { profile = value }
        }
        return profile
    }

    /// `text` without the spaces, tabs and carriage returns at either end. Found by index rather
    /// than with `reversed()`: the reversed views' generic metadata, built at run time on first
    /// use, cost `feedbackctl fire` a million instructions before its first sound.
    private static func trimmed(_ text: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) }) else {
            return ""
        }
        return String(text[first...last])
    }

    private static func trimmed(_ text: String) -> String { trimmed(text[...]) }
}
