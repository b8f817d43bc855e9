import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// `scripts/install`, from the feedbackctl this test run built (`--from-build`, so no second build),
/// into a temporary prefix; the installed program is then run from there.
@Suite struct InstallTests {
    let directory = TemporaryDirectory()

    var buildDirectory: String { String(feedbackctlBinary.dropLast("/feedbackctl".count)) }

    func install(_ arguments: [String], environment: [String] = []) -> CommandResult {
        runProcess("/bin/bash", [repositoryRoot + "/scripts/install", "--from-build", buildDirectory] + arguments, environment: environment)
    }

    @Test func installsAProgramThatFindsItsThemeAndDocumentation() throws {
        let prefix = directory.file("prefix")
        let result = install([prefix])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("installed in \(prefix)"))

        let program = prefix + "/bin/feedbackctl"
        #expect(isInstalled(program))
        for (path, text) in [
            ("share/man/man1/feedbackctl.1", Documentation.manPage),
            ("share/bash-completion/completions/feedbackctl", Completion.bash),
            ("share/zsh/site-functions/_feedbackctl", Completion.zsh),
        ] {
            #expect(try String(contentsOfFile: "\(prefix)/\(path)", encoding: .utf8) == text, "\(path)")
        }
        #expect(FileManager.default.fileExists(atPath: prefix + "/share/sounds/feedbackservices/index.theme"))

        // The installed program plays from the installed theme, not from this source tree.
        let wav = directory.file("x.wav")
        let fire = runProcess(program, ["fire", "1007", "--output", wav, "--json"])
        #expect(fire.status == 0, "\(fire.errors)")
        #expect(fire.output.contains("\"file\":\"\(prefix)/share/sounds/feedbackservices/stereo/"), "\(fire.output)")
        #expect(FileManager.default.fileExists(atPath: wav))
    }

    @Test(.enabled(if: shouldRun(needing: "/usr/bin/man", "/usr/bin/col")))
    func theInstalledManualPageRenders() throws {
        try requirePrograms("/usr/bin/man", "/usr/bin/col")
        let prefix = directory.file("prefix")
        #expect(install([prefix]).status == 0)
        let man = runProcess(
            "/bin/sh", ["-c", "man -l \"$1\" | col -b", "sh", prefix + "/share/man/man1/feedbackctl.1"],
            environment: ["MANWIDTH=80"])
        #expect(man.status == 0 && man.errors.isEmpty, "\(man.errors)")
        #expect(man.output.contains("feedbackctl - system sounds, alert feedback and vibration for Linux"))
    }

    @Test func destdirStagesUnderItAndTouchesNothingElse() throws {
        let stage = directory.file("stage")
        let prefix = "/opt/feedbackservices-test-\(getpid())"
        let result = install([prefix], environment: ["DESTDIR=\(stage)"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(isInstalled(stage + prefix + "/bin/feedbackctl"))
        #expect(FileManager.default.fileExists(atPath: stage + prefix + "/share/man/man1/feedbackctl.1"))
        #expect(!FileManager.default.fileExists(atPath: prefix))
    }

    /// Every path under `root`, relative to it, sorted; directories end in "/".
    func tree(_ root: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var paths: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory)
            paths.append(isDirectory.boolValue ? path + "/" : path)
        }
        return paths.sorted()
    }

    @Test func aPrefixTheBusDoesNotSearchIsNamedWithTheWayToChangeIt() {
        let prefix = directory.file("opt-fbs")
        let data = directory.file("data")
        let outside = install([prefix], environment: ["XDG_DATA_HOME=\(data)", "XDG_DATA_DIRS=/usr/share"])
        #expect(outside.status == 0, "\(outside.errors)")
        #expect(!outside.output.contains("now starts"), "\(outside.output)")
        #expect(outside.output.contains("the session bus will not start feedbackservicesd"), "\(outside.output)")
        #expect(outside.output.contains("ln -s \(prefix)/share/dbus-1/services/*.service \(data)/dbus-1/services/"))
        #expect(outside.output.contains("systemctl --user link \(prefix)/share/systemd/user/feedbackservicesd.service"))

        let searched = install([prefix], environment: ["XDG_DATA_HOME=\(data)", "XDG_DATA_DIRS=\(prefix)/share:/usr/share"])
        #expect(searched.status == 0, "\(searched.errors)")
        #expect(searched.output.contains("the session bus now starts feedbackservicesd for org.sigxcpu.Feedback"))
    }

    @Test func theSummaryNamesEverythingInstalled() throws {
        let prefix = directory.file("prefix")
        let result = install([prefix])
        #expect(result.status == 0, "\(result.errors)")
        let manifest = try String(contentsOfFile: prefix + "/share/feedbackservices/install-manifest", encoding: .utf8)
        let files = manifest.split(separator: "\n").filter { !$0.hasSuffix("/") && !$0.hasPrefix("share/sounds/feedbackservices/") }
        #expect(files.count == 13, "\(files)")
        for file in files { #expect(result.output.contains(file), "\(file)") }
        let sounds = tree(prefix + "/share/sounds/feedbackservices").filter { !$0.hasSuffix("/") }.count
        #expect(result.output.contains("share/sounds/feedbackservices/ (the sound theme, \(sounds) files)"), "\(result.output)")
    }

    @Test func uninstallRemovesExactlyWhatTheInstallPutThere() throws {
        let prefix = directory.file("prefix")
        // The user's own file, in directories that were there before the install.
        try FileManager.default.createDirectory(atPath: prefix + "/share/man/man1", withIntermediateDirectories: true)
        try "theirs\n".write(toFile: prefix + "/share/man/man1/other.1", atomically: true, encoding: .utf8)
        let before = tree(prefix)
        #expect(install([prefix]).status == 0)
        // Over an earlier install, then away: what was there before stays, and nothing else.
        #expect(install([prefix]).status == 0)
        let removed = runProcess("/bin/bash", [repositoryRoot + "/scripts/install", "--uninstall", prefix])
        #expect(removed.status == 0, "\(removed.errors)")
        #expect(removed.output.contains("removed feedbackctl and feedbackservicesd from \(prefix)"), "\(removed.output)")
        #expect(tree(prefix) == before)
        let again = runProcess("/bin/bash", [repositoryRoot + "/scripts/install", "--uninstall", prefix])
        #expect(again.status == 66 && again.errors.contains("install-manifest"), "\(again.errors)")

        // A prefix the install made goes with it.
        let made = directory.file("made")
        #expect(install([made]).status == 0)
        #expect(runProcess("/bin/bash", [repositoryRoot + "/scripts/install", "--uninstall", made]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: made))
        // A file of the user's keeps the directories it is in, and the message says so.
        #expect(install([made]).status == 0)
        try "theirs\n".write(toFile: made + "/share/sounds/mine.oga", atomically: true, encoding: .utf8)
        let partly = runProcess("/bin/bash", [repositoryRoot + "/scripts/install", "--uninstall", made])
        #expect(partly.status == 0, "\(partly.errors)")
        #expect(tree(made) == ["share/", "share/sounds/", "share/sounds/mine.oga"])
        #expect(partly.output.contains("install: kept \(made)/share/sounds \(made)/share \(made)"), "\(partly.output)")
    }

    @Test func placeholdersAreReplacedOnlyOutsideComments() throws {
        let prefix = directory.file("prefix")
        #expect(install([prefix]).status == 0)
        let activation = try String(
            contentsOfFile: prefix + "/share/dbus-1/services/org.sigxcpu.Feedback.service", encoding: .utf8)
        #expect(activation.contains("# scripts/install writes it to PREFIX/share/dbus-1/services with @bindir@ = PREFIX/bin"))
        #expect(activation.contains("\nExec=\(prefix)/bin/feedbackservicesd\n"))
        let unit = try String(contentsOfFile: prefix + "/share/systemd/user/feedbackservicesd.service", encoding: .utf8)
        #expect(!unit.split(separator: "\n").contains { !$0.hasPrefix("#") && $0.contains("@") }, "\(unit)")
        // The unit's documentation: the manual page and the D-Bus interface it serves, both installed.
        let interface = prefix + "/share/dbus-1/interfaces/org.feedbackservices.SystemSounds1.xml"
        #expect(unit.contains("\nDocumentation=man:feedbackservicesd(1) man:feedbackctl(1) file:\(interface)\n"), "\(unit)")
        #expect(FileManager.default.fileExists(atPath: prefix + "/share/man/man1/feedbackservicesd.1"))
        #expect(FileManager.default.fileExists(atPath: interface))
    }

    @Test(arguments: [
        (["relative/prefix"], "PREFIX must be an absolute path"),
        (["--bogus"], "unknown option '--bogus'"),
    ])
    func refusesBadArguments(arguments: [String], message: String) {
        let result = install(arguments)
        #expect(result.status == 64)
        #expect(result.errors.contains(message), "\(result.errors)")
    }
}
