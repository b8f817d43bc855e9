// The ALSA output's cases, on the VM's snd-aloop loopback card: ALSAOutput plays into
// hw:Loopback,0 (or plughw, or a dmix on it) and this program captures hw:Loopback,1 with libasound,
// so what reached the device is checked against what was played. The VM's ALSA configuration is
// scripts/vm/alsa.conf.
import CALSA
import FeedbackServices
import FeedbackTestSupport
import Glibc
import Synchronization

/// Runs every audio case (main.swift calls it once, before the haptics cases).
func runAudioCases() {
    // A time limit of their own, and afterwards the haptics cases get the whole of theirs back.
    alarm(120)
    defer { alarm(hapticsTimeLimit) }
    run("alsa-play-correlates") { try playCorrelates() }
    run("alsa-stop") { try stopSilences() }
    run("alsa-several-voices") { try severalVoices() }
    run("alsa-completions-exactly-once") { try completionsExactlyOnce() }
    run("alsa-device-removed") { try deviceRemoved() }
    run("alsa-rewind-and-latency") {
        try rewindAndLatency(devices: [(playback, true), (playback, false), ("plughw:Loopback,0,0", true)], dmix: false)
    }
    // dmix alone, and behind plug as `default` often is: `plug:NAME` and a PCM defined as plug → dmix.
    run("alsa-dmix-rewind-and-latency") {
        try rewindAndLatency(devices: [("loopdmix", false), ("loopdmix", true), ("plug:loopdmix", true), ("plugdmix", true)], dmix: true)
    }
    run("alsa-speed-beside-aplay") { try speedBesideAplay() }
}

let rate = 48_000
// Subdevices pinned: the capture side only hears the playback subdevice of the same number, and a
// playback that found subdevice 0 taken would otherwise play, unheard, into another.
let playback = "hw:Loopback,0,0"

/// A sine `seconds` long at `amplitude`, mono at 48 kHz.
private func tone(_ frequency: Double, seconds: Double, amplitude: Float = 0.5) -> [Float] {
    (0..<Int(seconds * Double(rate))).map { amplitude * Float(sin(2 * Double.pi * frequency * Double($0) / Double(rate))) }
}

private func buffer(_ samples: [Float]) throws(CaseFailure) -> PCMBuffer {
    do { return try SoundDecoder().decode(samples: samples, sampleRate: rate, channelCount: 1) } catch {
        throw CaseFailure("decode: \(error)")
    }
}

extension PlaybackEnd {
    /// The failure, for a play that failed.
    fileprivate var error: PlaybackError? {
        if case .failed(let error) = self { error } else { nil }
    }
}

/// Collects the ends of plays: each must come exactly once.
private final class Ends: Sendable {
    private let ends = Lock<[Int: [(end: PlaybackEnd, time: Int64)]]>([:])

    func handler(_ key: Int) -> @Sendable (PlaybackEnd) -> Void {
        { end in
            let now = monotonicMicroseconds()
            self.ends.withLock { $0[key, default: []].append((end, now)) }
        }
    }

    func wait(_ key: Int, timeout: Int = 5_000) throws(CaseFailure) -> (end: PlaybackEnd, time: Int64) {
        let deadline = monotonicMicroseconds() + Int64(timeout) * 1_000
        while monotonicMicroseconds() < deadline {
            if let first = ends.withLock({ $0[key]?.first }) { return first }
            usleep(1_000)
        }
        throw CaseFailure("no end for play \(key) within \(timeout) ms")
    }

    func count(_ key: Int) -> Int { ends.withLock { $0[key]?.count ?? 0 } }
}

/// The loopback's capture side, read on a thread of its own: the left channel, and for every read
/// the monotonic time at which a given captured frame was the newest the device had.
final class LoopbackCapture: @unchecked Sendable {
    // Locking rule: `left` and `stamps` are written by the capture thread only, and read after
    // `stop()` has joined it, or through `snapshot()` under `lock`.
    private let pcm: OpaquePointer
    private var left: [Float] = []
    private var stamps: [(frame: Int, time: Int64)] = []
    private let lock = Lock<Void>(())
    private let running = Atomic<Bool>(true)
    private var thread: FeedbackServices.Thread?
    private(set) var failure: Int32 = 0
    private let overrunCount = Atomic<Int>(0)

    init(device: String = "hw:Loopback,1,0") throws(CaseFailure) {
        var handle: OpaquePointer?
        guard snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, 0) == 0, let handle else {
            throw CaseFailure("cannot open \(device) for capture")
        }
        // S32_LE: the format dmix (scripts/vm/alsa.conf) gives the loopback, and one the output converts to.
        let result = snd_pcm_set_params(handle, SND_PCM_FORMAT_S32_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 2, UInt32(rate), 0, 100_000)
        guard result == 0 else {
            snd_pcm_close(handle)
            throw CaseFailure("capture params: \(String(cString: snd_strerror(result)))")
        }
        pcm = handle
        left.reserveCapacity(rate * 30)
        stamps.reserveCapacity(30_000)
        do {
            thread = try startThread(name: "capture") { [self] in loop() }
        } catch { throw CaseFailure("capture thread: \(error)") }
    }

    private func loop() {
        let chunk = 96
        var samples = [Int32](repeating: 0, count: chunk * 2)
        snd_pcm_start(pcm)
        while running.load(ordering: .relaxed) {
            let read = samples.withUnsafeMutableBytes { Int(snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t(chunk))) }
            let now = monotonicMicroseconds()
            if read == -Int(EPIPE) {
                // Frames were lost here, not at the output: a recording across this says nothing.
                overrunCount.add(1, ordering: .relaxed)
                snd_pcm_prepare(pcm)
                snd_pcm_start(pcm)
                continue
            }
            if read < 0 {
                failure = Int32(-read)
                return
            }
            var delay: snd_pcm_sframes_t = 0
            if snd_pcm_delay(pcm, &delay) != 0 { delay = 0 }
            lock.withLock { _ in
                for frame in 0..<read { left.append(Float(samples[2 * frame]) / 2_147_483_648) }
                // The newest frame the device holds at `now` is the last read plus what waits unread.
                stamps.append((left.count + Int(delay), now))
            }
        }
    }

    /// Times the capture side overran (frames lost between two reads).
    var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// Frames captured so far.
    var frameCount: Int { lock.withLock { _ in left.count } }

    /// The captured left channel, and its stamps.
    func snapshot() -> (left: [Float], stamps: [(frame: Int, time: Int64)]) {
        lock.withLock { _ in (left, stamps) }
    }

    /// Where the first frame from `start` on louder than `threshold` is, and when it was the
    /// newest at the device: copying only what came since `start`, so that polling for it does
    /// not hold the capture thread up (nor take the CPU from the output's thread).
    func onset(from start: Int, threshold: Float = 0.01) -> (frame: Int, time: Int64)? {
        lock.withLock { _ -> (frame: Int, time: Int64)? in
            guard start < left.count, let frame = (start..<left.count).first(where: { abs(left[$0]) > threshold }) else {
                return nil
            }
            // The stamps are in frame order and the frame is recent: the first stamp at or after
            // it is found from the end.
            var index = stamps.count
            while index > 0 && stamps[index - 1].frame >= frame { index -= 1 }
            guard index < stamps.count else { return nil }
            let stamp = stamps[index]
            return (frame, stamp.time - Int64(stamp.frame - frame) * 1_000_000 / Int64(rate))
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        thread?.join()
        thread = nil
        snd_pcm_close(pcm)
    }

    /// The first frame from `start` on louder than `threshold`.
    static func onset(_ left: [Float], from start: Int, threshold: Float = 0.01) -> Int? {
        guard start < left.count else { return nil }
        return (start..<left.count).first { abs(left[$0]) > threshold }
    }

    /// When `frame` was the newest frame at the device (µs, monotonic), from the first stamp at
    /// or after it.
    static func time(of frame: Int, _ stamps: [(frame: Int, time: Int64)]) -> Int64? {
        guard let stamp = stamps.first(where: { $0.frame >= frame }) else { return nil }
        return stamp.time - Int64(stamp.frame - frame) * 1_000_000 / Int64(rate)
    }
}

/// The best normalised correlation of `source` with `captured` from `onset`, over small lags.
private func correlation(_ source: [Float], _ captured: [Float], onset: Int) -> Double {
    var best = -1.0
    for lag in -24...24 {
        let start = onset + lag
        guard start >= 0, start + source.count <= captured.count else { continue }
        var product = 0.0
        var sourceEnergy = 0.0
        var capturedEnergy = 0.0
        for index in source.indices {
            let s = Double(source[index])
            let c = Double(captured[start + index])
            product += s * c
            sourceEnergy += s * s
            capturedEnergy += c * c
        }
        best = max(best, product / max(1e-12, (sourceEnergy * capturedEnergy).squareRoot()))
    }
    return best
}

/// The amplitude of `frequency` in `samples` (Goertzel).
private func amplitude(of frequency: Double, in samples: ArraySlice<Float>) -> Double {
    let coefficient = 2 * cos(2 * Double.pi * frequency / Double(rate))
    var previous = 0.0
    var beforePrevious = 0.0
    for sample in samples {
        let current = Double(sample) + coefficient * previous - beforePrevious
        beforePrevious = previous
        previous = current
    }
    let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    return 2 * power.squareRoot() / Double(samples.count)
}

/// Median, p90, p99 and max of `values` (ms).
func summary(_ values: [Double]) -> String {
    let sorted = values.sorted()
    func at(_ fraction: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))] }
    return "median \(format(at(0.5))) p90 \(format(at(0.9))) p99 \(format(at(0.99))) max \(format(sorted.last ?? 0)) ms (n=\(values.count))"
}

private func output(_ device: String = playback, rewinds: Bool = true) throws(CaseFailure) -> ALSAOutput {
    let output = ALSAOutput(configuration: .init(device: device, rewinds: rewinds))
    do { try output.prepare(timeout: 2) } catch { throw CaseFailure("open \(device): \(error)") }
    return output
}

private func playCorrelates() throws -> String {
    let capture = try LoopbackCapture()
    defer { capture.stop() }
    let out = try output()
    let source = tone(440, seconds: 0.4).enumerated().map { $1 + 0.2 * Float(sin(Double($0) * 0.0917)) }
    sleepMilliseconds(50)
    let (score, latency, completion, endCount) = try measuredAgainAfterGaps(out, capture) { () throws -> (Double, Double, Double, Int) in
        let ends = Ends()
        let before = capture.frameCount
        let started = monotonicMicroseconds()
        out.play(try buffer(source), queue: .global(), completion: ends.handler(1))
        let end = try ends.wait(1)
        try expect(end.end == .finished, "end \(end.end)")
        sleepMilliseconds(100)
        let (left, stamps) = capture.snapshot()
        guard let onset = LoopbackCapture.onset(left, from: before), let heard = LoopbackCapture.time(of: onset, stamps),
            let last = LoopbackCapture.time(of: onset + source.count, stamps)
        else { throw CaseFailure("nothing captured") }
        return (correlation(source, left, onset: onset), Double(heard - started) / 1_000, Double(end.time - last) / 1_000, ends.count(1))
    }
    let stats = out.statistics
    try expect(score >= 0.99, "correlation \(score) (underflows \(stats.underflows), capture overruns \(capture.overruns))")
    try expect(completion >= -3, "completed \(format(completion)) ms before its last sample was captured")
    try expect(endCount == 1, "\(endCount) ends")
    return "correlation \(format(score)); play→first sample \(format(latency)) ms; completion \(format(completion)) ms after the last sample; \(stats.sampleFormat), ring \(stats.bufferFrames), period \(stats.periodFrames), rewinds \(stats.rewritesEnabled), underflows \(stats.underflows), capture overruns \(capture.overruns)"
}

/// `body`, a recording of `output` through `capture`, measured again (up to 4 times in all) while
/// the output under-ran or the capture overran during it: either puts a gap in the recording that
/// says nothing of the sound's shape or level (a TCG VM is slow, most of all just after boot). The
/// rule is `measuredAgainAfterUnderflows`'s, with the capture's losses counted beside the output's.
private func measuredAgainAfterGaps<Result>(
    _ output: ALSAOutput, _ capture: LoopbackCapture, _ body: () throws -> Result
) throws -> Result {
    try measuredAgainAfterUnderflows(underflows: { output.statistics.underflows + capture.overruns }, body)
}

private func stopSilences() throws -> String {
    let capture = try LoopbackCapture()
    defer { capture.stop() }
    let out = try output()
    let ends = Ends()
    let handle = out.play(try buffer(tone(440, seconds: 2)), queue: .global(), completion: ends.handler(1))
    sleepMilliseconds(300)
    let stopped = monotonicMicroseconds()
    handle.stop()
    let end = try ends.wait(1)
    try expect(end.end == .stopped, "end \(end.end)")
    sleepMilliseconds(150)
    let (left, stamps) = capture.snapshot()
    guard let lastLoud = left.lastIndex(where: { abs($0) > 0.01 }), let silent = LoopbackCapture.time(of: lastLoud, stamps) else {
        throw CaseFailure("nothing captured")
    }
    let silence = Double(silent - stopped) / 1_000
    try expect(silence < 40, "sound ran on \(format(silence)) ms after stop()")
    try expect(ends.count(1) == 1, "\(ends.count(1)) ends")
    return "stop()→silence \(format(silence)) ms; ended .stopped once"
}

private func severalVoices() throws -> String {
    let capture = try LoopbackCapture()
    defer { capture.stop() }
    let out = try output()
    let frequencies = [440.0, 660.0, 990.0]
    let levels = try measuredAgainAfterGaps(out, capture) { () throws -> [Double] in
        let ends = Ends()
        let before = capture.frameCount
        for (key, frequency) in frequencies.enumerated() {
            out.play(try buffer(tone(frequency, seconds: 0.5, amplitude: 0.2)), queue: .global(), completion: ends.handler(key))
        }
        for key in frequencies.indices {
            let end = try ends.wait(key)
            try expect(end.end == .finished && ends.count(key) == 1, "voice \(key): \(end.end), \(ends.count(key)) ends")
        }
        let (left, _) = capture.snapshot()
        guard let onset = LoopbackCapture.onset(left, from: before) else { throw CaseFailure("nothing captured") }
        let middle = left[(onset + 9_600)..<(onset + 14_400)]
        return frequencies.map { amplitude(of: $0, in: middle) }
    }
    try expect(levels.allSatisfy { abs($0 - 0.2) < 0.03 }, "levels \(levels) (underflows \(out.statistics.underflows), capture overruns \(capture.overruns))")
    return "3 voices mixed, levels \(levels.map { format($0) }) (0.2 each), each finished once"
}

private func completionsExactlyOnce() throws -> String {
    let out = try output()
    let ends = Ends()
    let click = try buffer(tone(1_000, seconds: 0.03))
    var stopped = 0
    for key in 0..<30 {
        let handle = out.play(click, queue: .global(), completion: ends.handler(key))
        if key % 3 == 0 {
            handle.stop()
            stopped += 1
        }
        usleep(UInt32.random(in: 0...8_000))
    }
    for key in 0..<30 { _ = try ends.wait(key) }
    sleepMilliseconds(300)
    let counts = (0..<30).map { ends.count($0) }
    try expect(counts.allSatisfy { $0 == 1 }, "end counts \(counts)")
    return "30 plays (\(stopped) stopped at once), each ended exactly once"
}

/// The loopback card's platform device, as the driver names it in sysfs.
private func aloopDevice() throws(CaseFailure) -> String {
    let driver = "/sys/bus/platform/drivers/snd_aloop"
    guard let directory = opendir(driver) else { throw CaseFailure("no \(driver)") }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name.hasPrefix("snd_aloop.") { return name }
    }
    throw CaseFailure("no snd_aloop device in \(driver)")
}

private func writeSysfs(_ path: String, _ value: String) throws(CaseFailure) {
    let descriptor = open(path, O_WRONLY)
    guard descriptor >= 0 else { throw CaseFailure("open \(path): \(Errno.current)") }
    defer { close(descriptor) }
    guard Glibc.write(descriptor, value, value.utf8.count) == value.utf8.count else { throw CaseFailure("write \(path): \(Errno.current)") }
}

private func deviceRemoved() throws -> String {
    let device = try aloopDevice()
    let out = try output()
    let ends = Ends()
    out.play(try buffer(tone(440, seconds: 3)), queue: .global(), completion: ends.handler(1))
    sleepMilliseconds(300)
    let removed = monotonicMicroseconds()
    try writeSysfs("/sys/bus/platform/drivers/snd_aloop/unbind", device)
    let end = try ends.wait(1, timeout: 2_000)
    try expect(end.end.error?.reason == .deviceLost, "end \(end.end)")
    let noticed = Double(end.time - removed) / 1_000
    // An output still polling the removed card would spin (POLLERR at once, every time).
    let cpuBefore = processCPUMilliseconds()
    sleepMilliseconds(300)
    let cpu = processCPUMilliseconds() - cpuBefore
    try expect(cpu < 50, "the output used \(format(cpu)) ms of CPU in 300 ms while its card was gone")
    // A play while the card is gone fails at once; after it is back, the output opens it again.
    let absent = Ends()
    out.play(try buffer(tone(440, seconds: 0.05)), queue: .global(), completion: absent.handler(1))
    let absentEnd = try absent.wait(1)
    try writeSysfs("/sys/bus/platform/drivers/snd_aloop/bind", device)
    sleepMilliseconds(200)
    let again = Ends()
    out.play(try buffer(tone(440, seconds: 0.1)), queue: .global(), completion: again.handler(1))
    let againEnd = try again.wait(1)
    sleepMilliseconds(200)
    try expect(ends.count(1) == 1, "\(ends.count(1)) ends for the play that lost its device")
    try expect(againEnd.end == .finished, "after the card came back: \(againEnd.end)")
    return "unbind → .deviceLost once after \(format(noticed)) ms, then \(format(cpu)) ms of CPU in 300 ms; while gone: \(absentEnd.end.error?.reason ?? .outputClosed); rebound → reopened, .finished (opens \(out.statistics.opens))"
}

/// Play → first sample captured, `count` times, for a play made by `trigger` (which returns once
/// the play is started; it may wait for it to end). Each with the capture frame it was heard at.
private func latencies(
    _ what: String, _ capture: LoopbackCapture, count: Int, _ trigger: (Int) throws -> Void
) throws -> [(ms: Double, onset: Int)] {
    var values: [(ms: Double, onset: Int)] = []
    for index in 0..<count {
        sleepMilliseconds(40 + Int.random(in: 0...20))
        let before = capture.frameCount
        let started = monotonicMicroseconds()
        try trigger(index)
        var heard: (time: Int64, onset: Int)?
        for _ in 0..<300 where heard == nil {
            if let onset = capture.onset(from: before) { heard = (onset.time, onset.frame) }
            if heard == nil { sleepMilliseconds(5) }
        }
        guard let heard else { throw CaseFailure("\(what): play \(index + 1) of \(count) was never captured") }
        values.append((Double(heard.time - started) / 1_000, heard.onset))
        // Let the sound end before the next, so its onset is the next one's.
        sleepMilliseconds(60)
    }
    return values
}

/// In-process latencies on `device`, and how long after each click's last sample was captured
/// its completion came (ms).
private func inProcessLatencies(
    _ device: String, rewinds: Bool = true, count: Int = 15
) throws -> (EngineStatistics, latencies: [Double], completions: [Double]) {
    let capture = try LoopbackCapture()
    defer { capture.stop() }
    let out = try output(device, rewinds: rewinds)
    let samples = tone(1_000, seconds: 0.02)
    let click = try buffer(samples)
    let ends = Ends()
    let heard: [(ms: Double, onset: Int)]
    do {
        heard = try latencies("ALSAOutput", capture, count: count) { index in
            out.play(click, queue: .global(), completion: ends.handler(index))
        }
    } catch let failure as CaseFailure {
        let stats = out.statistics
        throw CaseFailure(
            "\(failure) (rewinds \(stats.rewritesEnabled), rewrites \(stats.rewrites), underflows \(stats.underflows), opens \(stats.opens), ends so far \((0..<count).map { ends.count($0) }))")
    }
    sleepMilliseconds(50)
    let (_, stamps) = capture.snapshot()
    var completions: [Double] = []
    for (index, play) in heard.enumerated() {
        let end = try ends.wait(index)
        try expect(end.end == .finished, "click \(index): \(end.end)")
        if let last = LoopbackCapture.time(of: play.onset + samples.count, stamps) { completions.append(Double(end.time - last) / 1_000) }
    }
    return (out.statistics, heard.map(\.ms), completions)
}

/// In-process latencies on each of `devices` (with rewinds asked for or not); `dmix`: whether dmix
/// is in each one's chain, which the output must see, and then never rewind.
private func rewindAndLatency(devices: [(String, Bool)], dmix: Bool) throws -> String {
    var rows: [String] = []
    for (device, rewinds) in devices {
        let (stats, values, completions): (EngineStatistics, [Double], [Double])
        do {
            (stats, values, completions) = try inProcessLatencies(device, rewinds: rewinds)
        } catch let failure as CaseFailure {
            throw CaseFailure("\(device): \(failure)")
        }
        try expect(stats.sharedMixer == dmix, "\(device): dmix in the chain \(stats.sharedMixer), expected \(dmix)")
        try expect(!dmix || !stats.rewritesEnabled, "\(device): rewinds enabled on a chain with dmix")
        let row =
            "\(device)\(rewinds ? "" : " (rewinds off)"): dmix \(stats.sharedMixer), rewindable \(stats.rewindableFrames) of \(stats.bufferFrames) frames, rewinds \(stats.rewritesEnabled), queue \(stats.queuedFrames), \(stats.sampleFormat), underflows \(stats.underflows); play→first sample \(summary(values)); completion after the last sample \(summary(completions))"
        print("ALSA-LATENCY \(row)")
        rows.append(row)
    }
    return rows.joined(separator: " | ")
}

/// Runs `path` with `arguments` and waits for it.
private func runProgram(_ path: String, _ arguments: [String], environment: [String]) throws(CaseFailure) -> Int32 {
    var child: pid_t = 0
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    let status = posix_spawn(&child, path, nil, nil, argv, envp)
    guard status == 0 else { throw CaseFailure("spawn \(path): \(Errno(rawValue: status))") }
    var result: Int32 = 0
    while waitpid(child, &result, 0) < 0 && errno == EINTR {}
    return (result >> 8) & 0xFF
}

private func speedBesideAplay() throws -> String {
    let device = "plughw:Loopback,0,0"
    // The file `fire 1007` plays (the shipped theme's 16-bit WAV): aplay plays the same one.
    let file = "/usr/share/sounds/feedbackservices/stereo/message-new-instant.wav"
    let (_, inProcess, _) = try inProcessLatencies(device)
    let capture = try LoopbackCapture()
    defer { capture.stop() }
    var statuses: [Int32] = []
    let aplay = try latencies("aplay", capture, count: 12) { _ in
        statuses.append(try runProgram("/bin/aplay", ["-q", "-D", device, file], environment: []))
    }
    let environment = [
        "FEEDBACKSERVICES_PROFILE=full", "XDG_DATA_DIRS=/usr/share", "XDG_RUNTIME_DIR=/nonexistent", "HOME=/tmp",
    ]
    let fire = try latencies("feedbackctl fire", capture, count: 12) { _ in
        statuses.append(try runProgram("/bin/feedbackctl", ["fire", "1007", "--pcm", device], environment: environment))
    }.map(\.ms)
    // How much of a whole-process figure is the process itself, start to exit, interleaved:
    // `feedbackctl version`, startup-floor (a Swift program that only prints, linked as feedbackctl
    // is: what any of ours pays) and `aplay --version` (libasound loaded, nothing played).
    let starts: [(path: String, arguments: [String])] = [
        ("/bin/feedbackctl", ["version"]), ("/bin/startup-floor", []), ("/bin/aplay", ["--version"]),
    ]
    var startTimes = [[Double]](repeating: [], count: starts.count)
    for _ in 0..<12 {
        for (index, program) in starts.enumerated() {
            let started = monotonicMicroseconds()
            statuses.append(try runProgram(program.path, program.arguments, environment: environment))
            startTimes[index].append(Double(monotonicMicroseconds() - started) / 1_000)
        }
    }
    // The same command where feedbackservicesd owns the PCM (what a board with one `hw` device
    // and several programs that sound alerts runs: only one process may open it): `fire` then
    // starts, asks the service over D-Bus and waits for the end. Last, since the service keeps the
    // device open; one fire first, for the service to open it. (No FEEDBACKSERVICES_PROFILE here:
    // a command given one plays in process, as the service could not honour it.)
    let service = try VMDaemon(
        theme: #"{ "name": "vm", "profiles": [ { "name": "full", "feedbacks": [] } ] }"#,
        extraEnvironment: [
            "PULSE_SERVER=", "FEEDBACKSERVICES_ALSA_PCM=\(device)", "XDG_DATA_DIRS=/usr/share",
        ])
    defer { service.stop() }
    let first = service.feedbackctl(["fire", "1007", "--json"])
    statuses.append(first.status)
    let throughService: [Double]
    do {
        throughService = try latencies("feedbackctl fire through feedbackservicesd", capture, count: 12) { _ in
            statuses.append(try runProgram("/bin/feedbackctl", ["fire", "1007"], environment: service.environment))
        }.map(\.ms)
    } catch {
        throw CaseFailure(
            "\(error); the first fire: \(first.status) \(first.output); statuses \(statuses); "
                + "\(service.feedbackctl(["devices"]).output) \(service.log)")
    }
    try expect(statuses.allSatisfy { $0 == 0 }, "exit statuses \(statuses): \(service.log)")
    let devices = service.feedbackctl(["devices"])
    try expect(devices.output.contains("output:    engine (ALSA \(device))"), "the service's output: \(devices.output) \(service.log)")
    let median = { (values: [Double]) in values.sorted()[values.count / 2] }
    let lines = [
        "in-process ALSAOutput.play \(summary(inProcess))",
        "aplay message-new-instant.wav (whole process) \(summary(aplay.map(\.ms)))",
        "feedbackctl fire 1007 --pcm (whole process) \(summary(fire))",
        "feedbackctl fire 1007 through feedbackservicesd (whole process) \(summary(throughService))",
        "feedbackctl version (start to exit, no sound) \(summary(startTimes[0]))",
        "startup-floor (a Swift program that prints a line) \(summary(startTimes[1]))",
        "aplay --version (start to exit) \(summary(startTimes[2]))",
    ]
    for line in lines { print("ALSA-SPEED \(line)") }
    let reference = median(aplay.map(\.ms))
    // The output's own part is held to the issue's target; the whole process (start-up, theme
    // lookup, decoding) is reported beside it.
    try expect(median(inProcess) <= 0.5 * reference, "in-process \(format(median(inProcess))) ms vs aplay \(format(reference)) ms")
    let ratios = "in-process/aplay \(format(median(inProcess) / reference)) (target ≤ 0.5), fire/aplay \(format(median(fire) / reference)) (target ≤ 1.0), "
        + "through the service/aplay \(format(median(throughService) / reference))"
    print("ALSA-SPEED \(ratios)")
    return lines.joined(separator: "; ") + "; " + ratios
}
