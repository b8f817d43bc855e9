import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// The inputs a hostile user tried, replayed against the built `feedbackctl`,
/// each with the exit code it must give, the time it may take, and for writers the target's
/// inode and file type, which must not change.
@Suite struct HostileInputCommandTests {
    let directory = TemporaryDirectory()

    /// Inode and file type of `path` (not following a symlink).
    func identity(_ path: String) -> [UInt64]? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return [UInt64(status.st_ino), UInt64(status.st_mode & S_IFMT)]
    }

    /// Runs the binary and measures how long it took.
    func timed(_ arguments: [String], environment: [String] = []) -> (result: CommandResult, seconds: Double) {
        let start = MonotonicClock.now
        let result = runProcess(feedbackctlBinary, arguments, environment: environment)
        return (result, MonotonicClock.now - start)
    }

    // MARK: Writers never replace what is not a regular file.

    @Test func outputIntoADeviceNodeKeepsTheNode() throws {
        let node = directory.file("null")
        #expect(mknod(node, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0, "mknod needs root")
        let before = identity(node)
        let (result, seconds) = timed(["fire", "1007", "--output", node])
        #expect(result.status == 0, "\(result.errors)")
        #expect(identity(node) == before && before?[1] == UInt64(S_IFCHR))
        #expect(seconds < 2)
    }

    @Test func outputIntoDevNullKeepsDevNull() throws {
        let before = identity("/dev/null")
        let result = runProcess(feedbackctlBinary, ["fire", "1007", "--output", "/dev/null"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(identity("/dev/null") == before && before?[1] == UInt64(S_IFCHR))
    }

    /// `-` is standard output: the same bytes a file gets.
    @Test func outputDashIsStandardOutput() throws {
        let file = directory.file("tri-tone.wav")
        #expect(runProcess(feedbackctlBinary, ["fire", "1007", "--output", file]).status == 0)
        let piped = directory.file("piped.wav")
        let result = runProcess("/bin/sh", ["-c", "\"$0\" fire 1007 --output - | cat > \"$1\"", feedbackctlBinary, piped])
        #expect(result.status == 0, "\(result.errors)")
        #expect(bytes(piped) == bytes(file))
        #expect(identity(FileManager.default.currentDirectoryPath + "/-") == nil, "no file named '-'")
    }

    /// A FIFO nobody reads is refused at once (73), and stays a FIFO.
    @Test func outputIntoAFIFOWithoutReaderFailsAtOnce() throws {
        let fifo = directory.file("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)
        let before = identity(fifo)
        let (result, seconds) = timed(["fire", "1007", "--output", fifo])
        #expect(result.status == 73)
        #expect(result.errors.contains("no process is reading the FIFO"), "\(result.errors)")
        #expect(seconds < 1)
        #expect(identity(fifo) == before)
    }

    /// `volume --export` follows the same rule.
    @Test func exportIntoADeviceNodeKeepsTheNode() throws {
        let node = directory.file("null")
        #expect(mknod(node, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0)
        let before = identity(node)
        let source = directory.file("tone.wav")
        try writeTone(to: source, rate: 44_100)
        let result = runProcess(feedbackctlBinary, ["volume", source, "0.5", "--export", node])
        #expect(result.status == 0, "\(result.errors)")
        #expect(identity(node) == before)
    }

    // MARK: Unbounded work from small inputs.

    @Test func aHundredKilobyteEventNameIsAUsageErrorAtOnce() {
        let name = Array(repeating: "a", count: 50_000).joined(separator: "-")
        let (result, seconds) = timed(["fire", name, "--output", "/dev/null"])
        #expect(result.status == 64)
        #expect(result.errors.utf8.count < 300, "\(result.errors.prefix(300))")
        #expect(seconds < 1)
    }

    @Test func aGigabyteSettingsFileIsNotRead() throws {
        let config = directory.file("config")
        mkdir(config, 0o700)
        mkdir(config + "/feedbackservices", 0o700)
        sparse(config + "/feedbackservices/settings", size: 1 << 30)
        let environment = ["XDG_CONFIG_HOME=\(config)"]
        let (fire, seconds) = timed(["fire", "1007", "--output", "/dev/null"], environment: environment)
        #expect(fire.status == 0, "\(fire.errors)")
        #expect(seconds < 1)
        let profile = runProcess(feedbackctlBinary, ["profile"], environment: environment)
        #expect(profile.status == 0 && profile.output == "full\n")
        #expect(profile.errors.hasPrefix("Warning: the settings file is ignored:"), "\(profile.errors)")
    }

    @Test func aTwoGigabyteGTKSettingsFileIsSkipped() throws {
        let config = directory.file("config")
        mkdir(config, 0o700)
        mkdir(config + "/gtk-3.0", 0o700)
        sparse(config + "/gtk-3.0/settings.ini", size: 2 << 30)
        let (result, seconds) = timed(["fire", "1007", "--output", "/dev/null"], environment: ["XDG_CONFIG_HOME=\(config)"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(seconds < 1)
    }

    @Test func aTwentyThousandDeepInheritanceChainPlays() throws {
        var template = Array("/dev/shm/feedbackctl-chain-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) } != nil
        let data = made ? String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : directory.file("data")
        defer { if made { try? FileManager.default.removeItem(atPath: data) } }
        mkdir(data, 0o700)
        mkdir(data + "/sounds", 0o700)
        for level in 0..<20_000 {
            let folder = "\(data)/sounds/t\(level)"
            mkdir(folder, 0o755)
            let text = Array("[Sound Theme]\nName=t\(level)\nInherits=t\(level + 1)\nDirectories=stereo\n".utf8)
            let fd = open(folder + "/index.theme", O_WRONLY | O_CREAT, 0o644)
            _ = write(fd, text, text.count)
            close(fd)
        }
        let (result, seconds) = timed(
            ["fire", "1007", "--output", "/dev/null"], environment: ["XDG_DATA_HOME=\(data)", "FEEDBACK_SOUND_THEME=t0"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(seconds < 1)
    }

    // MARK: Wrong answers on valid input.

    @Test func anOggFileWithATrailingByteIsDescribed() throws {
        let path = directory.file("trailing.ogg")
        try writeTone(to: path, rate: 44_100, format: .oggVorbis)
        let fd = open(path, O_WRONLY | O_APPEND)
        _ = write(fd, "Z", 1)
        close(fd)
        let result = runProcess(feedbackctlBinary, ["info", path])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("duration:  1.0 s"), "\(result.output)")
    }

    @Test func aSymlinkLoopIsNoInput() {
        let a = directory.file("a.wav")
        let b = directory.file("b.wav")
        #expect(symlink(b, a) == 0 && symlink(a, b) == 0)
        let result = runProcess(feedbackctlBinary, ["info", a])
        #expect(result.status == 66, "\(result.errors)")
    }

    /// `volume FILE X --export out.wav` of a 44.1 kHz source wrote a 48 kHz file; at X = 1 the
    /// export is now the source's samples, bit for bit (here, the same bytes).
    @Test func anExportKeepsTheSourceRateAndSamples() throws {
        let source = directory.file("source.wav")
        try writeTone(to: source, rate: 44_100)
        let exported = directory.file("same.wav")
        let result = runProcess(feedbackctlBinary, ["volume", source, "1", "--export", exported])
        #expect(result.status == 0, "\(result.errors)")
        #expect(bytes(exported) == bytes(source))
        let half = directory.file("half.wav")
        #expect(runProcess(feedbackctlBinary, ["volume", source, "0.5", "--export", half]).status == 0)
        #expect(try SoundDecoder(sampleRate: 44_100).decode(fileAt: half).sourceSampleRate == 44_100)
    }

    // MARK: Output hygiene.

    /// libsndfile printed `Error A : 00` on standard output for this SDS file, so `info --json`
    /// was not JSON.
    @Test func aDamagedSDSFileLeavesJSONAlone() throws {
        let header: [UInt8] = [0xF0, 0x7E, 0, 1, 0, 0, 16, 0, 0, 1, 0x64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF7]
        let path = directory.write(header + [UInt8](repeating: 0, count: 254), to: "damaged.sds")
        let result = runProcess(feedbackctlBinary, ["info", "--json", path])
        #expect(result.status == 0, "\(result.errors)")
        #expect(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) is [String: Any], "\(result.output)")
        #expect(!result.output.contains("Error A") && result.errors.isEmpty, "\(result.errors)")
        let quiet = runProcess(feedbackctlBinary, ["info", "--json", "-q", path])
        #expect(quiet.status == 0 && quiet.output.isEmpty && quiet.errors.isEmpty, "\(quiet.output)\(quiet.errors)")
    }

    /// libmpg123 wrote "Warning: Xing stream size off by more than 1%" for an MP3 it decodes fine.
    @Test func libmpg123KeepsItsNotesToItself() throws {
        let path = directory.file("tone.mp3")
        try writeTone(to: path, rate: 48_000, format: .mp3)
        var data = bytes(path)
        let xing = try #require(firstIndex(of: Array("Xing".utf8), in: data))
        // The Xing header's byte count (after the tag and its flags), now far from the file's size.
        data.replaceSubrange((xing + 12)..<(xing + 16), with: [0, 0, 0x30, 0x39])
        try Data(data).write(to: URL(filePath: path))
        let result = runProcess(feedbackctlBinary, ["info", path])
        #expect(result.status == 0)
        #expect(result.errors.isEmpty, "\(result.errors)")
    }

    // MARK: Hearing safety.

    @Test func volumeAboveFourIsRefused() throws {
        let result = feedbackctl(["fire", "1007", "--volume", "4.5", "--output", "/dev/null"])
        #expect(result.status == 64)
        #expect(result.errors.hasPrefix("Error: --volume takes a number from 0.0 to 4.0, not '4.5'"), "\(result.errors)")
        #expect(feedbackctl(["fire", "1007", "--volume", "4", "--output", "/dev/null"]).status == 0)
        #expect(feedbackctl(["volume", "1007", "16"]).status == 64)
        #expect(VolumeLimit.clamped(1e30) == 4 && VolumeLimit.clamped(-1) == 0 && VolumeLimit.clamped(.nan) == 0)
    }

    // MARK: Helpers.

    func bytes(_ path: String) -> [UInt8] {
        Array(FileManager.default.contents(atPath: path) ?? Data())
    }

    func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    func sparse(_ path: String, size: Int64) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = ftruncate(fd, off_t(size))
        close(fd)
    }

    /// One second of a 440 Hz stereo tone at `rate`.
    func writeTone(to path: String, rate: Int, format: SoundFileFormat = .wav16) throws {
        let samples = (0..<rate).flatMap { frame -> [Float] in
            let value = Float(0.5 * sin(2 * Double.pi * 440 * Double(frame) / Double(rate)))
            return [value, value]
        }
        let buffer = try SoundDecoder(sampleRate: rate).decode(samples: samples, sampleRate: rate, channelCount: 2)
        try SoundFileWriter.write(buffer, to: path, format: format)
    }
}

/// `feedbackctl stop` trusts nothing a file in its directory says.
@Suite(.serialized) struct StopTrustTests {
    let runtime = TemporaryDirectory()
    var players: String { runtime.path + "/feedbackctl" }

    init() {
        mkdir(runtime.path + "/feedbackctl", 0o700)
    }

    /// Starts `sleep 30` through `program`, which makes and locks the file that names it; waits
    /// for the file. The caller kills the sleep.
    func plant(_ arguments: [String]) throws -> pid_t {
        let pid = try spawn(arguments[0], Array(arguments.dropFirst()), environment: ["PATH=/usr/bin:/bin"])
        let deadline = MonotonicClock.now + 5
        while MonotonicClock.now < deadline && !FileManager.default.fileExists(atPath: "\(players)/\(pid)") { usleep(5_000) }
        // Until it has taken the lock and become the sleep (each planter locks, then execs sleep):
        // a fixed 0.1 s was too short in a CI run beside other work (its exe was still dash).
        while MonotonicClock.now < deadline && !executable(of: pid).hasSuffix("/sleep") { usleep(5_000) }
        return pid
    }

    func executable(of pid: pid_t) -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? ""
    }

    func end(_ pid: pid_t) {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    func stop() -> (result: CommandResult, seconds: Double) {
        let start = MonotonicClock.now
        let result = runProcess(feedbackctlBinary, ["stop", "--json"], environment: ["XDG_RUNTIME_DIR=\(runtime.path)"])
        return (result, MonotonicClock.now - start)
    }

    /// A file named after a `sleep`, locked by it with a POSIX lock and holding its true start time
    /// (everything a player's file holds): the sleep is not a feedbackctl, so it survives.
    @Test func aPlantedPOSIXLockedSleepSurvives() throws {
        let script = """
            import fcntl, os, sys
            fd = os.open(sys.argv[1] + "/" + str(os.getpid()), os.O_WRONLY | os.O_CREAT, 0o600)
            start = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]
            os.write(fd, (start + "\\nfeedbackctl play x\\n").encode())
            fcntl.lockf(fd, fcntl.LOCK_EX)
            os.set_inheritable(fd, True)
            os.execv("/bin/sleep", ["sleep", "30"])
            """
        let sleeper = try plant(["/usr/bin/python3", "-c", script, players])
        defer { end(sleeper) }
        #expect(executable(of: sleeper).hasSuffix("/sleep"))
        let (result, seconds) = stop()
        #expect(FileManager.default.fileExists(atPath: "\(players)/\(sleeper)"), "locked, so not taken for a dead player's")
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("\"stopped\":[]"), "\(result.output)")
        #expect(kill(sleeper, 0) == 0, "the sleep still runs")
        #expect(seconds < 1)
    }

    /// The same with `flock(1)`'s lock, which a player never takes.
    @Test func aPlantedFlockLockedSleepSurvives() throws {
        let sleeper = try plant(["/bin/sh", "-c", "echo 1 > \"$0/$$\"; exec flock -F \"$0/$$\" sleep 30", players])
        defer { end(sleeper) }
        #expect(executable(of: sleeper).hasSuffix("/sleep"))
        let (result, _) = stop()
        #expect(result.status == 0 && result.output.contains("\"stopped\":[]"), "\(result.output)\(result.errors)")
        #expect(kill(sleeper, 0) == 0, "the sleep still runs")
    }

    /// A FIFO named after a live process made `stop` hang; it is skipped now.
    @Test func aFIFOEntryDoesNotHangStop() throws {
        let sleeper = try spawn("/bin/sleep", ["30"], environment: [])
        defer { end(sleeper) }
        #expect(mkfifo("\(players)/\(sleeper)", 0o600) == 0)
        let (result, seconds) = stop()
        #expect(result.status == 0, "\(result.errors)")
        #expect(seconds < 1)
        #expect(kill(sleeper, 0) == 0)
    }

    /// With the players' directory owned by another user, `stop` would silently stop nothing and
    /// `--no-wait` would report a player nothing can stop: both refuse (77) and say why.
    @Test func aDirectoryOfAnotherUserIsRefused() throws {
        #expect(chown(players, 1, 1) == 0, "chown needs root")
        let (result, seconds) = stop()
        #expect(result.status == 77)
        #expect(result.errors.contains("belongs to user 1"), "\(result.errors)")
        #expect(seconds < 1)
        let source = runtime.file("tone.wav")
        try writeLongSound(to: source)
        let detached = runProcess(
            feedbackctlBinary, ["play", "--no-wait", source], environment: ["XDG_RUNTIME_DIR=\(runtime.path)"])
        #expect(detached.status == 77)
        #expect(detached.errors.contains("'feedbackctl stop' could not find the player"), "\(detached.errors)")
    }
}
