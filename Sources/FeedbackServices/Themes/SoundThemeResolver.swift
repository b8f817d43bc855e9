import FoundationEssentials
import Synchronization

/// Where a sound was found: the file, and which theme and name matched.
package struct ResolvedSound: Sendable, Equatable {
    /// The sound file (for a disabled sound, the `.disabled` file).
    package let path: String
    /// The theme it belongs to; nil for an unthemed sound lying directly in a base directory.
    package let theme: String?
    /// The event name that was asked for.
    package let event: String
    /// The name that matched: `event` itself or a shorter one from the Sound Naming fallback
    /// (`message-new-instant` → `message-new` → `message`).
    package let matchedName: String
    /// The locale subdirectory it was found in, or nil for a non-localised sound.
    package let locale: String?
    /// The output profile of the theme directory it was found in; nil for an unthemed sound.
    package let outputProfile: String?
}

/// What a lookup searched when it found nothing.
package struct SoundLookupFailure: Sendable, Equatable, CustomStringConvertible {
    /// The event name that was asked for.
    package let event: String
    /// Every name tried, longest first.
    package let namesTried: [String]
    /// The themes searched, in order, parents included.
    package let themesSearched: [String]
    /// Themes that were to be searched but have no `index.theme` in any base directory.
    package let missingThemes: [String]
    /// The base directories.
    package let baseDirectories: [String]

    /// One line naming what was searched.
    package var description: String {
        var text = "no sound for \"\(escaped(event))\" (tried \(namesTried.joined(separator: ", ")))"
        text += " in themes \(themesSearched.isEmpty ? "(none installed)" : themesSearched.joined(separator: ", "))"
        if !missingThemes.isEmpty { text += "; not installed: \(missingThemes.joined(separator: ", "))" }
        text += "; base directories: \(baseDirectories.joined(separator: ":"))"
        return text
    }
}

/// The outcome of looking an event up.
package enum SoundLookupResult: Sendable, Equatable {
    /// A sound file to play.
    case resolved(ResolvedSound)
    /// The theme silences this event on purpose with a `.disabled` file: play nothing, and do not
    /// fall back to another theme.
    case disabled(ResolvedSound)
    /// No theme has a sound for it.
    case notFound(SoundLookupFailure)
}

/// Maps event names to sound files per the freedesktop Sound Theme spec (0.8) and Sound Naming spec.
///
/// The order is libcanberra's, so both agree on which file an event plays:
///
/// 1. Themes: the selected theme and its `Inherits` parents (depth first, each once, so a cycle
///    ends), then FeedbackServices' own theme and its parents (which guarantees every system sound
///    exists whatever the desktop's theme), then `freedesktop` — always last, even when a theme
///    lists it as a parent — and finally unthemed files directly in a base directory.
/// 2. Within one of those, output profiles: the requested one, then `stereo`, then any directory.
/// 3. Within a profile, names: the event, then the event with its last `-component` dropped, again
///    until no `-` is left.
/// 4. Within a name, locales: the full `LC_MESSAGES` locale (`de_DE.UTF-8@euro`), without the
///    `@modifier`, without the `.codeset`, without the `_COUNTRY`, then `C`, then no locale
///    subdirectory.
/// 5. Within a locale: each theme of the inheritance chain, each of its `Directories` matching the
///    profile, each base directory, then the suffixes `.disabled`, `.oga`, `.ogg`, `.wav`, then the
///    other formats we decode (`.flac`, `.opus`, `.mp3`, `.aiff`, `.caf`).
///
/// The first file found ends the search; a `.disabled` file ends it with `.disabled`.
///
/// Every lookup is bounded, whatever the files say (each bound a constant below): an event name has
/// at most 128 bytes; an inheritance chain is followed 16 levels deep and through at most 32 themes;
/// a theme's first 16 `Directories` are searched; an `index.theme` over 64 KiB is not read. Real
/// themes stay far inside these (the spec's names are under 64 characters; themes inherit one or
/// two levels and list one or two directories), so a lookup takes milliseconds however hostile the
/// theme files are.
///
/// A resolver is a value that looks at the file system on every lookup, so a theme installed or
/// edited while a program runs is seen at once. It (and its copies) remembers each lookup with the
/// stamps (`stat`: inode, size, modification time) of every `index.theme`, folder and candidate
/// file it read: while none has changed, the same event is answered with a `stat` per stamp rather
/// than reading them all again (a long-lived service looks the same events up over and over; issue
/// 13). Safe to use from any thread.
package struct SoundThemeResolver: Sendable {
    /// The theme that is searched first.
    package let theme: SoundThemeSelection
    /// The base directories.
    package let searchPath: SoundThemeSearchPath
    /// The requested output profile (`stereo`, `5.1`, …).
    package let outputProfile: String
    /// The `LC_MESSAGES` locale, e.g. `de_DE.UTF-8@euro`; nil or `C`/`POSIX` for none.
    package let locale: String?
    /// The lookups made so far, shared by the copies of this resolver.
    private let lookups = SoundLookupCache()

    /// The suffixes tried, in order.
    package static let suffixes = ["disabled", "oga", "ogg", "wav", "flac", "opus", "mp3", "aiff", "caf"]
    /// The theme searched after every other.
    package static let fallbackThemeName = "freedesktop"
    /// The longest event name looked up, in UTF-8 bytes. The Sound Naming spec's names have fewer
    /// than 64 characters; a longer name is refused (`.invalidEventName`), so a name of `a-a-a-…`
    /// cannot make a fallback list of thousands of names.
    package static let maximumEventNameLength = 128
    /// How many `Inherits` levels below a theme are followed; deeper ancestors are ignored.
    package static let maximumInheritanceDepth = 16
    /// How many themes one theme may stand for (itself and its ancestors, installed or not);
    /// the rest are ignored.
    package static let maximumThemesPerChain = 32
    /// How many of a theme's `Directories` are searched; the rest are ignored.
    package static let maximumDirectoriesPerTheme = 16

    /// Creates a resolver for theme `theme` in `searchPath`.
    package init(
        theme: SoundThemeSelection, searchPath: SoundThemeSearchPath, outputProfile: String = "stereo",
        locale: String? = nil
    ) {
        self.theme = theme
        self.searchPath = searchPath
        self.outputProfile = outputProfile
        self.locale = locale
    }

    /// The resolver a program gets by default: the theme `SoundThemeSelection.current` chooses, the
    /// standard search path, the `stereo` profile, and the locale of `LC_ALL`, `LC_MESSAGES` or `LANG`.
    /// - Throws: `SoundThemeError` if `explicitTheme` is not a valid theme name.
    package static func standard(
        explicitTheme: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SoundThemeError) -> SoundThemeResolver {
        SoundThemeResolver(
            theme: try SoundThemeSelection.current(explicit: explicitTheme, environment: environment),
            searchPath: .standard(environment: environment),
            locale: messagesLocale(environment: environment))
    }

    /// The locale POSIX applies to messages: `LC_ALL`, else `LC_MESSAGES`, else `LANG`; nil if none is set.
    package static func messagesLocale(environment: [String: String]) -> String? {
        for variable in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = environment[variable], !value.isEmpty { return value }
        }
        return nil
    }

    /// The locale subdirectories tried, in order (the non-localised directory comes after them).
    package static func localeFallbacks(_ locale: String?) -> [String] {
        var result: [String] = []
        func add(_ candidate: Substring) {
            let value = String(candidate)
            if !value.isEmpty, nameProblem(value) == nil, !result.contains(value) { result.append(value) }
        }
        if let locale, locale != "C", locale != "POSIX" {
            var current = Substring(locale)
            add(current)
            for separator: Character in ["@", ".", "_"] {
                if let index = current.firstIndex(of: separator) { current = current[..<index] }
                add(current)
            }
        }
        add("C")
        return result
    }

    /// The names tried for `event`: `a-b-c`, `a-b`, `a`. Each is a slice of `event`, so the list
    /// costs memory and time linear in the name's length, whatever its number of dashes.
    package static func nameFallbacks(_ event: String) -> [Substring] {
        var names = [Substring(event)]
        var current = Substring(event)
        while let dash = current.lastIndex(of: "-") {
            current = current[..<dash]
            if !current.isEmpty { names.append(current) }
        }
        return names
    }

    /// The top-level themes in search order: selected, ours, `freedesktop`.
    package var themeOrder: [String] {
        var order: [String] = []
        for name in [theme.name, SoundThemeSelection.defaultThemeName, Self.fallbackThemeName]
        where !order.contains(name) {
            order.append(name)
        }
        return order
    }

    /// The installed themes `top` stands for, in search order: itself, then its `Inherits` parents
    /// depth first. Each theme appears once, so an inheritance cycle ends; `freedesktop` is left out
    /// unless it is `top` (it is searched last on its own); themes without an `index.theme` are
    /// skipped. Ancestors more than `maximumInheritanceDepth` levels down, and every theme after
    /// the first `maximumThemesPerChain` looked at, are ignored.
    package func inheritance(of top: String) -> [SoundThemeIndex] {
        var checks: [FileCheck] = []
        return inheritance(of: top, checks: &checks)
    }

    /// `inheritance(of:)`, adding to `checks` every `index.theme` it tried.
    private func inheritance(of top: String, checks: inout [FileCheck]) -> [SoundThemeIndex] {
        var visited: Set<String> = []
        var result: [SoundThemeIndex] = []
        // Depth first with a stack of its own: a chain thousands of themes deep must not recurse.
        var pending: [(name: String, depth: Int)] = [(top, 0)]
        while let (name, depth) = pending.popLast(), visited.count < Self.maximumThemesPerChain {
            guard visited.insert(name).inserted else { continue }
            if name == Self.fallbackThemeName && name != top { continue }
            guard let index = SoundThemeIndex.load(theme: name, searchPath: searchPath, checks: &checks) else { continue }
            result.append(index)
            if depth < Self.maximumInheritanceDepth {
                pending += index.parents.reversed().lazy.filter { !visited.contains($0) }.map { ($0, depth + 1) }
            }
        }
        return result
    }

    /// Looks up `event` as described above.
    /// - Throws: `SoundThemeError` with `.invalidEventName` for a name holding `/`, `..` or a control
    ///   character (or an empty one); nothing is searched then.
    package func resolve(_ event: String) throws(SoundThemeError) -> SoundLookupResult {
        try validateEventName(event)
        return lookup(validEvent: event)
    }

    /// Looks up the event system sound `sound` plays. Catalog event names are valid, so this cannot
    /// be refused; with FeedbackServices' theme on the search path it always resolves.
    package func resolve(_ sound: SystemSound) -> SoundLookupResult {
        lookup(validEvent: sound.event)
    }

    /// The lookup of `event`: the remembered one while every file and folder it read is unchanged,
    /// else a new one, remembered.
    private func lookup(validEvent event: String) -> SoundLookupResult {
        if let remembered = lookups.result(for: event) { return remembered }
        var search = Search()
        let result = lookup(validEvent: event, search: &search)
        lookups.remember(result, for: event, checks: search.checks)
        return result
    }

    private func lookup(validEvent event: String, search: inout Search) -> SoundLookupResult {
        let names = Self.nameFallbacks(event)
        let locales: [String?] = Self.localeFallbacks(locale) + [nil]
        var profiles: [String?] = [outputProfile]
        if outputProfile != "stereo" { profiles.append("stereo") }
        profiles.append(nil)
        var searched: [String] = []
        var missing: [String] = []

        for top in themeOrder {
            let chain = inheritance(of: top, checks: &search.checks).filter { !searched.contains($0.name) }
            if chain.isEmpty && !searched.contains(top) { missing.append(top) }
            searched += chain.map(\.name)
            for profile in profiles {
                // The folders each locale searches, in order (theme, directory, base), listed once
                // before the names: folders that do not exist drop out here, so each name costs a
                // set lookup per existing folder.
                let folders = locales.map { locale in
                    chain.flatMap { index in
                        index.directories.filter { profile == nil || $0.outputProfile == profile }.flatMap { directory in
                            searchPath.baseDirectories.compactMap { base -> (String, SoundThemeIndex, SoundThemeIndex.Directory)? in
                                var folder = joinPath(joinPath(base, index.name), directory.path)
                                if let locale { folder = joinPath(folder, locale) }
                                return search.exists(folder) ? (folder, index, directory) : nil
                            }
                        }
                    }
                }
                for name in names {
                    for (locale, candidates) in zip(locales, folders) {
                        for (folder, index, directory) in candidates {
                            if let found = search.find(name, in: folder) {
                                let sound = ResolvedSound(
                                    path: found.path, theme: index.name, event: event, matchedName: String(name),
                                    locale: locale, outputProfile: directory.outputProfile)
                                return found.disabled ? .disabled(sound) : .resolved(sound)
                            }
                        }
                    }
                }
            }
        }
        for name in names {
            for base in searchPath.baseDirectories {
                if let found = search.find(name, in: base) {
                    let sound = ResolvedSound(
                        path: found.path, theme: nil, event: event, matchedName: String(name), locale: nil,
                        outputProfile: nil)
                    return found.disabled ? .disabled(sound) : .resolved(sound)
                }
            }
        }
        return .notFound(
            SoundLookupFailure(
                event: event, namesTried: names.map(String.init), themesSearched: searched, missingThemes: missing,
                baseDirectories: searchPath.baseDirectories))
    }

    /// The file checks of one lookup: each directory is listed once, so a miss costs one `readdir`
    /// per directory instead of one `stat` per name and suffix.
    private struct Search {
        var listings: [String: Set<String>] = [:]
        /// Every file and folder read, as it was before it was read.
        var checks: [FileCheck] = []

        /// Whether `folder` lists any file (listing it, once).
        mutating func exists(_ folder: String) -> Bool {
            !entries(of: folder).isEmpty
        }

        mutating func find(_ name: Substring, in folder: String) -> (path: String, disabled: Bool)? {
            let entries = entries(of: folder)
            guard !entries.isEmpty else { return nil }
            // String + String: `Substring + String` is the generic `+`, whose types the runtime
            // looks up by mangled name (~2 % of a `fire`'s main thread, perf).
            let stem = String(name) + "."
            for suffix in SoundThemeResolver.suffixes {
                let file = stem + suffix
                guard entries.contains(file) else { continue }
                let path = joinPath(folder, file)
                // What it is (a symbolic link's target may come or go without its folder changing).
                checks.append(FileCheck(path: path))
                if suffix == "disabled" {
                    if isNonDirectory(path) { return (path, true) }
                } else if isRegularFile(path) {
                    return (path, false)
                }
            }
            return nil
        }

        private mutating func entries(of folder: String) -> Set<String> {
            if let cached = listings[folder] { return cached }
            // A folder's stamp changes when a file is added, removed or renamed in it; a file's
            // content is the decoded-sound cache's to check.
            checks.append(FileCheck(path: folder))
            let entries = directoryEntries(folder) ?? []
            listings[folder] = entries
            return entries
        }
    }
}

/// A file or folder as a lookup found it: its stamp, or nil when there was nothing to `stat`.
struct FileCheck: Sendable {
    let path: String
    let stamp: FileStamp?

    /// `path` as it is now.
    init(path: String) {
        self.path = path
        stamp = FileStamp(path: path)
    }

    /// Whether `path` is as it was.
    var isUnchanged: Bool { FileStamp(path: path) == stamp }
}

/// A resolver's lookups by event, each with the checks that say it still holds. Bounded whatever
/// the theme files say: at most `capacity` events (a valid event name has at most 128 bytes), each
/// remembered only when it read at most `maximumChecks` files and folders (a real lookup reads ~20;
/// a hostile tree of inheritance chains and directories thousands, and is then looked up afresh
/// each time); when full, it starts again empty.
///
/// Thread safety: every method may be called from any thread (one Mutex).
final class SoundLookupCache: Sendable {
    static let capacity = 256
    static let maximumChecks = 256

    private struct Entry: Sendable {
        let result: SoundLookupResult
        let checks: [FileCheck]
    }
    private let entries = Lock<[String: Entry]>([:])

    /// The lookup of `event`, if one was made and nothing it read has changed since.
    func result(for event: String) -> SoundLookupResult? {
        guard let entry = entries.withLock({ $0[event] }), entry.checks.allSatisfy(\.isUnchanged) else { return nil }
        return entry.result
    }

    /// Keeps `result` as the lookup of `event` while `checks` hold (unless there are too many).
    func remember(_ result: SoundLookupResult, for event: String, checks: [FileCheck]) {
        guard checks.count <= Self.maximumChecks else { return }
        entries.withLock { entries in
            if entries.count >= Self.capacity && entries[event] == nil { entries.removeAll() }
            entries[event] = Entry(result: result, checks: checks)
        }
    }
}
