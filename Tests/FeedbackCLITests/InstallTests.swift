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
