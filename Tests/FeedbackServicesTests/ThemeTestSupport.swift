import FeedbackServices
import FoundationEssentials
import Glibc

/// A private directory tree for one test, removed when the test ends.
final class ThemeTree {
    private let directory = TemporaryDirectory()
    var root: String { directory.path }

    /// A base directory below the root (created), e.g. `user` or `system`.
    func base(_ name: String) -> String {
        let path = root + "/" + name
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Writes `base/name/index.theme` with these parents and `(directory, OutputProfile)` entries
    /// (a nil profile leaves the key out).
    func theme(
        _ name: String, in base: String, inherits: [String] = [],
        directories: [(String, String?)] = [("stereo", "stereo")]
    ) {
        var text = "[Sound Theme]\nName=\(name) display name\n"
        if !inherits.isEmpty { text += "Inherits=\(inherits.joined(separator: ","))\n" }
        text += "Directories=\(directories.map(\.0).joined(separator: ","))\n"
        for (directory, profile) in directories {
            text += "\n[\(directory)]\n"
            if let profile { text += "OutputProfile=\(profile)\n" }
        }
        file(name + "/index.theme", in: base, contents: text)
    }

    /// Creates `base/relativePath` (and its directories); returns its full path.
    @discardableResult
    func file(_ relativePath: String, in base: String, contents: String = "not audio; lookup only checks names") -> String {
        let path = base + "/" + relativePath
        let directory = String(path[..<path.lastIndex(of: "/")!])
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? Data(contents.utf8).write(to: URL(filePath: path))
        return path
    }

    func remove(_ relativePath: String, in base: String) {
        try? FileManager.default.removeItem(atPath: base + "/" + relativePath)
    }
}

/// Builds a resolver over exactly `bases`.
func makeResolver(
    theme: String, bases: [String], profile: String = "stereo", locale: String? = nil
) -> SoundThemeResolver {
    SoundThemeResolver(
        theme: SoundThemeSelection(name: theme, source: .explicit), searchPath: SoundThemeSearchPath(bases),
        outputProfile: profile, locale: locale)
}

/// The resolved file, or nil for disabled/not found.
func resolvedPath(_ result: SoundLookupResult) -> String? {
    if case .resolved(let sound) = result { return sound.path }
    return nil
}

/// The repository's `SoundThemes` directory, found from this file's path.
let repositoryThemesDirectory: String = {
    var path = "\(#filePath)"
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/SoundThemes"
}()

/// The shipped theme's directory in the repository.
let shippedThemeDirectory = repositoryThemesDirectory + "/" + SoundThemeSelection.defaultThemeName

/// Every file of the shipped theme's sound directory, sorted.
func shippedSoundFiles() -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: shippedThemeDirectory + "/stereo")) ?? []).sorted()
}

/// The level of frequency `frequency` in `samples` (mono, `rate` Hz) by the Goertzel algorithm, after
/// a Hann window, as an amplitude in dB relative to a full-scale sine.
func goertzelLevel(_ samples: ArraySlice<Float>, frequency: Double, rate: Int) -> Double {
    let count = samples.count
    let coefficient = 2 * cos(2 * Double.pi * frequency / Double(rate))
    var s1 = 0.0
    var s2 = 0.0
    var windowSum = 0.0
    for (offset, sample) in samples.enumerated() {
        let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(offset) / Double(count - 1))
        windowSum += window
        let s0 = Double(sample) * window + coefficient * s1 - s2
        s2 = s1
        s1 = s0
    }
    let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
    let amplitude = 2 * sqrt(max(power, 0)) / windowSum
    return 20 * log10(max(amplitude, 1e-12))
}
