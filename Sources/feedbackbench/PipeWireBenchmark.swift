import Dispatch
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc

/// The PipeWire figures, against a private headless PipeWire (null sink, WirePlumber,
/// pipewire-pulse) with one low-latency recorder on the sink's monitor: PipeWireOutput beside the
/// PulseAudio engine on pipewire-pulse and pw-play, in-process and whole-process, and gaps with a
/// CPU hog on each core. Every row of a table is measured in the same run, interleaved.
struct PipeWireBenchmark {
    let directory: String
    let plays: Int
    /// Only the tones under load (`--only pipewire-load`).
    var loadOnly = false

    func run() {
        let server: PipeWireTestServer
        do {
            server = try PipeWireTestServer.shared(named: "bench-pipewire")
        } catch {
            print("pipewire: no PipeWire could be started (\(error)); run scripts/setup")
            return
        }
        let beep = makeBeep()
        let path = "\(directory)/beep.wav"
        do { try SoundFileWriter.write(beep, to: path, format: .wav16) } catch { fatalError("cannot write the beep: \(error)") }
        // What a PipeWire client started from a session there sees: its runtime directory, no PULSE_SERVER.
        let session = [
            "HOME=\(server.directory.path)", "XDG_RUNTIME_DIR=\(server.runtime)", "PATH=/usr/bin:/bin",
        ]
        if !loadOnly {
            inProcess(server, beep: beep, path: path, session: session)
            print("")
            wholeProcess(server, session: session)
            print("")
        }
        underLoad(server)
    }

    // MARK: In-process play → first sample at the sink

    private func inProcess(_ server: PipeWireTestServer, beep: PCMBuffer, path: String, session: [String]) {
        let native = PipeWireOutput(configuration: .init(remote: server.socket))
        let pulse = PulseAudioOutput(configuration: .init(server: server.server))
        do {
            try native.prepare()
            try pulse.prepare()
        } catch {
            fatalError("pipewire: an output did not start: \(error)")
        }
        let contenders: [(String, () -> Void)] = [
            ("PipeWireOutput play", { native.play(beep) }),
            ("PulseAudioOutput on pipewire-pulse", { pulse.play(beep) }),
            ("pw-play FILE (whole process)", {
                guard runProgram("/usr/bin/pw-play", [path], environment: session) == 0 else { fatalError("pw-play failed") }
            }),
        ]
        let timings = interleaved(server, contenders.map(\.1))
        let statistics = native.statistics
        let quantum = statistics.quantum
        let quantumTime = Double(quantum) / 48_000
        print("PipeWire, play to first sample at the sink (\(plays) plays each, interleaved)")
        print("  graph quantum in force: \(quantum) frames (\(milliseconds(quantumTime))); "
            + "stream thread: \(statistics.streamThread?.description ?? "unknown (the callback never ran)")")
        for (index, contender) in contenders.enumerated() {
            print("  \(padded(contender.0)) \(timings[index].summary)")
        }
        let native50 = timings[0].median, native99 = timings[0].p99
        print("  PipeWireOutput p50 ≤ quantum + 1 ms: \(native50 <= quantumTime + 0.001 ? "meets" : "MISSES"); "
            + "p99 ≤ 2 quanta: \(native99 <= 2 * quantumTime ? "meets" : "MISSES")")
        print("  PipeWireOutput / PulseAudioOutput on pipewire-pulse: \(ratio(timings[0].median, timings[1].median))")
    }

    /// Plays each contender once per round, `plays` rounds; the time from the trigger to the
    /// first sample above −26 dBFS at the monitor.
    private func interleaved(_ server: PipeWireTestServer, _ triggers: [() -> Void]) -> [Timings] {
        var onsets = [[Double]](repeating: [], count: triggers.count)
        for _ in 0..<plays {
            for (index, trigger) in triggers.enumerated() {
                server.recorder.wait(seconds: 0.1)
                let start = MonotonicClock.now
                guard let arrival = server.recorder.arrivalOfFirstSound(after: trigger) else {
                    fatalError("pipewire: a play never reached the sink")
                }
                onsets[index].append(arrival - start)
            }
        }
        return onsets.map { Timings(samples: $0) }
    }

    // MARK: Whole process

    private func wholeProcess(_ server: PipeWireTestServer, session: [String]) {
        let feedbackctl = builtProduct("feedbackctl")
        guard access(feedbackctl, X_OK) == 0 else {
            print("pipewire whole process: \(feedbackctl) is not built; run 'swift build -c release' first")
            return
        }
        guard let resolver = try? SoundThemeResolver.standard(),
            case .resolved(let sound) = resolver.resolve(try! SystemSoundCatalog.sound(for: 1007))
        else {
            print("pipewire whole process: system sound 1007 does not resolve to a file here")
            return
        }
        let pulseSession = session + ["PULSE_SERVER=\(server.server)"]
        // feedbackservicesd on this PipeWire (PipeWireOutput, chosen as it is on a desktop), on a
        // bus of its own: `fire` then plays through it.
        let daemon: DaemonBenchmark.Contender
        do {
            daemon = try DaemonBenchmark.Contender(
                name: "feedbackservicesd", program: builtProduct("feedbackservicesd"), output: ["PIPEWIRE_REMOTE": server.socket])
            _ = try daemon.start()
        } catch {
            return print("pipewire whole process: feedbackservicesd did not start: \(error)")
        }
        defer { daemon.stop() }
        var contenders: [(String, String, [String], [String])] = [
            ("feedbackctl fire 1007 (PipeWireOutput)", feedbackctl, ["fire", "1007"], session),
            ("feedbackctl fire 1007 (pipewire-pulse)", feedbackctl, ["fire", "1007"],
             session + ["FEEDBACKSERVICES_OUTPUT=pulseaudio", "PULSE_SERVER=\(server.server)"]),
            ("pw-play FILE", "/usr/bin/pw-play", [sound.path], session),
            ("paplay FILE (pipewire-pulse)", "/usr/bin/paplay", [sound.path], pulseSession),
            ("feedbackctl fire 1007 (feedbackservicesd running)", feedbackctl, ["fire", "1007"],
             daemon.environment.map { "\($0)=\($1)" }),
        ]
        // Another build to compare with in the same run (a change's before and after), last.
        if let baseline = getenv("FEEDBACKBENCH_BASELINE").map({ String(cString: $0) }) {
            guard access(baseline, X_OK) == 0 else {
                return print("pipewire whole process: FEEDBACKBENCH_BASELINE=\(baseline) is not an executable")
            }
            contenders.append(("baseline fire 1007 (PipeWireOutput)", baseline, ["fire", "1007"], session))
        }
        for contender in contenders {
            for _ in 0..<2 { _ = runProgram(contender.1, contender.2, environment: contender.3) }
        }
        let timings = interleaved(server, contenders.map { contender in
            {
                guard runProgram(contender.1, contender.2, environment: contender.3) == 0 else {
                    fatalError("\(contender.0) failed")
                }
            }
        })
        print("PipeWire, whole process, start to first sample at the sink (\(plays) runs each, interleaved; \(sound.path))")
        for (index, contender) in contenders.enumerated() {
            print("  \(padded(contender.0)) \(timings[index].summary)")
        }
        let faster = timings[2].median <= timings[3].median ? 2 : 3
        let meets = timings[0].median <= timings[faster].median && timings[0].p90 <= timings[faster].p90
        print("  fire (PipeWireOutput) / \(contenders[faster].0): median \(ratio(timings[0].median, timings[faster].median)), "
            + "p90 \(ratio(timings[0].p90, timings[faster].p90)) (target ≤ 1.0× both: \(meets ? "meets" : "MISSES"))")
        let served = timings[4]
        print("  fire through feedbackservicesd / \(contenders[faster].0): median \(ratio(served.median, timings[faster].median)), "
            + "p90 \(ratio(served.p90, timings[faster].p90))")
    }

    // MARK: Under load

    /// A 3 s tone through PipeWireOutput, `plays / 10` times, with a busy process on each core:
    /// the gaps heard at the monitor (64 or more silent frames inside the tone) and the cycles in
    /// which the stream had no buffer to fill.
    private func underLoad(_ server: PipeWireTestServer) {
        let output = PipeWireOutput(configuration: .init(remote: server.socket))
        do { try output.prepare() } catch { fatalError("pipewire: \(error)") }
        let seconds = 3.0
        let tone = try! SoundDecoder().decode(
            samples: (0..<Int(seconds * 48_000)).map { Float(0.4 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) },
            sampleRate: 48_000, channelCount: 1)
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let hogs = (0..<cores).map { _ in try! ChildProcess("/bin/sh", ["-c", "while :; do :; done"], environment: [:]) }
        defer { hogs.forEach { $0.signal(SIGKILL) } }
        let xrunsBefore = output.statistics.underflows
        var gaps = 0
        let runs = max(3, plays / 10)
        for _ in 0..<runs {
            let mark = server.recorder.frameCount
            let finished = DispatchSemaphore(value: 0)
            output.play(tone) { _ in finished.signal() }
            finished.wait()
            server.recorder.wait(seconds: 0.05)
            guard let onset = server.recorder.firstSound(after: mark, threshold: 0.05, timeout: 1) else {
                fatalError("pipewire: the tone never reached the sink")
            }
            let left = server.recorder.channel(0, from: onset).prefix(Int((seconds - 0.05) * 48_000))
            var silent = 0
            for sample in left {
                if abs(sample) < 0.0005 {
                    silent += 1
                    if silent == 64 { gaps += 1 }
                } else {
                    silent = 0
                }
            }
        }
        print("PipeWire under load: \(runs) × \(seconds) s tone through PipeWireOutput, a busy loop on each of \(cores) cores")
        print("  gaps heard at the sink: \(gaps); cycles without a buffer (stream xruns): \(output.statistics.underflows - xrunsBefore)")
    }
}
