import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// What a new user runs into: a command that does something other than what was meant, or nothing
/// at all, without saying so. In process, with a private XDG_DATA_HOME and the service not used.
@Suite struct UserTrapTests {
    let directory = TemporaryDirectory()
    var environment: [String: String] {
        ["XDG_DATA_HOME": directory.file("data"), "XDG_CONFIG_HOME": directory.file("config"), "FEEDBACKCTL_NO_DAEMON": "1"]
    }

    func run(_ arguments: String..., environment extra: [String: String] = [:], terminal: Bool = false) -> CommandResult {
        var output = ""
        var errors = ""
        let merged = ProcessInfo.processInfo.environment.merging(environment.merging(extra) { $1 }) { $1 }
        let status = FeedbackCommand.run(
            arguments: arguments, environment: merged, output: &output, errors: &errors, errorsAreTerminal: terminal)
        return CommandResult(status: status, output: output, errors: errors)
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    /// A tone of `seconds` at amplitude 0.5, as a WAV file.
    func tone(_ name: String, seconds: Double) throws -> String {
        let samples = (0..<Int(48_000 * seconds)).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
        let buffer = try SoundDecoder(maximumDuration: nil).decode(samples: samples, sampleRate: 48_000, channelCount: 1)
        let path = directory.file(name)
        try SoundFileWriter.write(buffer, to: path, format: .wav16)
        return path
    }

    /// How deeply parentheses nest in `text`.
    func nesting(_ text: String) -> Int {
        var depth = 0
        var deepest = 0
        for character in text {
            if character == "(" { depth += 1 } else if character == ")" { depth -= 1 }
            deepest = max(deepest, depth)
        }
        return deepest
    }

    // MARK: - Names that mean one thing

    @Test(arguments: ["full", "quiet", "silent"])
    func profileOnFireSaysWhereTheFeedbackProfileIsSet(profile: String) {
        let result = run("fire", "1007", "--profile", profile, "--output", directory.file("x.wav"))
        #expect(result.status == ExitCode.usage.rawValue)
        #expect(result.errors.contains("'feedbackctl profile \(profile)'"), "\(result.errors)")
        #expect(result.errors.contains("--output-profile"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("x.wav")))
        #expect(run("fire", "1007", "--profile=\(profile)").errors.contains("'feedbackctl profile \(profile)'"))
    }

    @Test func theOutputProfileHasItsOwnName() throws {
        let old = run("theme", "--profile", "stereo")
        #expect(old.status == ExitCode.usage.rawValue)
        #expect(old.errors.contains("'--output-profile NAME'"), "\(old.errors)")
        let theme = run("theme", "--output-profile", "stereo", "--json")
        #expect(theme.status == 0, "\(theme.errors)")
        let report = try json(theme.output)
        #expect(report["outputProfile"] as? String == "stereo" && report["profile"] == nil)
        let text = run("theme", "--output-profile", "5.1")
        #expect(text.output.contains("output profile: 5.1\n"), "\(text.output)")
        let rendered = run("fire", "1007", "--output-profile", "stereo", "--output", directory.file("y.wav"))
        #expect(rendered.status == 0, "\(rendered.errors)")
        #expect(run(["list", "--output-profile", "stereo"]).status == 0)
    }

    // MARK: - Saying what happened

    @Test(.enabled(if: (try? VibratorDiscovery(directory: Vibration.inputDirectory).vibrators().isEmpty) ?? true))
    func noWaitWithNoVibratorSaysSo() throws {
        // Quiet: the sound does not play, so nothing is started in the background.
        let result = run("fire", "1007", "--vibrate", "--no-wait", "--json", environment: ["FEEDBACKSERVICES_PROFILE": "quiet"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(try json(result.output)["vibration"] as? String == "noVibrator", "\(result.output)")
        #expect(result.errors.contains("Warning: no vibration: "), "\(result.errors)")
        // An ID that only vibrates fails as a waiting fire does.
        let only = run("fire", "4095", "--no-wait", "--json")
        #expect(only.status == ExitCode.unavailable.rawValue, "\(only.errors)")
        #expect((try json(only.output)["error"] as? [String: Any])?["exitCode"] as? Int == 69, "\(only.output)")
    }

    @Test(arguments: [("quiet", "no sound was played"), ("silent", "no sound was played")])
    func aProfileThatSilencesSaysSoOnATerminal(profile: String, what: String) throws {
        let variables = ["FEEDBACKSERVICES_PROFILE": profile]
        let shown = run("fire", "1007", environment: variables, terminal: true)
        #expect(shown.status == 0, "\(shown.errors)")
        #expect(shown.output.isEmpty)
        #expect(
            shown.errors == "Note: the feedback profile is \(profile) (set by FEEDBACKSERVICES_PROFILE=\(profile)): \(what); "
                + "'feedbackctl profile full' plays sounds again\n", "\(shown.errors)")
        // From the settings file, the note names the command that set it.
        #expect(run("profile", profile).status == 0)
        let stored = run("fire", "1007", terminal: true)
        #expect(stored.errors.contains("(set by 'feedbackctl profile \(profile)')"), "\(stored.errors)")
        // Not with -q (before the command too), and not for a script.
        #expect(run("fire", "-q", "1007", environment: variables, terminal: true).errors.isEmpty)
        #expect(run("-q", "fire", "1007", environment: variables, terminal: true).errors.isEmpty)
        #expect(run("fire", "1007", environment: variables).errors.isEmpty)
    }

    @Test func jsonErrorsAreAlsoOneObjectOnStandardOutput() throws {
        for (arguments, code) in [
            (["fire", "99999", "--json"], ExitCode.noInput), (["play", directory.file("nosuch.wav"), "--json"], .noInput),
            (["fire", "1007", "--json", "--volume", "9"], .usage),
        ] {
            let result = run(arguments)
            #expect(result.status == code.rawValue, "\(arguments)")
            #expect(result.errors.hasPrefix("Error: "), "\(arguments): \(result.errors)")
            #expect(result.output.hasSuffix("}\n") && result.output.split(separator: "\n").count == 1, "\(result.output)")
            let error = try #require(try json(result.output)["error"] as? [String: Any], "\(arguments)")
            #expect(error["exitCode"] as? Int == Int(code.rawValue))
            #expect(result.errors.hasPrefix("Error: \(error["message"] as? String ?? "?")\n"), "\(result.errors)")
        }
        // A command that prints its report anyway puts the failure in it, as the same "error".
        let theme = run("theme", "--json", "no-such-event")
        #expect(theme.status == ExitCode.noInput.rawValue)
        let report = try json(theme.output)
        #expect(report["events"] != nil)
        #expect((report["error"] as? [String: Any])?["message"] as? String == "no sound found for no-such-event")
        #expect(try json(run("theme", "--json").output)["error"] == nil)
        let devices = run("devices", "--audio", "--json", environment: ["PULSE_SERVER": "unix:/nonexistent/native"])
        #expect(devices.status == ExitCode.unavailable.rawValue)
        #expect((try json(devices.output)["error"] as? [String: Any])?["exitCode"] as? Int == 69, "\(devices.output)")
    }

    func run(_ arguments: [String]) -> CommandResult {
        var output = ""
        var errors = ""
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let status = FeedbackCommand.run(arguments: arguments, environment: merged, output: &output, errors: &errors)
        return CommandResult(status: status, output: output, errors: errors)
    }

    @Test func infoReportsEveryFile() throws {
        let good = try tone("a.wav", seconds: 0.5)
        let missing = directory.file("nosuch.wav")
        let text = directory.file("notaudio.txt")
        try "not a sound\n".write(toFile: text, atomically: true, encoding: .utf8)
        let result = run("info", good, missing, text)
        #expect(result.status == ExitCode.noInput.rawValue)
        #expect(result.output.contains("\(good)\n  format:"), "\(result.output)")
        #expect(result.output.contains("\(missing)\n  error:     "), "\(result.output)")
        #expect(result.output.contains("\(text)\n  error:     "), "\(result.output)")
        #expect(result.errors.contains("Error: 2 of 3 files could not be described: \(missing), \(text)\n"), "\(result.errors)")

        let report = try json(run("info", "--json", good, missing, text).output)
        #expect((report["sounds"] as? [[String: Any]])?.map { $0["path"] as? String } == [good])
        let failed = try #require(report["failed"] as? [[String: Any]])
        #expect(failed.map { $0["path"] as? String } == [missing, text])
        #expect(failed.map { $0["exitCode"] as? Int } == [66, 65])
        // One missing file alone: its own error, as before, and the JSON still parses.
        #expect((report["error"] as? [String: Any])?["exitCode"] as? Int == 66, "\(report)")
        let alone = run("info", "--json", missing)
        #expect(alone.status == ExitCode.noInput.rawValue)
        let aloneReport = try json(alone.output)
        #expect((aloneReport["failed"] as? [[String: Any]])?.count == 1)
        #expect((aloneReport["error"] as? [String: Any])?["message"] as? String == alone.errors.dropFirst("Error: ".count).dropLast().description)
        #expect(try json(run("info", "--json", good).output)["error"] == nil)
    }

    @Test func aFileLongerThanASystemSoundIsDescribedAndRendered() throws {
        let long = try tone("long.wav", seconds: 31)
        let info = run("info", long)
        #expect(info.status == 0, "\(info.errors)")
        #expect(info.output.contains("duration:  31.0 s (over 30 s: too long to register; 'play' streams it)"), "\(info.output)")
        let rendered = directory.file("rendered.flac")
        let play = run("play", long, "--output", rendered, "--json")
        #expect(play.status == 0, "\(play.errors)")
        #expect(try json(play.output)["duration"] as? Double == 31)
        #expect(abs(try SoundDecoder(maximumDuration: nil).decode(fileAt: rendered).buffer.duration - 31) < 0.01)
    }

    // MARK: - volume

    @Test func volumeSaysWhatItKeptAndWhy() throws {
        let file = try tone("short.wav", seconds: 0.3)
        let adjusted = run("volume", file, "0.5")
        #expect(adjusted.status == 0, "\(adjusted.errors)")
        #expect(adjusted.output.contains("  not saved:  a system sound or file keeps its own level; --export FILE writes this one\n"))
        #expect(adjusted.output.contains("unmeasurable (shorter than 0.4 s, the block EBU R128 measures)"), "\(adjusted.output)")
        #expect(!run("volume", file, "0.5", "--export", directory.file("half.wav")).output.contains("not saved"))

        // With no level: the level it has, for a file and for a registered ID.
        let shown = run("volume", file)
        #expect(shown.status == 0, "\(shown.errors)")
        #expect(shown.output.contains("  multiplier: 1.0\n") && shown.output.contains("  level:      as recorded;"), "\(shown.output)")
        let registered = run("register", "--volume", "0.25", try tone("long-enough.wav", seconds: 1))
        let id = registered.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(registered.status == 0, "\(registered.errors)")
        let stored = run("volume", id)
        #expect(stored.status == 0, "\(stored.errors)")
        #expect(stored.output.contains("  multiplier: 0.25\n") && stored.output.contains("  level:      stored for \(id);"), "\(stored.output)")
        #expect(stored.output.contains(" LUFS\n"), "\(stored.output)")
    }

    // MARK: - The command line

    @Test func globalOptionsBeforeTheCommand() {
        let wav = directory.file("q.wav")
        let quiet = run("-q", "fire", "1007", "--output", wav, "--json")
        #expect(quiet.status == 0, "\(quiet.errors)")
        #expect(quiet.output.isEmpty && FileManager.default.fileExists(atPath: wav))
        #expect(FeedbackCommand.commandFirst(["-q", "fire", "1007"]) == ["fire", "-q", "1007"])
        for arguments in [["--help", "fire"], ["-h", "fire"], ["fire", "help"]] {
            let help = run(arguments)
            #expect(help.status == 0 && help.output == FireCommand.help, "\(arguments)")
        }
        #expect(run(["help", "help"]).output == HelpCommand.help)
        let alone = run(["-q"])
        #expect(alone.status == 0 && alone.output.isEmpty && alone.errors.isEmpty, "\(alone.errors)")
    }

    @Test(arguments: [("fier", "fire"), ("lsit", "list"), ("devies", "devices"), ("ply", "play")])
    func aTypoGetsASuggestion(typo: String, command: String) {
        let result = run(typo, "1007")
        #expect(result.status == ExitCode.usage.rawValue)
        #expect(result.errors == "Error: unknown command '\(typo)'; did you mean '\(command)'?\nRun 'feedbackctl help' for usage.\n")
        #expect(!run("zzzzzz").errors.contains("did you mean"))
    }

    @Test func aCommandsUsageErrorNamesItsHelp() {
        let result = run("fire", "1007", "--bogus")
        #expect(result.errors == "Error: unknown option '--bogus' for 'fire'\nRun 'feedbackctl help fire' for usage.\n")
    }

    @Test func unplayableIDsAndEventsSayTheirReasonOnce() {
        let local = run("fire", "1000000")
        let unassigned = run("fire", "999")
        #expect(local.status == ExitCode.noInput.rawValue && local.status == unassigned.status, "\(local.errors)")
        #expect(nesting(local.errors) <= 1, "\(local.errors)")
        #expect(run("fire", "2000000000").status == ExitCode.noInput.rawValue)
        let event = run("fire", "nosuch-event")
        #expect(event.status == ExitCode.noInput.rawValue)
        #expect(event.errors.hasPrefix("Error: no sound for \"nosuch-event\" (tried nosuch-event, nosuch) in themes "), "\(event.errors)")
        #expect(event.errors.components(separatedBy: "no sound for").count == 2, "\(event.errors)")
    }

    @Test func outputRefusesAnExtensionItDoesNotWrite() {
        let path = directory.file("x.xyz")
        let result = run("fire", "1007", "--output", path)
        #expect(result.status == ExitCode.usage.rawValue)
        #expect(result.errors.contains("does not write '.xyz' files"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(run("fire", "1007", "--output", directory.file("x.flac")).status == 0)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func outputDashRefusesATerminal() {
        // script(1) gives the command a terminal as its standard output.
        let result = runProcess("/usr/bin/script", ["-qec", "\(feedbackctlBinary) fire 1007 --output -", "/dev/null"])
        #expect(result.status == ExitCode.usage.rawValue, "\(result.output)")
        #expect(result.output.contains("standard output, which is a terminal"), "\(result.output)")
        #expect(!result.output.contains("RIFF"))
    }

    // MARK: - Nits

    @Test func jsonDurationsAreRoundedToTheMillisecond() throws {
        let file = try tone("odd.wav", seconds: 0.13947916666666665)
        let info = try json(run("info", "--json", file).output)
        #expect((info["sounds"] as? [[String: Any]])?.first?["duration"] as? Double == 0.139)
        let fire = try json(run("fire", "1007", "--output", directory.file("d.wav"), "--json").output)
        let duration = try #require(fire["duration"] as? Double)
        #expect((duration * 1000).rounded() / 1000 == duration)
    }

    @Test func theShippedThemeIsDescribedInWords() throws {
        let selection = try SoundThemeSelection.current(environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        try #require(selection.source == .fallback, "\(selection)")
        #expect(run(["theme"]).output.contains("(the shipped theme, as no other is configured)"))
    }
}

/// `play` of a file longer than a system sound may be: the built feedbackctl against the private
/// PulseAudio server, streaming it.
@Suite struct LongFilePlaybackTests {
    @Test func aLongFilePlaysStreamedUntilStopped() throws {
        let server = try PrivateSoundServer.address()
        let directory = TemporaryDirectory()
        let samples = [Float](repeating: 0.05, count: 48_000 * 31)
        let long = directory.file("long.wav")
        try SoundFileWriter.write(
            try SoundDecoder(maximumDuration: nil).decode(samples: samples, sampleRate: 48_000, channelCount: 1), to: long,
            format: .wav16)
        // Still playing when Ctrl-C comes: it was not refused for its length.
        let result = runProcess(
            feedbackctlBinary, ["play", long], environment: ["PULSE_SERVER=\(server)", "FEEDBACKCTL_NO_DAEMON=1"],
            interruptAfter: 1.5)
        #expect(result.status == ExitCode.interrupted.rawValue, "\(result.errors)")
        #expect(!result.errors.contains("longer than"), "\(result.errors)")
    }
}
