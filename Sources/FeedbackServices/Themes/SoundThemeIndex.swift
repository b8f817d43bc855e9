/// A theme's `index.theme`: its display name, parents and sound directories.
///
/// Per the Sound Theme spec, the first `index.theme` found while searching the base directories in
/// order describes the theme, while its sound files may be spread over the same theme directory in
/// every base directory (so a user's `~/.local/share/sounds/THEME/stereo/x.oga` overrides the
/// system's).
package struct SoundThemeIndex: Sendable, Equatable {
    /// One entry of `Directories`.
    package struct Directory: Sendable, Equatable {
        /// The path below the theme directory, e.g. `stereo` or `stereo/alerts`.
        package let path: String
        /// The group's `OutputProfile`; the spec's default, `stereo`, when the key is absent.
        package let outputProfile: String
    }

    /// The theme's internal name (its directory name).
    package let name: String
    /// The `index.theme` that describes it.
    package let indexFile: String
    /// `Name` under `[Sound Theme]`, or the internal name.
    package let displayName: String
    /// `Comment` under `[Sound Theme]`.
    package let comment: String?
    /// `Inherits`, in order.
    package let parents: [String]
    /// `Directories`, in order, each once, at most `SoundThemeResolver.maximumDirectoriesPerTheme`.
    /// Entries that are absolute or hold `..` are dropped: a theme may not point outside itself.
    package let directories: [Directory]

    /// Reads theme `name`'s `index.theme` from the first base directory that has one; nil if none
    /// does. Adds to `checks` each file it tried, as it was before reading.
    static func load(theme name: String, searchPath: SoundThemeSearchPath, checks: inout [FileCheck])
        -> SoundThemeIndex?
    {
        for base in searchPath.baseDirectories {
            let path = joinPath(joinPath(base, name), "index.theme")
            checks.append(FileCheck(path: path))
            if let file = KeyFile(path: path) {
                return SoundThemeIndex(name: name, indexFile: path, file: file)
            }
        }
        return nil
    }

    init(name: String, indexFile: String, file: KeyFile) {
        let group = "Sound Theme"
        self.name = name
        self.indexFile = indexFile
        displayName = file.value("Name", in: group) ?? name
        comment = file.value("Comment", in: group)
        parents = file.list("Inherits", in: group).filter { (try? validateThemeName($0)) != nil }
        var seen: Set<String> = []
        directories = file.list("Directories", in: group)
            .filter { !$0.hasPrefix("/") && !$0.contains("..") && seen.insert($0).inserted }
            .prefix(SoundThemeResolver.maximumDirectoriesPerTheme)
            .map { Directory(path: $0, outputProfile: file.value("OutputProfile", in: $0) ?? "stereo") }
    }
}
