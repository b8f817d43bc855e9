// How far apart a sound and its vibration begin (issue 35), on the VM's loopback card and a uinput
// vibrator in one boot, both stamped with CLOCK_MONOTONIC: the first captured frame of the sound
// (`LoopbackCapture.onset`), and the kernel's stamp of the EV_FF play the device received.
import CALSA
import FeedbackServices
import Glibc
import Synchronization

/// Runs the skew cases (main.swift calls it after the audio cases).
func runSkewCases() {
    alarm(200)
    defer { alarm(hapticsTimeLimit) }
    run("alsa-vibration-skew") { try vibrationSkew() }
    run("feedbackctl-haptics-play") { try hapticsPlayCase() }
}

/// Events per measurement (the issue asks for at least 100).
private let events = 100

/// The rig's floor, then `FeedbackManager.play(.audioAndVibrate)` before the change (the vibration
/// started as soon as asked) and after (started when the ALSA output says the sound is heard), on
/// a PCM with an 80 ms queue and no rewinds and on the engine's default rewinding route. Checks
/// that every event was heard and felt, and that aligning moved the vibration toward the sound on
/// the long queue; reports median / p90 / p99 / max of |vibration − sound| for each (a
/// measurement, not a bound: the VM may run under TCG).
private func vibrationSkew() throws -> String {
    let program = try device("FBS Skew", "rumble", slots: 16)
    let haptics = try engine(program.path)
    defer {
        haptics.shutdown()
        haptics.device.close()
    }
    let capture = try LoopbackCapture()
    defer { capture.stop() }
    sleepMilliseconds(100)

    let (floor, floorLost) = try referenceSkews(program, capture)
    var lines = [
        "floor (a sample and an EV_FF play written together, 4 ms PCM): \(summary(floor.map(abs))); signed median \(format(median(floor))) ms; "
            + "\(floorLost) lost to capture overruns"
    ]
    let routes: [(String, ALSAOutput.Configuration)] = [
        ("80 ms queue, no rewinds", .init(device: playback, bufferDuration: 0.1, shortQueueDuration: 0.08, rewinds: false)),
        ("rewinding (default)", .init(device: playback)),
    ]
    for (name, configuration) in routes {
        var before = 0.0
        for aligned in [false, true] {
            let (skews, underflows, lostEvents) = try managerSkews(configuration, aligned: aligned, program, haptics, capture)
            let absolute = skews.map(abs)
            lines.append(
                "\(name), \(aligned ? "after" : "before"): \(summary(absolute)); signed median \(format(median(skews))) ms; "
                    + "\(underflows) underflows, \(lostEvents) lost to capture overruns")
            // The figures are for the closing note and docs/benchmarks.md; what is checked is only
            // that aligning moved the vibration toward the sound on the long queue (80 ms apart).
            if !aligned { before = median(absolute) }
            if aligned && !configuration.rewinds {
                try expect(median(absolute) < before / 2, "aligned median \(format(median(absolute))) ms, before \(format(before)) ms")
            }
        }
    }
    return lines.joined(separator: " | ")
}

private func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

private func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
}

/// The vibration's start (ms, signed: positive when felt after the sound is heard) less the
/// sound's onset, for the sound whose onset comes after capture frame `mark` and the first effect
/// start after the `startsBefore` already made; waits for both up to a second. Nil when the rig
/// lost the sound: the capture side overran (dropped frames) since `overruns` and the sound is
/// not in what it kept — the event is not measurable, and is played again (`Lost`).
private func skew(
    _ program: DeviceProgram, _ capture: LoopbackCapture, mark: Int, startsBefore: Int, overruns: Int,
    _ label: @autoclosure () -> String
) throws -> Double? {
    var onset: (frame: Int, time: Int64)?
    var start: Int64?
    for _ in 0..<200 {
        if onset == nil { onset = capture.onset(from: mark, threshold: 0.1) }
        if start == nil {
            let starts = stepStarts(program.records())
            if starts.count > startsBefore { start = starts[startsBefore].time }
        }
        if onset != nil && start != nil { break }
        sleepMilliseconds(5)
    }
    guard let onset else {
        if capture.overruns > overruns { return nil }
        throw CaseFailure("\(label()): the sound was not heard within a second (\(capture.frameCount - mark) frames captured since, \(capture.overruns) overruns)")
    }
    guard let start else { throw CaseFailure("\(label()): the vibration did not start within a second") }
    return Double(start - onset.time) / 1_000
}

/// Events the rig lost (its capture overran across them), counted per measurement; past
/// `maximum` the measurement fails rather than run on.
private struct Lost {
    static let maximum = 20
    var count = 0

    mutating func another(_ label: String) throws(CaseFailure) {
        count += 1
        if count > Self.maximum { throw CaseFailure("\(label): the capture overran across \(count) events") }
    }
}

/// The floor: a program of our own writes a loud 1 ms chunk into a 4 ms PCM and, as soon as the
/// write returns, an EV_FF play of an uploaded effect. What it measures is the two stamps' own
/// error plus the PCM's few milliseconds of queue.
private func referenceSkews(_ program: DeviceProgram, _ capture: LoopbackCapture) throws -> (skews: [Double], lost: Int) {
    var handle: OpaquePointer?
    guard snd_pcm_open(&handle, playback, SND_PCM_STREAM_PLAYBACK, 0) == 0, let pcm = handle else {
        throw CaseFailure("cannot open \(playback) for the reference")
    }
    defer { snd_pcm_close(pcm) }
    guard snd_pcm_set_params(pcm, SND_PCM_FORMAT_S32_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 2, UInt32(rate), 0, 4_000) == 0 else {
        throw CaseFailure("reference PCM parameters refused")
    }
    let device: ForceFeedbackDevice
    let effect: Int16
    do {
        device = try ForceFeedbackDevice(path: program.path)
        effect = try device.upload(ForceFeedbackEffect(.rumble(strong: 1, weak: 0), length: 20))
    } catch { throw CaseFailure("reference effect: \(error)") }
    defer { device.close() }
    let chunk = 48
    let silence = [Int32](repeating: 0, count: chunk * 2)
    let loud = [Int32](repeating: 1 << 30, count: chunk * 2)
    /// Writes `samples` whole, recovering from an underrun.
    func write(_ samples: [Int32]) {
        var written = 0
        while written < chunk {
            let result = samples.withUnsafeBytes { bytes in
                Int(snd_pcm_writei(pcm, bytes.baseAddress! + written * 8, snd_pcm_uframes_t(chunk - written)))
            }
            if result < 0 {
                snd_pcm_recover(pcm, Int32(result), 1)
                continue
            }
            written += result
        }
    }
    var skews: [Double] = []
    var lost = Lost()
    while skews.count < events {
        let event = skews.count
        // Silence between the events keeps the PCM running, so that each click is written into a
        // queue of the same few milliseconds.
        for _ in 0..<(event == 0 ? 60 : 30) { write(silence) }
        let mark = capture.frameCount
        let overruns = capture.overruns
        let startsBefore = stepStarts(program.records()).count
        write(loud)
        do { try device.play(effect) } catch { throw CaseFailure("reference play: \(error)") }
        for _ in 0..<30 { write(silence) }
        guard let skew = try skew(program, capture, mark: mark, startsBefore: startsBefore, overruns: overruns, "floor, event \(event)")
        else {
            try lost.another("floor")
            continue
        }
        skews.append(skew)
    }
    return (skews, lost.count)
}

/// `FeedbackManager.play` of a 20 ms click as `.audioAndVibrate`, with a 20 ms buzz, `events`
/// times on an ALSA output made as `configuration`; `aligned` false starts the vibration at once
/// (as before the change).
private func managerSkews(
    _ configuration: ALSAOutput.Configuration, aligned: Bool, _ program: DeviceProgram, _ haptics: HapticEngine,
    _ capture: LoopbackCapture
) throws -> (skews: [Double], underflows: Int, lost: Int) {
    let output = ALSAOutput(configuration: configuration)
    do { try output.prepare(timeout: 2) } catch { throw CaseFailure("open \(configuration.device): \(error)") }
    let registry = SoundRegistry()
    let click: SystemSoundID
    let buzz: VibrationPattern
    do {
        click = try registry.register(samples: [Float](repeating: 0.5, count: 960), sampleRate: rate, channelCount: 1)
        buzz = try .oneShot(duration: 20)
    } catch { throw CaseFailure("setup: \(error)") }
    let manager = FeedbackManager(
        registry: registry, audioOutput: output, vibrator: .engine(haptics), settings: FeedbackSettings(path: nil))
    manager.profileOverride = .full
    manager.alignsVibrationWithSound = aligned
    var skews: [Double] = []
    var lost = Lost()
    while skews.count < events {
        let event = skews.count
        let mark = capture.frameCount
        let overruns = capture.overruns
        let startsBefore = stepStarts(program.records()).count
        let done = Lock<FeedbackResult?>(nil)
        manager.play(.id(click), type: .audioAndVibrate, vibration: buzz) { result in done.withLock { $0 = result } }
        let label = "\(configuration.rewinds ? "rewinding" : "80 ms queue") \(aligned ? "after" : "before"), event \(event)"
        do {
            if let skew = try skew(program, capture, mark: mark, startsBefore: startsBefore, overruns: overruns, label) {
                skews.append(skew)
            } else {
                try lost.another(label)
            }
        } catch {
            // What the play itself said, and the output's state, beside the rig's account.
            for _ in 0..<200 where done.withLock({ $0 == nil }) { sleepMilliseconds(5) }
            let result = done.withLock { $0 }.map { "sound \($0.sound), vibration \($0.vibration)" } ?? "no result"
            throw CaseFailure("\(error); the play: \(result); output \(output.statistics)")
        }
        for _ in 0..<200 where done.withLock({ $0 == nil }) { sleepMilliseconds(5) }
        guard let result = done.withLock({ $0 }) else { throw CaseFailure("no result within a second") }
        guard result.playedSound && result.vibrated else { throw CaseFailure("sound \(result.sound), vibration \(result.vibration)") }
        sleepMilliseconds(20)
    }
    return (skews, output.statistics.underflows, lost.count)
}

/// `feedbackctl haptics play` on the loopback and a uinput vibrator: a tap and a sound at 0 s, a
/// half-strength buzz and a second sound at 0.2 s. The sounds reach the device 0.2 s apart to the
/// frame (one mix); the pattern's vibration is the device's steps; how far the tap is from the
/// first sound is reported.
func hapticsPlayCase() throws -> String {
    let program = try device("FBS Pattern", "rumble", slots: 16)
    defer { program.destroy() }
    let capture = try LoopbackCapture()
    defer { capture.stop() }
    do {
        let click = try SoundDecoder().decode(samples: [Float](repeating: 0.5, count: 2_400), sampleRate: rate, channelCount: 1)
        try SoundFileWriter.write(click, to: "/tmp/click.wav", format: .wavFloat)
    } catch { throw CaseFailure("click: \(error)") }
    let pattern = #"""
        { "Version": 1.0, "Pattern": [
          { "Event": { "Time": 0, "EventType": "HapticTransient", "EventParameters": [ { "ParameterID": "HapticIntensity", "ParameterValue": 1 } ] } },
          { "Event": { "Time": 0, "EventType": "AudioCustom", "EventWaveformPath": "click.wav" } },
          { "Event": { "Time": 0.2, "EventType": "HapticContinuous", "EventDuration": 0.1,
              "EventParameters": [ { "ParameterID": "HapticIntensity", "ParameterValue": 0.5 } ] } },
          { "Event": { "Time": 0.2, "EventType": "AudioCustom", "EventWaveformPath": "click.wav" } }
        ] }
        """#
    guard let file = fopen("/tmp/pattern.ahap", "w") else { throw CaseFailure("cannot write /tmp/pattern.ahap") }
    fputs(pattern, file)
    fclose(file)
    sleepMilliseconds(100)
    let mark = capture.frameCount
    let overruns = capture.overruns
    let startsBefore = stepStarts(program.records()).count
    let environment = ["FEEDBACKSERVICES_PROFILE=full", "XDG_RUNTIME_DIR=/nonexistent", "HOME=/tmp"]
    let played = runToEnd(
        "/bin/feedbackctl", ["haptics", "play", "--json", "--pcm", playback, "--device", program.path, "/tmp/pattern.ahap"], environment)
    try expect(played.status == 0, "haptics play: \(played.status) \(played.output)")
    try expect(
        played.output.contains(#""sound":"finished""#) && played.output.contains(#""vibration":"finished""#), "report \(played.output)")
    sleepMilliseconds(50)
    let (left, stamps) = capture.snapshot()
    guard let first = LoopbackCapture.onset(left, from: mark, threshold: 0.1),
        let second = LoopbackCapture.onset(left, from: first + 4_800, threshold: 0.1),
        let firstTime = LoopbackCapture.time(of: first, stamps)
    else { throw CaseFailure("the two sounds were not both heard") }
    // One mix: exact. Tried again (a timing miss) only when the rig's capture overran meanwhile,
    // dropping frames between the two; any other offset fails.
    if second - first != 9_600 {
        let description = "the second sound began \(second - first - 9_600) frames off its 0.2 s"
        if capture.overruns > overruns { throw TimingMiss(description: "\(description), across a capture overrun") }
        throw CaseFailure(description)
    }
    let starts = Array(stepStarts(program.records()).dropFirst(startsBefore))
    let steps = starts.map { [$0.upload.int("strong"), $0.upload.int("length")] }
    try expect(steps.first == [65535, 22] && steps.contains([32768, 100]), "the device's steps \(steps)")
    // Reported, not bounded: the distribution is alsa-vibration-skew's. Here the PCM starts with
    // this sound (nothing queued ahead of it), and under TCG on one CPU the tap's thread waited
    // behind the first fill's rendering: 15.8 ms in the first run.
    let skew = Double(starts[0].time - firstTime) / 1_000
    return "sounds 9,600 frames apart; steps \(steps); tap − sound \(format(skew)) ms"
}
