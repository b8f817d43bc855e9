import Foundation
import Glibc
import Testing

@testable import FeedbackCLI
import FeedbackServices
import FeedbackTestSupport

@Suite struct HelpAndVersionTests {
    @Test func overviewFromEveryEntryPoint() {
        let bare = feedbackctl()
        #expect(bare.status == 0)
        #expect(bare.output.hasPrefix("OVERVIEW: "))
        #expect(bare.output.contains("USAGE: feedbackctl <command>"))
        for arguments in [["-h"], ["--help"], ["help"]] {
            let result = feedbackctl(arguments)
            #expect(result.status == 0)
            #expect(result.output == bare.output, "\(arguments)")
            #expect(result.errors.isEmpty)
        }
    }

    @Test func everyCommandIsListedAndHasTheSameHelpThreeWays() {
        let overview = feedbackctl().output
        for command in FeedbackCommand.subcommands {
            #expect(overview.contains("  \(command.name) "), "\(command.name) missing from the overview")
            let viaHelp = feedbackctl("help", command.name)
            let long = feedbackctl(command.name, "--help")
            let short = feedbackctl(command.name, "-h")
            // Even after a mistake: the help is what was asked for.
            let afterMistake = feedbackctl(command.name, "--no-such-option", "-h")
            #expect(viaHelp.status == 0 && long.status == 0 && short.status == 0 && afterMistake.status == 0)
            #expect(viaHelp.output == long.output && long.output == short.output && short.output == afterMistake.output)
            #expect(viaHelp.errors.isEmpty && long.errors.isEmpty && short.errors.isEmpty && afterMistake.errors.isEmpty)
            #expect(viaHelp.output == command.help)
            #expect(viaHelp.output.hasPrefix("OVERVIEW: "))
            #expect(viaHelp.output.contains("USAGE: feedbackctl \(command.name)"))
        }
    }

    @Test func version() throws {
        #expect(feedbackctl("version").output == "feedbackctl \(FeedbackCommand.version)\n")
        #expect(feedbackctl("--version").output == "feedbackctl \(FeedbackCommand.version)\n")
        let json = try #require(feedbackctl("version", "--json").output.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["version"] as? String == FeedbackCommand.version)
    }

    @Test(arguments: [
        (["bogus"], "unknown command 'bogus'"),
        (["version", "--bogus"], "unknown option '--bogus' for 'version'"),
        (["version", "extra"], "unexpected argument 'extra' for 'version'"),
        (["info"], "missing argument for 'info'"),
        (["help", "bogus"], "no help for unknown command 'bogus'"),
    ])
    func usageErrors(arguments: [String], message: String) {
        let result = feedbackctl(arguments)
        #expect(result.status == ExitCode.usage.rawValue)
        #expect(result.output.isEmpty)
        // The hint names the command's own help, once the command is known.
        let help = ["version", "info"].contains(arguments[0]) ? "help \(arguments[0])" : "help"
        #expect(result.errors == "Error: \(message)\nRun 'feedbackctl \(help)' for usage.\n")
    }
}

@Suite struct InfoCommandTests {
    let directory = "/tmp/feedbackctl-info-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    init() throws {
        mkdir(directory, 0o755)
        let samples = (0..<4_410).flatMap { frame -> [Float] in
            let value = Float(0.5 * sin(2 * Double.pi * 441 * Double(frame) / 44_100))
            return [value, value]
        }
        let buffer = try SoundDecoder(sampleRate: 44_100).decode(samples: samples, sampleRate: 44_100, channelCount: 2)
        try SoundFileWriter.write(buffer, to: "\(directory)/tone.wav", format: .wav16)
        _ = FileManager.default.createFile(atPath: "\(directory)/text.wav", contents: Data("hello".utf8))
    }

    @Test func describesAFile() {
        let result = feedbackctl("info", "\(directory)/tone.wav")
        #expect(result.status == 0)
        #expect(result.errors.isEmpty)
        #expect(result.output.contains("format:    WAV (Microsoft), Signed 16 bit PCM"))
        #expect(result.output.contains("source:    44100 Hz, 2 ch"))
        #expect(result.output.contains("decoded:   48000 Hz, 2 ch, 4800 frames"))
        #expect(result.output.contains("duration:  0.1 s"))
        #expect(result.output.contains("peak:      -6.0 dBFS"))
    }

    @Test func json() throws {
        let result = feedbackctl("info", "--json", "--", "\(directory)/tone.wav")
        #expect(result.status == 0)
        let data = try #require(result.output.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["version"] as? String == FeedbackCommand.version)
        let sounds = try #require(object["sounds"] as? [[String: Any]])
        #expect(sounds.count == 1)
        #expect(sounds[0]["sampleRate"] as? Int == 44_100)
        #expect(sounds[0]["channels"] as? Int == 2)
        #expect(sounds[0]["duration"] as? Double == 0.1)
    }

    @Test(arguments: [
        ("missing.wav", ExitCode.noInput, "no such file"),
        ("text.wav", ExitCode.dataError, "not a sound file"),
        (".", ExitCode.noInput, "is a directory"),
    ])
    func errors(name: String, code: ExitCode, message: String) {
        let path = "\(directory)/\(name)"
        let result = feedbackctl("info", path)
        #expect(result.status == code.rawValue)
        #expect(result.errors.hasPrefix("Error: \(path): \(message)"))
        #expect(result.output.isEmpty)
    }

    @Test func exitCodesFollowSysexits() {
        func code(_ reason: SoundError.Reason) -> ExitCode { SoundError(reason, source: "x").exitCode }
        func code(_ reason: FileError.Reason) -> ExitCode { FileError(reason, path: "x").exitCode }
        func code(_ reason: RegistryError.Reason) -> ExitCode { RegistryError(reason, source: "x").exitCode }
        #expect(code(SoundError.Reason.notFound) == .noInput)
        #expect(code(SoundError.Reason.notARegularFile) == .noInput)
        #expect(code(SoundError.Reason.permissionDenied) == .noPermission)
        #expect(code(.ioError(errno: EIO)) == .ioError)
        #expect(code(.exceedsMaximumDuration(seconds: 31, limit: 30)) == .dataError)
        #expect(code(.unsupportedEncoding) == .dataError)
        #expect(code(FileError.Reason.cannotCreate) == .cannotCreate)
        #expect(code(FileError.Reason.cannotWrite) == .cannotCreate)
        #expect(code(FileError.Reason.permissionDenied) == .noPermission)
        #expect(code(.tooLarge(size: 2, limit: 1)) == .dataError)
        #expect(code(.unknownSoundID(4097)) == .noInput)
        #expect(code(.registryDamaged) == .dataError)
        #expect(code(.registryBusy(waited: 10)) == .temporaryFailure)
        #expect(code(.noDefaultLocation) == .unavailable)
        // What failed beneath a registry keeps its own code.
        #expect(code(.sound(SoundError(.permissionDenied, source: "x"))) == .noPermission)
        #expect(code(.file(FileError(.cannotWrite, path: "x"))) == .cannotCreate)
        #expect(FeedbackError.registry(RegistryError(.unknownSoundID(1_000_000), source: "x")).exitCode == .noInput)
    }
}

/// The built binary, run as a process.
@Suite struct FeedbackctlBinaryTests {
    @Test func runsAndExitsWithTheRightCodes() {
        let binary = feedbackctlBinary
        let version = runProcess(binary, ["version"])
        #expect(version.status == 0)
        #expect(version.output == "feedbackctl \(FeedbackCommand.version)\n")
        let usage = runProcess(binary, ["--bogus"])
        #expect(usage.status == 64)
        #expect(usage.errors.hasPrefix("Error: unknown command '--bogus'"))
        let device = runProcess(binary, ["info", "/dev/zero"])
        #expect(device.status == 66)
    }

    /// Permission denied, for real: the file is unreadable to an unprivileged user, and
    /// feedbackctl runs as that user (root reads everything, so running as root proves nothing).
    @Test func permissionDeniedExitsWith77() throws {
        let directory = "/tmp/feedbackctl-perm-\(getpid())"
        mkdir(directory, 0o755)
        chmod(directory, 0o755)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/secret.wav"
        let buffer = try SoundDecoder().decode(samples: [0.1, 0.2], sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(buffer, to: path, format: .wav16)
        chmod(path, 0o600)
        let result: CommandResult
        if getuid() == 0 {
            result = runProcess(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", feedbackctlBinary, "info", path])
        } else {
            chmod(path, 0)
            result = runProcess(feedbackctlBinary, ["info", path])
        }
        #expect(result.status == 77, "\(result.errors)")
        #expect(result.errors == "Error: \(path): permission denied (Permission denied)\n")
    }
}
