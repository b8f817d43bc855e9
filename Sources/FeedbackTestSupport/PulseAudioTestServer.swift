import FeedbackServices
import FoundationEssentials
package import Glibc
import Synchronization

/// A private PulseAudio server for the tests: a 48 kHz stereo null sink, an anonymous native
/// socket in a temporary runtime directory, and a low-latency recorder on the sink's monitor for
/// the whole run (without one, a null sink runs at ~2 s latency and finish times drift).
///
/// Each suite that records uses its own server (`shared(named:)`) and is `.serialized`, because
/// its tests share that server's recording.
package final class PulseAudioTestServer: SoundTestServer, @unchecked Sendable {
    // Locking rule: `pid` and `recorder` change only in `start`/`kill`/`restart`, which the
    // serialized suites call from one test at a time (as they do `stop`/`resume`).
    package static let sink = "fbtest"
    package static let rate = 48_000

    package let directory = TemporaryDirectory()
    package var socket: String { directory.file("native") }
    package var server: String { "unix:\(socket)" }
    package private(set) var pid: pid_t = 0
    /// The recorder on the sink's monitor; nil for a server made with `recording: false`.
    package private(set) var recorder: MonitorRecorder!
    /// Whether `start` attaches a recorder.
    package let recording: Bool
    /// Whether the server logs at debug level (`endsOfUnderrun` reads it).
    package let debugLog: Bool
    package var kind: SoundServerKind { .pulseAudio }
    package var pipeWireSocket: String? { nil }

    private init(recording: Bool, debugLog: Bool) {
        self.recording = recording
        self.debugLog = debugLog
    }

    /// Whether the programs it needs are installed.
    package static var available: Bool {
        access("/usr/bin/pulseaudio", X_OK) == 0 && access("/usr/bin/parec", X_OK) == 0
    }

    private static let instances = Lock<[String: PulseAudioTestServer]>([:])

    /// The server named `name`, started on first use and killed when the test process exits.
    /// Suites that record give their own name, so suites running in parallel never hear each other.
    /// A server for tests that never look at what it played (the fault tests) is made with
    /// `recording: false`: a recorder costs a process, a thread and 384 KB of memory a second for
    /// the rest of the run. (Our engine's stream keeps the null sink at low latency by itself.)
    /// With `debugLog`, the server logs at debug level, so that `endsOfUnderrun` can be read.
    package static func shared(named name: String = "default", recording: Bool = true, debugLog: Bool = false) throws
        -> PulseAudioTestServer
    {
        try instances.withLock { instances in
            if let instance = instances[name] { return instance }
            guard available else {
                throw TestFailure("pulseaudio and parec are needed (scripts/setup installs them)")
            }
            let server = PulseAudioTestServer(recording: recording, debugLog: debugLog)
            try server.start()
            if instances.isEmpty {
                atexit {
                    // The servers and recorders must not outlive the test run.
                    PulseAudioTestServer.instances.withLock { $0.values.forEach { $0.kill() } }
                }
            }
            instances[name] = server
            return server
        }
    }

    /// Whether a test that needs the server should run: always in CI (where a missing server is
    /// a failure), otherwise only where it can be started.
    package static var shouldRun: Bool { runningInCI || available }

    /// Kills the shared server named `name`, if one runs, with its recorder: for a suite that is
    /// done with it (its recorder and the server's sink otherwise run to the end of the test
    /// process, beside every suite after it). The next `shared(named: name)` starts a new one.
    package static func shutDownShared(named name: String) {
        instances.withLock { $0.removeValue(forKey: name) }?.kill()
    }

    package func start() throws {
        let runtime = directory.file("runtime")
        mkdir(runtime, 0o700)
        unlink(socket)
        let environment = [
            "HOME=\(directory.path)", "XDG_RUNTIME_DIR=\(runtime)", "PULSE_RUNTIME_PATH=\(runtime)",
            "PATH=/usr/bin:/bin",
        ]
        pid = try spawn(
            "/usr/bin/pulseaudio",
            [
                "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit", "--use-pid-file=no",
                "--log-target=file:\(directory.file("pulseaudio.log"))", "--log-level=\(debugLog ? "debug" : "notice")",
                "-L", "module-null-sink sink_name=\(Self.sink) rate=\(Self.rate) channels=2",
                "-L", "module-native-protocol-unix socket=\(socket) auth-anonymous=1",
                // For `pacmd` (`dropClient`): its socket is the runtime directory's `cli`.
                "-L", "module-cli-protocol-unix",
            ], environment: environment)
        let deadline = MonotonicClock.now + 15
        while access(socket, F_OK) != 0 {
            guard MonotonicClock.now < deadline else { throw TestFailure("pulseaudio did not open \(socket)") }
            usleep(20_000)
        }
        if recording { recorder = try MonitorRecorder(server: server, sink: Self.sink, environment: environment) }
    }

    /// How many times a client's playback stream ran dry and was then written to again, as the
    /// server saw it (its debug line "Requesting rewind due to end of underrun", which it also
    /// logs once as each stream starts playing): a count that moved by more than the streams
    /// started means a gap in what a client played, which no recording can hide. Only for a
    /// server made with `debugLog` (else 0).
    package var endsOfUnderrun: Int {
        guard debugLog, let log = try? String(contentsOfFile: directory.file("pulseaudio.log"), encoding: .utf8) else { return 0 }
        return log.split(separator: "\n").count { $0.hasSuffix("Requesting rewind due to end of underrun.") }
    }

    /// Kills the server (SIGKILL), as a crash would. Once: a test that killed it leaves it to the
    /// exit handler, which must neither signal a reused process ID nor join a recorder thread twice
    /// (a thread ID is reused too: the second join waited for another server's recorder forever).
    package func kill() {
        guard pid != 0 else { return }
        Glibc.kill(pid, SIGKILL)
        _ = try? System.waitpid(pid)
        pid = 0
        recorder?.stop()
    }

    /// Starts it again on the same socket.
    package func restart() throws {
        try start()
    }

    /// Stops the server (SIGSTOP), as a hung server would be: its socket still accepts
    /// connections, but nothing answers and nothing is read. Always `resume()` it (in a `defer`).
    package func stop() {
        if pid != 0 { Glibc.kill(pid, SIGSTOP) }
    }

    /// Lets a stopped server run again (SIGCONT).
    package func resume() {
        if pid != 0 { Glibc.kill(pid, SIGCONT) }
    }

    /// `kill-client` on the server's command-line socket, as `pacmd` would send it (pactl has no
    /// such command, and pacmd wants a PID file this server does not write). The status is 0 when
    /// the server answered without an error.
    package func dropClient(_ index: String) -> ProcessResult {
        let path = directory.file("runtime") + "/cli"
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return ProcessResult(status: 1, output: "", errors: "socket: \(Errno.current)") }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (offset, byte) in path.utf8.prefix(bytes.count - 1).enumerated() { bytes[offset] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return ProcessResult(status: 1, output: "", errors: "connect \(path): \(Errno.current)") }
        let command = Array("kill-client \(index)\n".utf8)
        _ = command.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        shutdown(descriptor, Int32(SHUT_WR))
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            reply += chunk[..<count]
        }
        let text = String(decoding: reply, as: UTF8.self)
        return ProcessResult(status: text.contains("No client") || text.contains("Unknown") ? 1 : 0, output: text, errors: "")
    }
}

/// Records the null sink's monitor (`parec --latency-msec=2`) into memory, stamping each chunk
/// with CLOCK_MONOTONIC as it arrives.
package final class MonitorRecorder: @unchecked Sendable {
    // Locking rule: `state` is a Mutex; `pid`, `fd` and `thread` are set in init and read in stop.
    private struct State {
        /// The recording, interleaved stereo, in blocks of `Recording.blockFrames` frames.
        var recording = Recording()
        /// (frame count after the chunk, monotonic arrival time)
        var arrivals: [(frames: Int, time: Double)] = []
        var finished = false
    }

    /// Samples kept in blocks of one second that, once allocated, are never moved: appending
    /// copies only what came, under the lock. In one array, each growth copied the whole
    /// recording under it, and a recording of a main-suite run reaches millions of frames: 6.4
    /// million frames in, an append held the lock 40-51 ms, the reader took in nothing meanwhile,
    /// and every chunk of the next 50 ms came stamped late, which `arrivalTime` cannot correct
    /// (it bounds a frame by the chunks of the 50 ms after it).
    struct Recording {
        static let blockFrames = 48_000
        private var blocks: [[Float]] = []
        /// Frames recorded.
        private(set) var frames = 0

        /// Appends interleaved stereo samples (whole frames); returns the bytes newly reserved.
        mutating func append(_ samples: UnsafeBufferPointer<Float>) -> Int {
            var reserved = 0
            var taken = 0
            while taken < samples.count {
                if blocks.isEmpty || blocks[blocks.count - 1].count == Self.blockFrames * 2 {
                    var block: [Float] = []
                    block.reserveCapacity(Self.blockFrames * 2)
                    reserved += block.capacity * MemoryLayout<Float>.size
                    blocks.append(block)
                }
                let room = Self.blockFrames * 2 - blocks[blocks.count - 1].count
                let count = min(room, samples.count - taken)
                blocks[blocks.count - 1].append(contentsOf: samples[taken..<(taken + count)])
                taken += count
            }
            frames += samples.count / 2
            return reserved
        }

        /// Channel `channel` (0 left, 1 right) of frame `frame` (< `frames`).
        func sample(_ frame: Int, _ channel: Int) -> Float {
            blocks[frame / Self.blockFrames][frame % Self.blockFrames * 2 + channel]
        }

        /// Interleaved samples of frames `start..<frames`.
        func interleaved(from start: Int) -> [Float] {
            var result: [Float] = []
            guard start < frames else { return result }
            result.reserveCapacity((frames - start) * 2)
            var frame = start
            while frame < frames {
                let block = blocks[frame / Self.blockFrames]
                let offset = frame % Self.blockFrames * 2
                result += block[offset...]
                frame += (block.count - offset) / 2
            }
            return result
        }
    }

    private let state = Lock(State())
    private let stopped = Atomic(false)
    private static let reserved = Atomic(0)
    private let pid: pid_t
    private let fd: Int32

    /// The bytes every recorder in this process has reserved for samples so far: tests that
    /// measure this process's memory take it out, whichever suites record beside them.
    package static var reservedBytes: Int { reserved.load(ordering: .relaxed) }
    private var thread: FeedbackServices.Thread?

    package init(server: String, sink: String, environment: [String]) throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw TestFailure("pipe failed") }
        pid = try spawn(
            "/usr/bin/parec",
            [
                "--server=\(server)", "--latency-msec=2", "--device=\(sink).monitor", "--format=float32le",
                "--rate=48000", "--channels=2", "--raw",
            ], environment: environment, stdout: fds[1])
        close(fds[1])
        fd = fds[0]
        thread = try startThread(name: "fbtest-recorder") { [self] in readLoop() }
        // Wait until audio flows, so the sink is in low-latency mode before any test plays.
        let deadline = MonotonicClock.now + 10
        while frameCount < 4_800 {
            guard MonotonicClock.now < deadline else {
                // Nothing of it outlives the failure (SIGKILL: on pipewire-pulse parec does not
                // end on SIGTERM while the server lives).
                stop(signal: SIGKILL)
                throw TestFailure(Self.silence)
            }
            usleep(10_000)
        }
    }

    /// What `init` throws when parec records nothing within 10 s.
    package static let silence = "parec recorded nothing"

    private func readLoop() {
        var pending: [UInt8] = []
        var bytes = [UInt8](repeating: 0, count: 16_384)
        while true {
            guard let count = try? System.read(fd, into: &bytes, count: bytes.count), count > 0 else { break }
            let arrival = MonotonicClock.now
            pending += bytes[0..<count]
            // Whole stereo frames only; a partial frame waits for the next read.
            let whole = pending.count / 8 * 8
            guard whole > 0 else { continue }
            let floats = pending.withUnsafeBytes { raw in
                (0..<(whole / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
            }
            pending.removeFirst(whole)
            state.withLock { state in
                let reserved = floats.withUnsafeBufferPointer { state.recording.append($0) }
                state.arrivals.append((state.recording.frames, arrival))
                Self.reserved.add(reserved, ordering: .relaxed)
            }
        }
        state.withLock { $0.finished = true }
    }

    /// Ends parec with `signal` and waits for it and the thread reading it. Once: a second call
    /// would signal a reused process ID and close a reused descriptor.
    package func stop(signal: Int32 = SIGTERM) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.kill(pid, signal)
        _ = try? System.waitpid(pid)
        thread?.join()
        close(fd)
    }

    /// Frames recorded so far.
    package var frameCount: Int { state.withLock { $0.recording.frames } }

    /// Interleaved stereo samples from frame `start` to the end of the recording so far.
    package func samples(from start: Int) -> [Float] {
        state.withLock { $0.recording.interleaved(from: start) }
    }

    /// Left or right channel from frame `start`.
    package func channel(_ channel: Int, from start: Int) -> [Float] {
        let all = samples(from: start)
        return stride(from: channel, to: all.count, by: 2).map { all[$0] }
    }

    /// Frames `range` of a channel, counted from frame `start`, once recorded (waiting up to
    /// `timeout` seconds; fewer when the recording ends or the wait does first). A sound's end
    /// reported to the player can come before the monitor's last chunks reach the recorder.
    package func channel(_ channel: Int, from start: Int, frames range: Range<Int>, timeout: Double = 2) -> [Float] {
        waitUntil(recorded: start + range.upperBound, timeout: timeout)
        return Array(self.channel(channel, from: start).dropFirst(range.lowerBound).prefix(range.count))
    }

    /// When frame `frame` was at the monitor (CLOCK_MONOTONIC seconds): each chunk that reached the
    /// recorder from the frame's own to the one 50 ms of audio later bounds it, by its arrival less
    /// the frames recorded after `frame` (at 48 kHz), and the earliest bound is the answer. A chunk
    /// that parec or this reader passed on late says only that the frame was there by then; a later
    /// one on time says more (recorded through pipewire-pulse from PipeWire's null sink, that took
    /// out ~5 ms of delivery jitter, up to 6 ms for one frame; from PulseAudio's, ≤ 1 ms). Waits up
    /// to 0.25 s for those 50 ms to be recorded (not once the recording has ended), then bounds with
    /// the chunks that came; nil if the frame's own chunk has not come.
    package func arrivalTime(ofFrame frame: Int) -> Double? {
        let horizon = frame + 2_400
        waitUntil(recorded: horizon, timeout: 0.25)
        return state.withLock { state in
            // The first chunk past `frame`, by bisection: a long run records ~500 chunks a second.
            var low = 0
            var high = state.arrivals.count
            while low < high {
                let middle = (low + high) / 2
                if state.arrivals[middle].frames > frame { high = middle } else { low = middle + 1 }
            }
            var earliest: Double?
            for chunk in state.arrivals[low...] {
                let bound = chunk.time - Double(chunk.frames - 1 - frame) / 48_000
                earliest = min(earliest ?? bound, bound)
                if chunk.frames >= horizon { break }
            }
            return earliest
        }
    }

    /// When (CLOCK_MONOTONIC seconds, `arrivalTime(ofFrame:)`) the first sample above `threshold` recorded
    /// from the start of `action` reached the monitor; nil if none came within `timeout`. What every
    /// latency figure of the benchmarks measures, each from its own start.
    package func arrivalOfFirstSound(
        threshold: Float = 0.05, timeout: Double = 3, after action: () throws -> Void
    ) rethrows -> Double? {
        let mark = frameCount
        try action()
        guard let frame = firstSound(after: mark, threshold: threshold, timeout: timeout) else { return nil }
        return arrivalTime(ofFrame: frame)
    }

    /// The first frame at or after `start` where either channel exceeds `threshold`, waiting up to
    /// `timeout` seconds for it.
    package func firstSound(after start: Int, threshold: Float = 0.01, timeout: Double = 5) -> Int? {
        let deadline = MonotonicClock.now + timeout
        var checked = start
        while MonotonicClock.now < deadline {
            let found = state.withLock { state -> Int? in
                let end = state.recording.frames
                defer { checked = end }
                for frame in checked..<max(checked, end)
                where abs(state.recording.sample(frame, 0)) > threshold || abs(state.recording.sample(frame, 1)) > threshold {
                    return frame
                }
                return nil
            }
            if let found { return found }
            usleep(500)
        }
        return nil
    }

    /// What the recorder has from frame `start` on, for a failure's message when `firstSound` gave
    /// up: "the recorder stalled" (few frames, the last chunk long ago) and "silence was recorded"
    /// (the frames are there, their peak is low) call for different fixes.
    package func heard(after start: Int) -> String {
        let now = MonotonicClock.now
        return state.withLock { state in
            let frames = state.recording.frames
            let from = min(max(start, 0), frames) * 2
            let peak = state.recording.interleaved(from: from / 2).reduce(Float(0)) { max($0, abs($1)) }
            let last = state.arrivals.last.map { "\(Int((now - $0.time) * 1_000)) ms ago" } ?? "never"
            return "the recorder has \(frames - from / 2) frames after frame \(start) (peak \(peak)), "
                + "\(frames) in all; its last chunk came \(last)\(state.finished ? "; parec has ended" : "")"
        }
    }

    /// Waits until `seconds` more audio has been recorded.
    package func wait(seconds: Double) {
        waitUntil(recorded: frameCount + Int(seconds * 48_000), timeout: seconds + 5)
    }

    /// Waits until `frames` frames have been recorded in all, at most `timeout` seconds, and not
    /// once the recording has ended (nothing more will come).
    private func waitUntil(recorded frames: Int, timeout: Double) {
        let deadline = MonotonicClock.now + timeout
        while state.withLock({ $0.recording.frames < frames && !$0.finished }) && MonotonicClock.now < deadline {
            usleep(1_000)
        }
    }
}

/// A test precondition that failed, with a reason.
package struct TestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Starts a program with the given environment; its stdout goes to `stdout`, or with its stderr
/// to the file `log`, or to /dev/null. With `processGroup`, it joins that process group (0: it
/// leads a new one, whose ID is its own), so that a server made of several processes can be
/// ended with one signal to the group.
///
/// A watchdog kills the program once this process is gone (`killWhenTestsEnd`).
package func spawn(
    _ path: String, _ arguments: [String], environment: [String], stdout: Int32? = nil, log: String? = nil,
    processGroup: pid_t? = nil
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    if let stdout {
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
    } else {
        posix_spawn_file_actions_addopen(&actions, 1, log ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o600)
    }
    if let log {
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    } else {
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    }
    System.closeInheritedDescriptors(&actions)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    if let processGroup {
        posix_spawnattr_setpgroup(&attributes, processGroup)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
    }
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    guard result == 0 else { throw TestFailure("cannot start \(path): \(Errno(rawValue: result))") }
    killWhenTestsEnd(pid)
    return pid
}

/// Starts a watchdog (a shell loop) that kills `pid`, a child not yet reaped, once this process
/// is gone, however it ended: a crashed or killed test run must not leave servers behind
/// (`atexit` runs only on a normal exit). The watchdog follows the process by its ID *and* start
/// time: once the child has ended and been reaped, its ID may be another process's (IDs wrap at
/// 32,768 here, within one test run), which the watchdog must neither wait for nor kill.
package func killWhenTestsEnd(_ pid: pid_t) {
    guard let start = processStartTime(pid) else { return }
    // Field 22 of /proc/PID/stat: the 20th after the parenthesised name. Shell builtins only
    // (dash's `read`, `${…##…}`, `set`, `[`): the check runs every second for every watched child.
    let alive = "{ read -r s < /proc/\(pid)/stat && set -- ${s##*) } && [ \"${20}\" = \(start) ]; } 2>/dev/null"
    let watch = "while kill -0 \(getpid()) 2>/dev/null && \(alive); do sleep 1; done; "
        + "kill -0 \(getpid()) 2>/dev/null || { \(alive) && kill -9 \(pid) 2>/dev/null; }"
    try? startOrphan("/bin/sh", ["-c", "(\(watch)) &"])
}

/// Runs a shell command line whose background job outlives it, and reaps the shell at once, so
/// the job is adopted by init rather than left as our child. An unreaped child of the test
/// process would confuse Swift Testing's exit-test monitor, which waits on any child.
private func startOrphan(_ path: String, _ arguments: [String]) throws {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for fd in Int32(0)...2 { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
    System.closeInheritedDescriptors(&actions)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard result == 0 else { throw TestFailure("cannot start \(path)") }
    _ = try? System.waitpid(pid)
}

/// Whether this runs in CI (`CI=true`), where a missing real part is a failure, never a skip.
package let runningInCI = ProcessInfo.processInfo.environment["CI"] == "true"

/// A directory under /tmp that is removed when the value is released.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init() {
        var template = Array("/tmp/feedbackservices-test-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            preconditionFailure("mkdtemp failed: \(Errno.current)")
        }
        path = String(cString: made)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The path of `name` inside the directory.
    package func file(_ name: String) -> String { "\(path)/\(name)" }

    /// Writes raw bytes to a file in the directory and returns its path.
    @discardableResult
    package func write(_ bytes: [UInt8], to name: String) -> String {
        let path = file(name)
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }
}
