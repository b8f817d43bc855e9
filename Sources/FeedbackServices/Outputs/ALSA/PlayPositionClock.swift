/// The frame an ALSA device is playing, now, from the positions it reported (`snd_pcm_delay`
/// against the frames written). Many drivers move their position in steps: snd-aloop by the
/// jiffy (4 ms at the usual HZ=250), a batch driver by the period, USB audio by the packet. Such a
/// position lags the frame really playing by up to a step and never leads it, so each report,
/// carried forward at the rate to now, is a lower bound of the position now, and the largest of
/// the recent ones is the closest to it. With reports at varied phases of the step (the engine
/// reports at each wake-up), the estimate's lag shrinks from up to a step to a fraction of one; a
/// driver whose position is exact gives the position it reports.
///
/// Bounded: reports from the last `window` seconds, at most `capacity`; the estimate is never
/// more than `maximumLead` seconds ahead of the position reported now (a device that slowed or
/// stood still since an older report would otherwise be taken as further on than it is), and a
/// report that finds the device behind an earlier one's estimate by more than that starts over.
///
/// A value, used by the engine's audio thread only.
struct PlayPositionClock {
    /// How long a report is used, in seconds: a sound card's drift from CLOCK_MONOTONIC over it
    /// (tens of ppm) is tens of microseconds; at the engine's wake-ups it holds some 50 reports,
    /// at phases enough to come within a fraction of a step (a quarter second's half as many
    /// left the vibration's p90 about twice as far from the sound: docs/benchmarks.md).
    static let window = 0.5
    /// The most reports kept.
    static let capacity = 64
    /// The most the estimate may lead the reported position, in seconds: a few of the coarsest
    /// steps (a 4 ms jiffy, a USB frame), far less than a period of a long queue.
    static let maximumLead = 0.006

    /// Frames per second.
    let rate: Double
    private var reports: [(time: Double, played: Int64)] = []

    init(rate: Int) {
        self.rate = Double(rate)
        reports.reserveCapacity(Self.capacity)
    }

    /// Records that at `time` (`MonotonicClock` seconds) the device reported `played` frames
    /// played (the frames written less its delay).
    mutating func report(played: Int64, at time: Double) {
        reports.removeAll { time - $0.time > Self.window }
        if let best = estimate(at: time), best - Double(played) > Self.maximumLead * rate {
            // Behind what an earlier report promised: the device slowed or stood still.
            reports.removeAll()
        }
        if reports.count == Self.capacity { reports.removeFirst() }
        reports.append((time, played))
    }

    /// Forgets every report: the position jumped (a recovered underrun, a new start).
    mutating func reset() {
        reports.removeAll(keepingCapacity: true)
    }

    /// The frames played at `time`, given that the device reports `played` then: at least
    /// `played`, at most `maximumLead` ahead of it.
    func played(at time: Double, reported played: Int64) -> Double {
        let reported = Double(played)
        guard let best = estimate(at: time) else { return reported }
        return min(max(best, reported), reported + Self.maximumLead * rate)
    }

    /// The largest report carried forward to `time`, of those from the last `window` seconds.
    private func estimate(at time: Double) -> Double? {
        var best: Double?
        for report in reports where time >= report.time && time - report.time <= Self.window {
            let carried = Double(report.played) + (time - report.time) * rate
            best = max(best ?? carried, carried)
        }
        return best
    }
}
