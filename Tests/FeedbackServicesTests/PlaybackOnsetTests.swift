@testable import FeedbackServices
import Synchronization
import Testing

/// `PlaybackHandle.whenHeard`: the instant a play's first frame reaches the device, as its output
/// reckons it, handed once to every waiter — the hook a vibration meant to be felt with its sound
/// starts by. Offline: the handle alone (the ALSA output's reckoning is measured in the VM,
/// `alsa-vibration-skew`).
@Suite struct PlaybackOnsetTests {
    /// Every answer a handle gave, in order.
    final class Answers: Sendable {
        let values = Lock<[Double?]>([])
        func add(_ value: Double?) { values.withLock { $0.append(value) } }
        var all: [Double?] { values.withLock { $0 } }
    }

    func handle(reportsOnset: Bool) -> PlaybackHandle {
        PlaybackHandle(id: nextPlaybackID(), control: nil, delivery: .queue(.global()), completion: nil, reportsOnset: reportsOnset)
    }

    @Test func waitersBeforeAndAfterTheReportGetTheSameTimeOnce() {
        let played = handle(reportsOnset: true)
        let answers = Answers()
        played.whenHeard(answers.add)
        played.whenHeard(answers.add)
        #expect(answers.all.isEmpty, "nothing before the output has placed the sound")
        played.reportOnset(12.5)
        played.reportOnset(99)
        played.whenHeard(answers.add)
        #expect(answers.all == [12.5, 12.5, 12.5])
        played.end(.finished)
        played.whenHeard(answers.add)
        #expect(answers.all == [12.5, 12.5, 12.5, 12.5], "an end after the report changes nothing")
    }

    @Test func anOutputThatCannotTellAnswersNilAtOnce() {
        let answers = Answers()
        handle(reportsOnset: false).whenHeard(answers.add)
        #expect(answers.all == [nil])
    }

    @Test func aPlayEndedBeforeItWasPlacedAnswersNil() {
        for end in [PlaybackEnd.stopped, .cancelled, .failed(PlaybackError(.outputClosed))] {
            let played = handle(reportsOnset: true)
            let answers = Answers()
            played.whenHeard(answers.add)
            played.end(end, stoppingVoice: false)
            played.reportOnset(1)
            played.whenHeard(answers.add)
            #expect(answers.all == [nil, nil], "\(end)")
        }
    }

    /// Reports and waiters racing from many threads: each waiter answered exactly once, all with
    /// the one time reported first.
    @Test func racingReportsAndWaitersAgree() async {
        for _ in 0..<50 {
            let played = handle(reportsOnset: true)
            let answers = Answers()
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        if index % 2 == 0 { played.whenHeard(answers.add) } else { played.reportOnset(Double(index)) }
                    }
                }
            }
            let all = answers.all
            #expect(all.count == 4 && Set(all).count == 1 && all[0] != nil, "\(all)")
        }
    }
}
