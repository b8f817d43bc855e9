import Foundation
import Glibc
import Testing

import FeedbackServices
import FeedbackTestSupport

/// The README's `feedbackctl` examples, run as a reader would run them: each line of its shell
/// blocks that starts with `feedbackctl`, as written, by `/bin/sh` in a directory holding the files
/// they name (`alert.wav`), with the built `feedbackctl` first on `PATH`, against the tests'
/// private PulseAudio, and with a home of the test's own (so `profile quiet` changes nothing
/// outside it). The D-Bus examples run against a private bus in `ReadmeBusExampleTests`; the set-up
/// commands (`scripts/fire-1007`, `scripts/test`, `scripts/install`) are what CI itself runs, and
/// `InstallTests` installs and uninstalls into a prefix.
@Suite(.serialized) struct ReadmeExampleTests {
    /// The README's lines that start with `feedbackctl` in its `sh` blocks, each without its comment.
    static func feedbackctlExamples() throws -> [String] {
        try shellLines(of: "\(repositoryRoot)/README.md").filter { $0.hasPrefix("feedbackctl ") }
    }

    /// The lines of a Markdown file's `sh` blocks, each without its ` # comment`, the lines a
    /// backslash continues joined.
    static func shellLines(of path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines: [String] = []
        var inShell = false
        var pending = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inShell = line == "```sh"
                continue
            }
            guard inShell else { continue }
            var command = String(line)
            if let comment = command.range(of: " # ") { command = String(command[..<comment.lowerBound]) }
            command = command.trimmingCharacters(in: .whitespaces)
            if command.hasSuffix("\\") {
                pending += command.dropLast() + " "
                continue
            }
            command = pending + command
            pending = ""
            if !command.isEmpty { lines.append(command) }
        }
        return lines
    }

    @Test func theREADMEHasTenEverydayCommandsAndAQuickStart() throws {
        let examples = try Self.feedbackctlExamples()
        #expect(examples.count >= 12, "\(examples)")
        #expect(examples.contains("feedbackctl fire 1007"))
        let text = try String(contentsOfFile: "\(repositoryRoot)/README.md", encoding: .utf8)
        // Short enough to read in five minutes.
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count <= 150)
        for heading in ["## The two commands", "## Quick start", "## Ten everyday commands", "## Where the rest is"] {
            #expect(text.contains("\n\(heading)\n"), "\(heading)")
        }
        // Every document it points at exists.
        for link in text.matches(of: /\]\((docs\/[a-z-]+\.md)\)/) {
            #expect(FileManager.default.fileExists(atPath: "\(repositoryRoot)/\(link.1)"), "\(link.1)")
        }
    }

    @Test func everyFeedbackctlExampleRuns() throws {
        let server = try PrivateSoundServer.address()
        let directory = "/tmp/feedbackctl-readme-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: "\(directory)/home", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tone = (0..<9_600).map { Float(0.3 * sin(2 * Double.pi * 660 * Double($0) / 48_000)) }
        try SoundFileWriter.write(
            try SoundDecoder().decode(samples: tone, sampleRate: 48_000, channelCount: 1), to: "\(directory)/alert.wav",
            format: .wav16)
        let built = builtProduct("feedbackctl")
        let environment = [
            "PATH=\(String(built[..<built.lastIndex(of: "/")!])):/usr/bin:/bin", "PULSE_SERVER=\(server)",
            "HOME=\(directory)/home", "XDG_CONFIG_HOME=\(directory)/home/.config", "XDG_DATA_HOME=\(directory)/home/.local/share",
            "XDG_CACHE_HOME=\(directory)/home/.cache", "XDG_RUNTIME_DIR=\(directory)",
            // No service here: the examples play in this process (ReadmeBusExampleTests has the service).
            "DBUS_SESSION_BUS_ADDRESS=unix:path=\(directory)/no-bus", "FEEDBACKCTL_NO_DAEMON=1",
        ]
        for example in try Self.feedbackctlExamples() {
            let ran = runProcess("/bin/sh", ["-c", "cd \(directory) && \(example)"], environment: environment)
            // This machine has no vibrator: what needs one says so (69), as the README's exit codes do.
            let needsVibrator = example.hasPrefix("feedbackctl vibrate")
            if needsVibrator {
                #expect(ran.status == 69 && ran.errors.contains("vibrat"), "\(example): \(ran.status) \(ran.errors)")
            } else {
                #expect(ran.status == 0, "\(example): \(ran.status) \(ran.errors)")
            }
        }
        #expect(FileManager.default.fileExists(atPath: "\(directory)/tri.wav"))
    }
}
