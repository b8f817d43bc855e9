import CFeedbackShims
@testable import FeedbackServices
import Testing

struct HapticPatternTests {
    @Test func waveformWithoutAmplitudesAlternatesOffAndOnStartingWithOff() throws {
        let pattern = try VibrationPattern.waveform(timings: [0, 200, 100, 200])
        #expect(pattern.steps.map(\.intensity) == [0, 1, 0, 1])
        #expect(pattern.steps.map(\.duration) == [0, 200, 100, 200])
        #expect(pattern.duration == 500)
        #expect(pattern.repeatIndex == nil)
    }

    @Test func waveformWithAmplitudesKeepsEachAmplitude() throws {
        let pattern = try VibrationPattern.waveform(timings: [100, 50, 100], amplitudes: [1, 0, 0.5], repeatIndex: 2)
        #expect(pattern.steps.map(\.intensity) == [1, 0, 0.5])
        #expect(pattern.repeatIndex == 2)
    }

    @Test func invalidPatternsAreRefused() {
        #expect(throws: VibrationPattern.Invalid.amplitudeCountMismatch(timings: 2, amplitudes: 1)) {
            try VibrationPattern.waveform(timings: [1, 2], amplitudes: [1])
        }
        #expect(throws: VibrationPattern.Invalid.empty) { try VibrationPattern.waveform(timings: [100]) }
        #expect(throws: VibrationPattern.Invalid.empty) { try VibrationPattern.oneShot(duration: 0) }
        #expect(throws: VibrationPattern.Invalid.negativeDuration(-5)) { try VibrationPattern.oneShot(duration: -5) }
        #expect(throws: VibrationPattern.Invalid.intensityOutOfRange(1.5)) { try VibrationPattern.oneShot(duration: 5, intensity: 1.5) }
        #expect(throws: VibrationPattern.Invalid.repeatIndexOutOfRange(4)) {
            try VibrationPattern.waveform(timings: [0, 10], repeatIndex: 4)
        }
        // Repeating only zero-length steps would spin forever.
        #expect(throws: VibrationPattern.Invalid.repeatIndexOutOfRange(2)) {
            try VibrationPattern.waveform(timings: [0, 10, 0], repeatIndex: 2)
        }
    }

    @Test func rumbleSpreadsCountPulsesOverTheDurationWithPauses() throws {
        let pattern = try VibrationPattern.rumble(duration: 600, count: 3, pause: 100, magnitude: 0.8)
        #expect(pattern.steps.map(\.duration) == [100, 100, 100, 100, 100, 100])
        #expect(pattern.steps.map(\.intensity) == [0.8, 0, 0.8, 0, 0.8, 0])
        #expect(throws: VibrationPattern.Invalid.empty) { try VibrationPattern.rumble(duration: 100, count: 2, pause: 50) }
    }

    @Test func periodicCarriesWaveformAndFadeIn() throws {
        let pattern = try VibrationPattern.periodic(duration: 300, magnitude: 0.6, fadeIn: 100)
        #expect(pattern.steps == [.init(duration: 300, intensity: 0.6, periodic: .init(waveform: .sine, period: 10, fadeIn: 100))])
    }

    @Test func systemVibrateIsA400MillisecondBuzz() {
        #expect(VibrationPattern.systemVibrate.steps == [.init(duration: 400, intensity: 1)])
    }
}

struct HapticRenderingTests {
    let rumble: ForceFeedbackCapabilities = [.rumble, .gain]
    let periodicOnly: ForceFeedbackCapabilities = [.periodic, .sine]

    @Test func stepsBecomeEffectsDelayedByTheirOffset() throws {
        let pattern = try VibrationPattern.waveform(timings: [100, 50, 100, 50, 150], amplitudes: [1, 0, 0.5, 0, 0.25])
        let rendered = PatternRenderer.render(pattern, capabilities: rumble, maximumStrength: 1)
        #expect(rendered.phrases.count == 1)
        let phrase = rendered.phrases[0]
        #expect(phrase.duration == 450 && !phrase.repeats)
        #expect(phrase.steps.map(\.offset) == [0, 150, 300])
        #expect(phrase.steps.map(\.effect) == [
            ForceFeedbackEffect(.rumble(strong: 1, weak: 1), length: 100, delay: 0),
            ForceFeedbackEffect(.rumble(strong: 0.5, weak: 0.5), length: 100, delay: 150),
            ForceFeedbackEffect(.rumble(strong: 0.25, weak: 0.25), length: 150, delay: 300),
        ])
        #expect(rendered.effectCount == 3 && rendered.fitsKernelTiming)
    }

    @Test func maximumStrengthScalesEveryIntensity() throws {
        let rendered = PatternRenderer.render(try .oneShot(duration: 10, intensity: 0.8), capabilities: rumble, maximumStrength: 0.5)
        #expect(rendered.phrases[0].steps[0].effect.kind == .rumble(strong: 0.4, weak: 0.4))
        let silent = PatternRenderer.render(try .oneShot(duration: 10), capabilities: rumble, maximumStrength: 0)
        #expect(silent.effectCount == 0 && silent.phrases[0].duration == 10)
    }

    @Test func periodicOnlyDevicesGetASine() throws {
        let rendered = PatternRenderer.render(try .oneShot(duration: 150), capabilities: periodicOnly, maximumStrength: 1)
        #expect(rendered.phrases[0].steps[0].effect.kind == .periodic(.sine, magnitude: 1, period: 10, fadeIn: 0))
    }

    @Test func periodicStepsRumbleWhereThereIsNoPeriodic() throws {
        let pattern = try VibrationPattern.periodic(duration: 100, magnitude: 0.5, waveform: .square, fadeIn: 20)
        #expect(PatternRenderer.render(pattern, capabilities: rumble, maximumStrength: 1).phrases[0].steps[0].effect.kind
            == .rumble(strong: 0.5, weak: 0.5))
        // A waveform the device lacks falls back to its sine.
        #expect(PatternRenderer.render(pattern, capabilities: periodicOnly, maximumStrength: 1).phrases[0].steps[0].effect.kind
            == .periodic(.sine, magnitude: 0.5, period: 10, fadeIn: 20))
    }

    @Test func repeatIndexSplitsIntoAPrefixAndARepeatingPhrase() throws {
        let pattern = try VibrationPattern.waveform(timings: [50, 30, 60, 40], amplitudes: [1, 0, 0.5, 0], repeatIndex: 2)
        let rendered = PatternRenderer.render(pattern, capabilities: rumble, maximumStrength: 1)
        #expect(rendered.phrases.map(\.duration) == [80, 100])
        #expect(rendered.phrases.map(\.repeats) == [false, true])
        #expect(rendered.phrases[1].steps.map(\.offset) == [0])
    }

    @Test func stepsLongerThanTheKernelFieldAreSplit() throws {
        let rendered = PatternRenderer.render(try .oneShot(duration: 40_000), capabilities: rumble, maximumStrength: 1)
        #expect(rendered.phrases[0].steps.map(\.effect.length) == [32767, 7233])
        #expect(rendered.phrases[0].steps.map(\.offset) == [0, 32767])
        #expect(rendered.fitsKernelTiming)
        let longer = PatternRenderer.render(try .oneShot(duration: 70_000), capabilities: rumble, maximumStrength: 1)
        #expect(longer.phrases[0].steps.map(\.offset) == [0, 32767, 65534])
        #expect(!longer.fitsKernelTiming)
    }

    @Test(arguments: [
        (3, 16, StepTiming.kernel), (3, 3, .kernel), (3, 2, .userSpace(slots: 2)), (3, 1, .userSpace(slots: 1)),
        (1, 0, nil),
    ] as [(Int, Int, StepTiming?)])
    func timingFollowsTheFreeSlots(steps: Int, free: Int, expected: StepTiming?) throws {
        let timings = Array(repeating: 10, count: steps * 2)
        let pattern = try VibrationPattern.waveform(timings: timings)
        let rendered = PatternRenderer.render(pattern, capabilities: rumble, maximumStrength: 1)
        #expect(rendered.effectCount == steps)
        #expect(PatternRenderer.timing(for: rendered, freeSlots: free) == expected)
    }

    @Test func delaysBeyondTheKernelFieldAreTimedInUserSpace() throws {
        let pattern = try VibrationPattern.waveform(timings: [0, 10, 40_000, 10])
        let rendered = PatternRenderer.render(pattern, capabilities: rumble, maximumStrength: 1)
        #expect(PatternRenderer.timing(for: rendered, freeSlots: 16) == .userSpace(slots: 2))
    }

    @Test func onlyLowerPrioritiesArePreempted() {
        let playing: [(id: Int, priority: HapticPriority)] = [(1, .low), (2, .normal), (3, .high), (4, .low)]
        #expect(PatternRenderer.preempted(by: .normal, among: playing) == [1, 4])
        #expect(PatternRenderer.preempted(by: .high, among: playing) == [1, 2, 4])
        #expect(PatternRenderer.preempted(by: .low, among: playing).isEmpty)
    }
}

struct ForceFeedbackEffectEncodingTests {
    @Test func structLayoutMatchesTheKernel() {
        #expect(MemoryLayout<ff_effect>.size == 48)
        #expect(MemoryLayout<input_event>.size == 24)
    }

    @Test func rumbleEncodesMagnitudesAndReplay() {
        let effect = ForceFeedbackEffect(.rumble(strong: 1, weak: 0.5), length: 200, delay: 150).encoded(id: -1)
        #expect(effect.type == UInt16(FF_RUMBLE))
        #expect(effect.id == -1)
        #expect(effect.u.rumble.strong_magnitude == 0xFFFF)
        #expect(effect.u.rumble.weak_magnitude == 0x8000)
        #expect(effect.replay.length == 200 && effect.replay.delay == 150)
        #expect(effect.trigger.button == 0 && effect.direction == 0)
    }

    @Test func periodicEncodesWaveformMagnitudeAndEnvelope() {
        let effect = ForceFeedbackEffect(.periodic(.square, magnitude: 0.6, period: 20, fadeIn: 100), length: 300).encoded(id: 4)
        #expect(effect.type == UInt16(FF_PERIODIC) && effect.id == 4)
        #expect(effect.u.periodic.waveform == UInt16(FF_SQUARE))
        #expect(effect.u.periodic.magnitude == 19660)
        #expect(effect.u.periodic.period == 20)
        #expect(effect.u.periodic.envelope.attack_length == 100 && effect.u.periodic.envelope.attack_level == 0)
    }

    @Test func outOfRangeValuesAreClamped() {
        let effect = ForceFeedbackEffect(.rumble(strong: .nan, weak: 7), length: 100_000, delay: -3).encoded(id: 0)
        #expect(effect.u.rumble.strong_magnitude == 0 && effect.u.rumble.weak_magnitude == 0xFFFF)
        #expect(effect.replay.length == 0x7FFF && effect.replay.delay == 0)
    }

    @Test func ioctlNumbersAreTheKernels() {
        #expect(fbs_eviocsff() == 0x4030_4580)
        #expect(fbs_eviocrmff() == 0x4004_4581)
        #expect(fbs_eviocgeffects() == 0x8004_4584)
        #expect(fbs_eviocgbit(UInt32(EV_FF), 16) == 0x8010_4535)
    }
}
