import FoundationEssentials
import Glibc

/// The base directories sound themes are looked up in, in order (Sound Theme spec, "Directory Layout").
///
/// The standard path is the XDG one — `$XDG_DATA_HOME/sounds` (default `~/.local/share/sounds`), then
/// `sounds` under each entry of `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`) — followed by
/// the directory holding FeedbackServices' own theme (see `shippedThemesDirectory`). The shipped theme
/// comes last so that a user or a distribution can override any of its sounds.
package struct SoundThemeSearchPath: Sendable, Equatable, CustomStringConvertible {
    /// Absolute directory paths, searched first to last.
    package var baseDirectories: [String]

    /// A search path of exactly these directories; tests use it to look only in their own trees.
    package init(_ baseDirectories: [String]) {
        self.baseDirectories = baseDirectories
    }

    /// The XDG directories from `environment`, then the shipped theme directory when one is found.
    package static func standard(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> SoundThemeSearchPath {
        var directories = xdgDirectories(environment: environment)
        if let shipped = shippedThemesDirectory, !directories.contains(shipped) {
            directories.append(shipped)
        }
        return SoundThemeSearchPath(directories)
    }

    /// `$XDG_DATA_HOME/sounds` and each `$XDG_DATA_DIRS/sounds`, as the XDG Base Directory spec
    /// reads them: an unset or empty variable takes its default, and relative entries are ignored
    /// (the spec calls them invalid). Duplicates keep their first place.
    package static func xdgDirectories(environment: [String: String]) -> [String] {
        var dataHome = environment["XDG_DATA_HOME"] ?? ""
        if !dataHome.hasPrefix("/") {
            let home = environment["HOME"] ?? ""
            dataHome = home.hasPrefix("/") ? home + "/.local/share" : ""
        }
        var dataDirectories = (environment["XDG_DATA_DIRS"] ?? "").split(separator: ":").map(String.init)
            .filter { $0.hasPrefix("/") }
        if dataDirectories.isEmpty { dataDirectories = ["/usr/local/share", "/usr/share"] }
        var result: [String] = []
        for directory in [dataHome] + dataDirectories where !directory.isEmpty {
            let sounds = joinPath(directory, "sounds")
            if !result.contains(sounds) { result.append(sounds) }
        }
        return result
    }

    /// Where FeedbackServices' own theme lives: the installed copy if there is one, else the
    /// `SoundThemes` directory of the source tree this library was built from; nil if neither exists.
    package static var shippedThemesDirectory: String? {
        installedThemesDirectory ?? sourceTreeThemesDirectory
    }

    /// `<prefix>/share/sounds`, where `<prefix>` is the parent of the directory holding the running
    /// executable (`/proc/self/exe`): `scripts/install` puts `feedbackctl` in `<prefix>/bin` and the
    /// theme in `<prefix>/share/sounds/feedbackservices`, the freedesktop place, so that other
    /// players find it too when `<prefix>/share` is on `$XDG_DATA_DIRS`; this finds it wherever the
    /// prefix is. Nil when that directory holds no theme.
    package static var installedThemesDirectory: String? {
        executablePath().flatMap { installedThemesDirectory(forExecutable: $0) }
    }

    /// `installedThemesDirectory` for an executable at `path` (e.g. `/opt/fbs/bin/feedbackctl` →
    /// `/opt/fbs/share/sounds`), or nil when that directory holds no theme.
    package static func installedThemesDirectory(forExecutable path: String) -> String? {
        let prefix = parentDirectory(parentDirectory(path))
        let directory = joinPath(prefix, "share/sounds")
        return holdsShippedTheme(directory) ? directory : nil
    }

    /// The repository's `SoundThemes` directory, found from this source file's own path, so that
    /// `swift run` and `swift test` use the theme the tree holds. Nil when the build has moved away
    /// from its sources.
    package static var sourceTreeThemesDirectory: String? {
        // #filePath is …/Sources/FeedbackServices/Themes/SoundThemeSearchPath.swift.
        var root = "\(#filePath)"
        for _ in 0..<4 { root = parentDirectory(root) }
        let directory = joinPath(root, "SoundThemes")
        return holdsShippedTheme(directory) ? directory : nil
    }

    /// The directories, one per line.
    package var description: String { baseDirectories.joined(separator: "\n") }

    private static func holdsShippedTheme(_ directory: String) -> Bool {
        isRegularFile(joinPath(directory, SoundThemeSelection.defaultThemeName + "/index.theme"))
    }

    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// `directory/name`, without doubling a slash.
func joinPath(_ directory: String, _ name: String) -> String {
    if name == "." { return directory }
    return directory.hasSuffix("/") ? directory + name : directory + "/" + name
}

/// The path without its last component ("/a/b" → "/a", "/a" → "/").
func parentDirectory(_ path: String) -> String {
    var trimmed = Substring(path)
    while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
    guard let slash = trimmed.lastIndex(of: "/") else { return "." }
    return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
}

/// Whether `path` is a regular file, following symbolic links.
func isRegularFile(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
}

/// Whether anything that is not a directory exists at `path`, following symbolic links.
func isNonDirectory(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && (status.st_mode & S_IFMT) != S_IFDIR
}

/// The names in a directory, or nil if it cannot be read.
func directoryEntries(_ path: String) -> Set<String>? {
    guard let directory = opendir(path) else { return nil }
    defer { closedir(directory) }
    var names: Set<String> = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
            String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name != "." && name != ".." { names.insert(name) }
    }
    return names
}
