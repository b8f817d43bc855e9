import Testing

@testable import FeedbackServices

/// `PlayPositionClock`, offline: a device whose position is exact, one whose position moves by
/// the jiffy as snd-aloop's does (4 ms at HZ=250), and one that stands still.
@Suite struct PlayPositionClockTests {
    static let rate = 48_000.0

    @Test func anExactPositionIsTakenAsReported() {
        var clock = PlayPositionClock(rate: 48_000)
        for step in 0..<50 {
            let time = 10 + Double(step) * 0.0103
            let played = Int64(((time - 10) * Self.rate).rounded(.down))
            #expect(clock.played(at: time, reported: played) - Double(played) < 1, "step \(step)")
            clock.report(played: played, at: time)
        }
    }

    /// A position that moves every 4 ms lags the truth by 2 ms on average (up to 4); reports at
    /// the engine's wake-ups (every 10.3 ms, each at another phase of the jiffy) bring the
    /// estimate within half a millisecond of it, never ahead of it.
    @Test func aSteppedPositionIsEstimatedBetweenItsSteps() {
        let jiffy = 0.004
        func truth(_ time: Double) -> Double { time * Self.rate }
        func reported(_ time: Double) -> Int64 { Int64((time / jiffy).rounded(.down) * jiffy * Self.rate) }
        var clock = PlayPositionClock(rate: 48_000)
        var rawLags: [Double] = []
        var lags: [Double] = []
        for step in 0..<100 {
            let time = 0.0011 + Double(step) * 0.0103
            // A query between reports, at yet another phase.
            let query = time + 0.0037
            let estimate = clock.played(at: query, reported: reported(query))
            if time > 0.25 {
                rawLags.append((truth(query) - Double(reported(query))) / Self.rate * 1_000)
                lags.append((truth(query) - estimate) / Self.rate * 1_000)
            }
            clock.report(played: reported(time), at: time)
        }
        #expect(lags.allSatisfy { $0 >= -0.001 }, "never ahead of the truth: \(lags.min()!) ms")
        #expect(lags.max()! <= 0.5, "within 0.5 ms: \(lags.max()!) ms")
        let rawMean = rawLags.reduce(0, +) / Double(rawLags.count)
        #expect(rawMean > 1.5, "the raw position lags ~2 ms: \(rawMean)")
    }

    /// A device that stands still (a stall): the estimate follows what it reports, not what the
    /// older reports promised, and never leads it by more than `maximumLead`.
    @Test func aStillDeviceIsNotTakenAsPlaying() {
        var clock = PlayPositionClock(rate: 48_000)
        for step in 0..<10 {
            let time = Double(step) * 0.01
            clock.report(played: Int64(time * Self.rate), at: time)
        }
        // It stops at 0.09 s: soon after, the lead is bounded; once it is behind, it starts over.
        let stuck = Int64(0.09 * Self.rate)
        #expect(clock.played(at: 0.2, reported: stuck) == Double(stuck) + PlayPositionClock.maximumLead * Self.rate)
        // Reported behind the earlier reports' estimate by more than the bound: they are dropped,
        // and the estimate carries this one only (still bounded).
        clock.report(played: stuck, at: 0.2)
        #expect(clock.played(at: 0.201, reported: stuck) == Double(stuck) + 0.001 * Self.rate)
        clock.reset()
        #expect(clock.played(at: 0.3, reported: stuck) == Double(stuck))
    }
}
