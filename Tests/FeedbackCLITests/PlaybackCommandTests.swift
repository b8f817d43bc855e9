import Foundation
import Glibc
import Testing

@testable import FeedbackCLI
import FeedbackServices
import FeedbackTestSupport

/// `fire` and `play`: argument and error paths in process, and the built binary against a real
/// PulseAudio server.
@Suite struct PlaybackCommandTests {
    @Test(arguments: [
        (["fire"], ExitCode.usage, "missing argument for 'fire'"),
        (["fire", "1017"], .noInput, "system sound 1017 is not assigned"),
        (["fire", "99999"], .noInput, "no sound is registered as 99999"),
        (["fire", "2000"], .noInput, "2000 is not a system sound ID (1000…1351, or 4095 to vibrate); registered sounds have IDs from 4097"),
        (["fire", "1000000"], .noInput,
         "1000000 is a process-local sound ID, in 1000000…1999999999 (sounds registered inside one process): only the program that registered it can play it"),
        (["fire", "2000000000"], .noInput, "which feedbackctl cannot play"),
        (["fire", "1007", "--wait", "--no-wait"], .usage, "--wait and --no-wait exclude each other"),
        (["fire", "4095", "--output", "x.wav"], .usage, "4095 only vibrates; there is no sound to write to a file"),
        (["stop", "--timeout", "soon"], .usage, "--timeout takes seconds from 0 to 60, not 'soon'"),
        (["stop", "everything"], .usage, "unexpected argument 'everything' for 'stop'"),
        (["fire", "no-such-event-anywhere"], .noInput, #"no sound for "no-such-event-anywhere""#),
        (["fire", "../etc/passwd"], .usage, "event name"),
        (["fire", "1007", "--volume", "loud"], .usage, "--volume takes a number from 0.0 to 4.0, not 'loud'"),
        (["fire", "1007", "--output", "x.wav", "--canberra"], .usage, "--output and --canberra cannot be used together"),
        (["play"], .usage, "missing argument for 'play'"),
        (["play", "/nonexistent.wav"], .noInput, "/nonexistent.wav: no such file"),
        (["play", "/dev/zero"], .noInput, "not a regular file"),
        (["play", "x.wav", "--pan", "2"], .usage, "--pan takes a number from -1.0 to 1.0"),
        (["play", "x.wav", "--loop", "0"], .usage, "--loop takes a whole number of 1 or more"),
    ])
    func errors(arguments: [String], code: ExitCode, message: String) {
        let result = feedbackctl(arguments)
        #expect(result.status == code.rawValue, "\(result.errors)")
        #expect(result.errors.hasPrefix("Error: "))
        #expect(result.errors.contains(message), "\(result.errors)")
    }

    /// With the profile silent, `fire --no-wait` starts no player and says so.
    @Test func noWaitUnderASilentProfileStartsNothing() throws {
        let result = feedbackctl(["fire", "1007", "--no-wait", "--vibrate", "--json"], environment: ["FEEDBACKSERVICES_PROFILE": "silent"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("\"result\":\"silenced\"") && result.output.contains("\"vibration\":\"silenced\""), "\(result.output)")
    }

    /// `stop` reads only a directory that is the user's own and closed to others: in /tmp anyone
    /// could have made it, and its files would name processes to signal. It refuses one open to
    /// others (77) rather than silently stopping nothing.
    @Test func stopRefusesADirectoryOpenToOthers() throws {
        let runtime = "/tmp/feedbackctl-open-\(getpid())"
        let directory = ActivePlayers.directory(environment: ["XDG_RUNTIME_DIR": runtime])
        mkdir(runtime, 0o700)
        mkdir(directory, 0o755)
        chmod(directory, 0o755)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        #expect(ActivePlayers.players(in: directory).isEmpty)
        let result = feedbackctl(["stop"], environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(result.status == 77)
        #expect(result.errors.contains("is open to other users (mode 755)"), "\(result.errors)")
        chmod(directory, 0o700)
        #expect(feedbackctl(["stop"], environment: ["XDG_RUNTIME_DIR": runtime]).output == "Nothing was playing.\n")
    }

    @Test func fireRendersTheTriToneIntoAFile() throws {
        let path = "/tmp/feedbackctl-fire-\(getpid()).wav"
        defer { unlink(path) }
        let result = feedbackctl("fire", "1007", "--output", path, "--json")
        #expect(result.status == 0, "\(result.errors)")
        let data = try #require(result.output.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["id"] as? Int == 1007)
        #expect(object["result"] as? String == "finished")
        let decoded = try SoundDecoder().decode(fileAt: path)
        let expected = try #require(object["duration"] as? Double)
        #expect(abs(decoded.buffer.duration - expected) < 0.001)
        #expect(decoded.buffer.peak > 0.1)
    }

    @Test func playRendersPanAndLoopsIntoAFile() throws {
        let source = "/tmp/feedbackctl-src-\(getpid()).wav"
        let path = "/tmp/feedbackctl-play-\(getpid()).wav"
        defer {
            unlink(source)
            unlink(path)
        }
        let tone = try SoundDecoder().decode(samples: [Float](repeating: 0.5, count: 4_800), sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(tone, to: source, format: .wav16)
        let result = feedbackctl("play", "--pan", "-1", "--loop", "3", "--output", path, source)
        #expect(result.status == 0, "\(result.errors)")
        let decoded = try SoundDecoder().decode(fileAt: path).buffer
        #expect(decoded.frameCount == 14_400)
        #expect(decoded.samples[1] == 0, "panned fully left: the right channel is silent")
        #expect(abs(decoded.samples[0] - 0.5) < 0.001)
    }
}

/// The built feedbackctl against a private PulseAudio server (started by scripts/private-pulseaudio).
@Suite(.serialized) struct PlaybackBinaryTests {
    @Test func fire1007PlaysTheTriTone() throws {
        let server = try PrivateSoundServer.address()
        let started = Date()
        let result = runProcess(feedbackctlBinary, ["fire", "1007", "--json"], environment: ["PULSE_SERVER=\(server)"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.errors)")
        let data = try #require(result.output.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["result"] as? String == "finished")
        let duration = try #require(object["duration"] as? Double)
        // It waited for the sound to be played, and not much longer.
        #expect(elapsed >= duration)
        #expect(elapsed < duration + 2)
    }

    @Test func noServerIsExit69NamingWhereItLooked() {
        let result = runProcess(feedbackctlBinary, ["fire", "1007"], environment: ["PULSE_SERVER=unix:/nonexistent/native"])
        #expect(result.status == 69)
        #expect(result.errors.contains("no audio output is available"))
        #expect(result.errors.contains("unix:/nonexistent/native (PULSE_SERVER)"))
    }

    @Test func theProfileSilencesFire() throws {
        let server = try PrivateSoundServer.address()
        for (profile, result) in [("quiet", "silenced"), ("silent", "silenced"), ("full", "finished")] {
            let run = runProcess(
                feedbackctlBinary, ["fire", "1007", "--json"],
                environment: ["PULSE_SERVER=\(server)", "FEEDBACKSERVICES_PROFILE=\(profile)"])
            #expect(run.status == 0, "\(run.errors)")
            #expect(run.output.contains("\"result\":\"\(result)\"") && run.output.contains("\"profile\":\"\(profile)\""), "\(run.output)")
        }
    }

    /// Two waiting players and one left by --no-wait, all ended by `feedbackctl stop`.
    @Test func stopEndsEveryPlayer() throws {
        let server = try PrivateSoundServer.address()
        let (runtime, source, environment) = try longSoundRuntime("stop", server: server)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let directory = ActivePlayers.directory(environment: ["XDG_RUNTIME_DIR": runtime])
        // A file left by a player that was killed: no lock, so it is cleaned up and not signalled.
        mkdir(directory, 0o700)
        _ = FileManager.default.createFile(atPath: "\(directory)/999999", contents: Data("feedbackctl play x\n".utf8))

        let players = (0..<2).map { _ in
            inBackground { runProcess(feedbackctlBinary, ["play", source], environment: environment) }
        }
        let detached = runProcess(feedbackctlBinary, ["play", "--no-wait", source], environment: environment)
        #expect(detached.status == 0)
        let deadline = Date().addingTimeInterval(5)
        while ActivePlayers.players(in: directory).count < 3 && Date() < deadline { usleep(10_000) }
        let playing = ActivePlayers.players(in: directory)
        #expect(playing.count == 3 && playing.allSatisfy { $0.what == "feedbackctl play \(source)" }, "\(playing)")

        let started = Date()
        let stop = runProcess(feedbackctlBinary, ["stop", "--json"], environment: environment)
        #expect(stop.status == 0, "\(stop.errors)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stop.output.utf8)) as? [String: Any])
        let stopped = try #require(report["stopped"] as? [[String: Any]])
        #expect(Set(stopped.compactMap { $0["pid"] as? Int }) == Set(playing.map { Int($0.pid) }))
        for player in players {
            let result = player()
            #expect(result.status == 143, "\(result.errors)")
        }
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(playing.allSatisfy { !ActivePlayers.isRunning($0.pid, in: directory) })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "every player removed its file")
        #expect(runProcess(feedbackctlBinary, ["stop"], environment: environment).output == "Nothing was playing.\n")
    }

    /// The player `--no-wait` leaves behind holds none of the descriptors its caller passed beyond
    /// standard error: a pipe its caller handed down (as a shell's `$(…)` or a supervisor's does)
    /// reaches end of file when the command returns, not when the sound ends ten seconds later.
    @Test func theDetachedPlayerHoldsNoInheritedDescriptor() throws {
        let server = try PrivateSoundServer.address()
        let (runtime, source, environment) = try longSoundRuntime("inherit", server: server)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        defer { _ = runProcess(feedbackctlBinary, ["stop"], environment: environment) }
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        // The read end is ours alone; the write end goes to the command as descriptor 9.
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in Int32(0)...2 { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        posix_spawn_file_actions_adddup2(&actions, ends[1], 9)
        let words: [String] = [feedbackctlBinary, "play", "--no-wait", source]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        #expect(posix_spawn(&pid, feedbackctlBinary, &actions, nil, argv, envp) == 0)
        close(ends[1])
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        #expect(status == 0, "feedbackctl play --no-wait exited \(status)")
        let directory = ActivePlayers.directory(environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(ActivePlayers.players(in: directory).count == 1, "the player plays on")
        var descriptor = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, 2_000)
        var byte: UInt8 = 0
        #expect(ready == 1 && read(ends[0], &byte, 1) == 0, "the pipe is still held open by the player")
        close(ends[0])
    }

    /// `play --no-wait` returns only once its player has announced itself, so a `stop` right
    /// after it finds the player (it used to find nothing while the player was still starting).
    @Test func stopRightAfterNoWaitFindsThePlayer() throws {
        let server = try PrivateSoundServer.address()
        let (runtime, source, environment) = try longSoundRuntime("stop-now", server: server)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        for _ in 0..<3 {
            #expect(runProcess(feedbackctlBinary, ["play", "--no-wait", source], environment: environment).status == 0)
            let stop = runProcess(feedbackctlBinary, ["stop"], environment: environment)
            #expect(stop.status == 0 && stop.output.hasPrefix("Stopped 1 player:"), "\(stop.output) \(stop.errors)")
        }
        #expect(runProcess(feedbackctlBinary, ["stop", "--timeout", "0"], environment: environment).status == 0)
    }

    /// libcanberra's open fails without a server; the output reports it instead of crashing on a
    /// context destroyed twice (once by the failed init, once by deinit).
    @Test func noServerForLibcanberraIsExit69() {
        let result = runProcess(
            feedbackctlBinary, ["fire", "1007", "--canberra"], environment: ["PULSE_SERVER=unix:/nonexistent/native"])
        #expect(result.status == 69, "\(result.errors)")
        #expect(result.errors.hasPrefix("Error: libcanberra failed"))
    }

    /// Ctrl-C once the sound is heard: on a server of its own, whose monitor tells when the
    /// sound started. (The command's stream on the server did not say so: `play` opens the output
    /// while it decodes the file, and under a whole run's load a Ctrl-C 0.5 s after the stream
    /// appeared still came before the play, in a CI run.)
    @Test func ctrlCStopsTheSoundAndExits130() throws {
        let server = try PulseAudioTestServer.shared(named: "cli-interrupt")
        defer { PulseAudioTestServer.shutDownShared(named: "cli-interrupt") }
        let source = "/tmp/feedbackctl-long-\(getpid()).wav"
        defer { unlink(source) }
        try writeLongSound(to: source)
        let mark = server.recorder.frameCount
        let child = try ChildProcess(
            feedbackctlBinary, ["play", source],
            environment: merging(["PULSE_SERVER=\(server.server)"], into: ProcessInfo.processInfo.environment),
            watched: false)
        let onset = server.recorder.firstSound(after: mark, threshold: 0.05, timeout: 10)
        #expect(onset != nil, "not heard within 10 s: \(server.recorder.heard(after: mark)); \(child.errors)")
        let interrupted = MonotonicClock.now
        child.signal(SIGINT)
        #expect(child.wait() == 130, "\(child.errors)")
        #expect(child.errors == "Error: interrupted; the sound or vibration was stopped\n")
        #expect(MonotonicClock.now - interrupted < 2)
    }
}
