import FeedbackServices
import FeedbackTestSupport
import Glibc

/// `feedbackctl fire 1007` as a whole process, from the moment it is started to
/// its first sample at the server, beside `paplay` of the same file (and `gsound-play` and
/// `canberra-gtk-play` where installed: `scripts/setup --bench`), in one run on one recorder.
struct CommandBenchmark {
    let plays: Int

    func run() {
        guard let server = benchmarkServer(for: "feedbackctl fire") else { return }
        // The feedbackctl built beside this benchmark, or the one FEEDBACKBENCH_FEEDBACKCTL names.
        let feedbackctl = getenv("FEEDBACKBENCH_FEEDBACKCTL").map { String(cString: $0) } ?? Self.siblingExecutable("feedbackctl")
        guard access(feedbackctl, X_OK) == 0 else {
            print("feedbackctl fire: \(feedbackctl) is not built; run 'swift build -c release' first")
            return
        }
        guard let resolver = try? SoundThemeResolver.standard(),
            case .resolved(let sound) = resolver.resolve(try! SystemSoundCatalog.sound(for: 1007))
        else {
            print("feedbackctl fire: system sound 1007 does not resolve to a file here")
            return
        }
        // Warm the page cache and the server's module state the same way for every contender.
        for _ in 0..<2 {
            _ = runProgram(feedbackctl, ["fire", "1007"])
            _ = runProgram("paplay", [sound.path])
        }
        var contenders: [(String, [String])] = [
            ("feedbackctl fire 1007", [feedbackctl, "fire", "1007"]),
            ("paplay FILE", ["paplay", sound.path]),
        ]
        // Another build to compare with in the same run (a change's before and after).
        if let baseline = getenv("FEEDBACKBENCH_BASELINE").map({ String(cString: $0) }) {
            guard access(baseline, X_OK) == 0 else {
                print("feedbackctl fire: FEEDBACKBENCH_BASELINE=\(baseline) is not an executable")
                return
            }
            _ = runProgram(baseline, ["fire", "1007"])
            contenders.append(("baseline fire 1007", [baseline, "fire", "1007"]))
        }
        var missing: [String] = []
        if programExists("gsound-play") {
            contenders.append(("gsound-play -f FILE", ["gsound-play", "-f", sound.path]))
        } else {
            missing.append("gsound-play")
        }
        var notes: [String] = []
        if !programExists("canberra-gtk-play") {
            missing.append("canberra-gtk-play")
        } else if getenv("DISPLAY") == nil && getenv("WAYLAND_DISPLAY") == nil {
            notes.append("canberra-gtk-play not measured: it initialises GTK and needs a display (DISPLAY is unset)")
        } else {
            contenders.append(("canberra-gtk-play -f FILE", ["canberra-gtk-play", "-f", sound.path]))
        }
        // Interleaved, one play of each per round, so that a slow moment of the machine hits all alike.
        var onsets = [[Double]](repeating: [], count: contenders.count)
        for _ in 0..<plays {
            for (index, contender) in contenders.enumerated() {
                server.recorder.wait(seconds: 0.1)
                let start = MonotonicClock.now
                let arrival = server.recorder.arrivalOfFirstSound {
                    guard runProgram(contender.1[0], Array(contender.1.dropFirst())) == 0 else {
                        fatalError("\(contender.0) failed")
                    }
                }
                guard let arrival else { fatalError("\(contender.0): the sound never reached the server") }
                onsets[index].append(arrival - start)
            }
        }
        print("whole process, start to first sample at the server (\(plays) runs each, interleaved; \(sound.path))")
        let timings = onsets.map { Timings(samples: $0) }
        for (index, contender) in contenders.enumerated() {
            print("  \(padded(contender.0)) \(timings[index].summary)")
        }
        if !missing.isEmpty { print("  not installed (scripts/setup --bench): \(missing.joined(separator: ", "))") }
        for note in notes { print("  \(note)") }
        let value = timings[0].median / timings[1].median
        print("  feedbackctl / paplay: \(ratio(timings[0].median, timings[1].median)) (target ≤ 1.0×: \(value <= 1 ? "meets" : "MISSES"))")
    }

    /// An executable built beside this one.
    static func siblingExecutable(_ name: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let path = String(decoding: buffer.prefix(max(count, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) + "/" + name
    }
}
