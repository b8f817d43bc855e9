@testable import FeedbackServices
import Glibc
import Testing

/// Each Sound Theme / Sound Naming spec lookup rule, on theme trees built in a temporary directory.
struct ThemeLookupTests {
    @Test func resolvesAFileOfTheSelectedTheme() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("ocean", in: base)
        let file = tree.file("ocean/stereo/bell.oga", in: base)
        let result = try makeResolver(theme: "ocean", bases: [base]).resolve("bell")
        guard case .resolved(let sound) = result else { Issue.record("expected resolved, got \(result)"); return }
        #expect(sound.path == file)
        #expect(sound.theme == "ocean")
        #expect(sound.event == "bell")
        #expect(sound.matchedName == "bell")
        #expect(sound.locale == nil)
        #expect(sound.outputProfile == "stereo")
    }

    @Test func inheritsFromParentsInOrderAndChildrenOverride() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("child", in: base, inherits: ["mother", "father"])
        tree.theme("mother", in: base, inherits: ["grandmother"])
        tree.theme("father", in: base)
        tree.theme("grandmother", in: base)
        tree.file("father/stereo/a.wav", in: base)
        let fromGrandmother = tree.file("grandmother/stereo/a.wav", in: base)
        let fromChild = tree.file("child/stereo/b.wav", in: base)
        tree.file("father/stereo/b.wav", in: base)
        let resolver = makeResolver(theme: "child", bases: [base])
        // Depth first: mother's parent comes before father.
        #expect(resolver.inheritance(of: "child").map(\.name) == ["child", "mother", "grandmother", "father"])
        #expect(resolvedPath(try resolver.resolve("a")) == fromGrandmother)
        #expect(resolvedPath(try resolver.resolve("b")) == fromChild)
    }

    @Test func inheritanceCyclesEnd() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("a", in: base, inherits: ["b"])
        tree.theme("b", in: base, inherits: ["c", "a"])
        tree.theme("c", in: base, inherits: ["a", "b", "c"])
        let inC = tree.file("c/stereo/only-in-c.wav", in: base)
        let resolver = makeResolver(theme: "a", bases: [base])
        #expect(resolver.inheritance(of: "a").map(\.name) == ["a", "b", "c"])
        #expect(resolvedPath(try resolver.resolve("only-in-c")) == inC)
        guard case .notFound(let failure) = try resolver.resolve("nowhere") else {
            Issue.record("expected notFound")
            return
        }
        #expect(failure.themesSearched == ["a", "b", "c"])
    }

    @Test func outputProfileRequestedThenStereoThenAny() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base, directories: [("stereo", "stereo"), ("surround", "5.1"), ("plain", nil)])
        let stereo = tree.file("t/stereo/x.wav", in: base)
        let surround = tree.file("t/surround/x.wav", in: base)
        #expect(resolvedPath(try makeResolver(theme: "t", bases: [base], profile: "5.1").resolve("x")) == surround)
        #expect(resolvedPath(try makeResolver(theme: "t", bases: [base], profile: "stereo").resolve("x")) == stereo)
        #expect(resolvedPath(try makeResolver(theme: "t", bases: [base], profile: "mono").resolve("x")) == stereo)

        // A directory without OutputProfile counts as stereo (the spec's default).
        let plain = tree.file("t/plain/y.wav", in: base)
        #expect(resolvedPath(try makeResolver(theme: "t", bases: [base], profile: "mono").resolve("y")) == plain)

        // With neither the requested profile nor stereo, any directory is used.
        let onlySurround = tree.file("t/surround/z.wav", in: base)
        #expect(resolvedPath(try makeResolver(theme: "t", bases: [base], profile: "mono").resolve("z")) == onlySurround)
    }

    /// The locale chain for `de_DE.UTF-8@euro`; step `n` removes the `n` most specific directories.
    static let localeLevels = ["de_DE.UTF-8@euro", "de_DE.UTF-8", "de_DE", "de", "C", ""]

    @Test(arguments: 0..<6)
    func localeFallsBackStepByStep(step: Int) throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base)
        var expected = ""
        for (level, locale) in Self.localeLevels.enumerated() where level >= step {
            let path = tree.file(locale.isEmpty ? "t/stereo/hello.wav" : "t/stereo/\(locale)/hello.wav", in: base)
            if level == step { expected = path }
        }
        let result = try makeResolver(theme: "t", bases: [base], locale: "de_DE.UTF-8@euro").resolve("hello")
        guard case .resolved(let sound) = result else { Issue.record("expected resolved, got \(result)"); return }
        #expect(sound.path == expected)
        #expect(sound.locale == (Self.localeLevels[step].isEmpty ? nil : Self.localeLevels[step]))
    }

    @Test func localeFallbackLists() {
        #expect(
            SoundThemeResolver.localeFallbacks("de_DE.UTF-8@euro")
                == ["de_DE.UTF-8@euro", "de_DE.UTF-8", "de_DE", "de", "C"])
        #expect(SoundThemeResolver.localeFallbacks("sr_RS@latin") == ["sr_RS@latin", "sr_RS", "sr", "C"])
        #expect(SoundThemeResolver.localeFallbacks("fr") == ["fr", "C"])
        #expect(SoundThemeResolver.localeFallbacks("C") == ["C"])
        #expect(SoundThemeResolver.localeFallbacks("POSIX") == ["C"])
        #expect(SoundThemeResolver.localeFallbacks(nil) == ["C"])
        // A locale that would escape the directory is not used as one.
        #expect(SoundThemeResolver.localeFallbacks("../..") == ["C"])
    }

    @Test func disabledIsADistinctResultThatStopsTheSearch() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("child", in: base, inherits: ["parent"])
        tree.theme("parent", in: base)
        let disabled = tree.file("child/stereo/quiet.disabled", in: base, contents: "")
        tree.file("child/stereo/quiet.oga", in: base)
        tree.file("parent/stereo/quiet.wav", in: base)
        let result = try makeResolver(theme: "child", bases: [base]).resolve("quiet")
        guard case .disabled(let sound) = result else { Issue.record("expected disabled, got \(result)"); return }
        #expect(sound.path == disabled)
        #expect(sound.theme == "child")
    }

    @Test func suffixesInSpecOrderThenOurFormats() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base)
        let order = ["oga", "ogg", "wav", "flac", "opus", "mp3", "aiff", "caf"]
        for suffix in order { tree.file("t/stereo/s.\(suffix)", in: base) }
        let resolver = makeResolver(theme: "t", bases: [base])
        for suffix in order {
            #expect(resolvedPath(try resolver.resolve("s")) == base + "/t/stereo/s.\(suffix)")
            tree.remove("t/stereo/s.\(suffix)", in: base)
        }
        tree.file("t/stereo/s.txt", in: base)
        guard case .notFound = try resolver.resolve("s") else { Issue.record("a .txt file must not match"); return }
    }

    @Test func aDirectoryNamedLikeASoundIsNotASound() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base)
        tree.file("t/stereo/s.oga/inside", in: base)
        let wav = tree.file("t/stereo/s.wav", in: base)
        #expect(resolvedPath(try makeResolver(theme: "t", bases: [base]).resolve("s")) == wav)
    }

    @Test func nameFallbackDropsTheLastComponent() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base)
        let message = tree.file("t/stereo/message.oga", in: base)
        let resolver = makeResolver(theme: "t", bases: [base])
        guard case .resolved(let sound) = try resolver.resolve("message-new-instant") else {
            Issue.record("expected resolved")
            return
        }
        #expect(sound.path == message)
        #expect(sound.matchedName == "message")
        let messageNew = tree.file("t/stereo/message-new.oga", in: base)
        #expect(resolvedPath(try resolver.resolve("message-new-instant")) == messageNew)
        #expect(SoundThemeResolver.nameFallbacks("message-new-instant") == ["message-new-instant", "message-new", "message"])
        #expect(SoundThemeResolver.nameFallbacks("bell") == ["bell"])
    }

    @Test func freedesktopIsSearchedLastEvenWhenInherited() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base, inherits: ["freedesktop"])
        tree.theme("freedesktop", in: base)
        let shorter = tree.file("t/stereo/message.oga", in: base)
        let exact = tree.file("freedesktop/stereo/message-new-instant.oga", in: base)
        let onlyThere = tree.file("freedesktop/stereo/bell.oga", in: base)
        let resolver = makeResolver(theme: "t", bases: [base])
        #expect(resolver.inheritance(of: "t").map(\.name) == ["t"])
        #expect(resolver.themeOrder.last == "freedesktop")
        #expect(resolvedPath(try resolver.resolve("message-new-instant")) == shorter)
        #expect(resolvedPath(try resolver.resolve("bell")) == onlyThere)
        tree.remove("t/stereo/message.oga", in: base)
        #expect(resolvedPath(try resolver.resolve("message-new-instant")) == exact)
    }

    @Test func ourThemeComesBetweenTheSelectedOneAndFreedesktop() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("desktop", in: base)
        tree.theme(SoundThemeSelection.defaultThemeName, in: base)
        tree.theme("freedesktop", in: base)
        let ours = tree.file("\(SoundThemeSelection.defaultThemeName)/stereo/dtmf-1.wav", in: base)
        tree.file("freedesktop/stereo/dtmf-1.oga", in: base)
        let resolver = makeResolver(theme: "desktop", bases: [base])
        #expect(resolver.themeOrder == ["desktop", SoundThemeSelection.defaultThemeName, "freedesktop"])
        #expect(resolvedPath(try resolver.resolve("dtmf-1")) == ours)
    }

    @Test func unthemedSoundsInABaseDirectoryComeLast() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        let loose = tree.file("beep.wav", in: base)
        guard case .resolved(let sound) = try makeResolver(theme: "absent", bases: [base]).resolve("beep") else {
            Issue.record("expected resolved")
            return
        }
        #expect(sound.path == loose)
        #expect(sound.theme == nil)
    }

    @Test func earlierBaseDirectoriesOverrideLaterOnes() throws {
        let tree = ThemeTree()
        let user = tree.base("user")
        let system = tree.base("system")
        tree.theme("t", in: system, directories: [("stereo", "stereo")])
        // The user's copy of the theme has files but no index.theme: the system's index describes it.
        let override = tree.file("t/stereo/x.wav", in: user)
        tree.file("t/stereo/x.wav", in: system)
        let systemOnly = tree.file("t/stereo/y.wav", in: system)
        let resolver = makeResolver(theme: "t", bases: [user, system])
        #expect(resolvedPath(try resolver.resolve("x")) == override)
        #expect(resolvedPath(try resolver.resolve("y")) == systemOnly)
        #expect(resolver.inheritance(of: "t").first?.indexFile == system + "/t/index.theme")
        #expect(resolver.inheritance(of: "t").first?.displayName == "t display name")
    }

    @Test func directoriesOutsideTheThemeAreIgnored() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base, directories: [("../other", "stereo"), ("/etc", "stereo"), ("stereo", "stereo")])
        tree.file("other/secret.wav", in: base)
        #expect(makeResolver(theme: "t", bases: [base]).inheritance(of: "t").first?.directories.map(\.path) == ["stereo"])
        guard case .notFound = try makeResolver(theme: "t", bases: [base]).resolve("secret") else {
            Issue.record("a directory outside the theme must not be searched")
            return
        }
    }

    @Test func notFoundSaysWhatWasSearched() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("t", in: base)
        let result = try makeResolver(theme: "t", bases: [base]).resolve("no-such-sound")
        guard case .notFound(let failure) = result else { Issue.record("expected notFound"); return }
        #expect(failure.namesTried == ["no-such-sound", "no-such", "no"])
        #expect(failure.themesSearched == ["t"])
        #expect(failure.missingThemes == [SoundThemeSelection.defaultThemeName, "freedesktop"])
        #expect(failure.baseDirectories == [base])
        #expect(failure.description.contains("no-such-sound"))
    }

    @Test(arguments: ["", "a/b", "/etc/passwd", "..", "../x", "a..b", "bell\u{7}", "new\nline", "tab\tname", "del\u{7F}"])
    func refusesUnsafeEventNames(name: String) {
        let resolver = makeResolver(theme: "t", bases: ["/nonexistent"])
        #expect(throws: SoundThemeError.self) { try resolver.resolve(name) }
        do {
            _ = try resolver.resolve(name)
        } catch {
            #expect(error.reason == .invalidEventName)
            #expect(!error.description.contains("\n"))
        }
    }
}

/// One resolver asked again and again (a service's): its remembered lookups never hide a change.
extension ThemeLookupTests {
    @Test func oneResolverSeesEveryChangeToTheThemesItLookedUpAtOnce() throws {
        let tree = ThemeTree()
        let user = tree.base("user")
        let system = tree.base("system")
        tree.theme("t", in: system, inherits: ["parent"])
        tree.theme("parent", in: system)
        let fromParent = tree.file("parent/stereo/bell.oga", in: system)
        let resolver = makeResolver(theme: "t", bases: [user, system], locale: "de_DE.UTF-8")
        #expect(resolvedPath(try resolver.resolve("bell")) == fromParent)
        #expect(resolvedPath(try resolver.resolve("bell")) == fromParent)

        // A sound added to the theme itself, then to the user's copy of it (a folder and a base
        // directory that did not exist), then in a locale folder.
        let fromTheme = tree.file("t/stereo/bell.wav", in: system)
        #expect(resolvedPath(try resolver.resolve("bell")) == fromTheme)
        let fromUser = tree.file("t/stereo/bell.wav", in: user)
        #expect(resolvedPath(try resolver.resolve("bell")) == fromUser)
        let localised = tree.file("t/stereo/de/bell.wav", in: user)
        #expect(resolvedPath(try resolver.resolve("bell")) == localised)
        // Removed again, one by one.
        tree.remove("t/stereo/de", in: user)
        #expect(resolvedPath(try resolver.resolve("bell")) == fromUser)
        tree.remove("t/stereo/bell.wav", in: user)
        #expect(resolvedPath(try resolver.resolve("bell")) == fromTheme)
        // Silenced with a .disabled file, which ends the search.
        tree.file("t/stereo/bell.disabled", in: system)
        guard case .disabled = try resolver.resolve("bell") else {
            Issue.record("a .disabled file added later was not seen")
            return
        }
        tree.remove("t/stereo/bell.disabled", in: system)
        tree.remove("t/stereo/bell.wav", in: system)
        #expect(resolvedPath(try resolver.resolve("bell")) == fromParent)
        // The theme's index.theme edited in place: it no longer inherits from `parent`.
        tree.theme("t", in: system)
        guard case .notFound = try resolver.resolve("bell") else {
            Issue.record("an edited index.theme was not seen")
            return
        }
        // A symbolic link whose target appears later, its folder unchanged.
        let target = tree.root + "/elsewhere/bell.oga"
        #expect(symlink(target, system + "/t/stereo/bell.oga") == 0)
        guard case .notFound = try resolver.resolve("bell") else {
            Issue.record("a dangling link resolved")
            return
        }
        tree.file("elsewhere/bell.oga", in: tree.root)
        #expect(resolvedPath(try resolver.resolve("bell")) == system + "/t/stereo/bell.oga")
        // Copies of the resolver share what it learnt, and see changes the same way.
        let copy = resolver
        #expect(resolvedPath(try copy.resolve("bell")) == system + "/t/stereo/bell.oga")
    }
}

extension ThemeLookupTests {
    /// A lookup that read more than `maximumChecks` files and folders (a hostile tree) is not kept:
    /// the cache stays small whatever the themes say.
    @Test func aLookupThatReadTooMuchIsNotRemembered() {
        let cache = SoundLookupCache()
        let found = SoundLookupResult.notFound(
            SoundLookupFailure(event: "e", namesTried: ["e"], themesSearched: [], missingThemes: [], baseDirectories: []))
        let folder = FileCheck(path: "/")
        cache.remember(found, for: "small", checks: [folder])
        cache.remember(found, for: "huge", checks: Array(repeating: folder, count: SoundLookupCache.maximumChecks + 1))
        #expect(cache.result(for: "small") == found)
        #expect(cache.result(for: "huge") == nil)
    }
}
