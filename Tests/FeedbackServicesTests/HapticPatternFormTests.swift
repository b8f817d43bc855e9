import Dispatch
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackServices

/// Our own pattern form (`HapticPatternJSON.swift`): read exactly, refused with the entry and
/// field named, sounds by ID and event mixed as their files are, and the lights played on LEDs
/// (a sysfs tree of plain files) on the pattern's clock.
@Suite struct HapticPatternFormTests {
    let directory = TemporaryDirectory()

    func write(_ text: String, _ name: String = "pattern.json") -> String {
        directory.write(Array(text.utf8), to: name)
    }

    func read(_ text: String) throws(HapticPatternError) -> HapticPattern {
        try HapticPattern(fileAt: write(text))
    }

    /// Every event type, with and without its defaults.
    @Test func everyEventReadsAsWritten() throws {
        let path = write(
            #"""
            { "version": 1,
              "events": [
                { "type": "sound", "time": 0, "id": 1007, "volume": 0.8, "pan": -0.5 },
                { "type": "sound", "time": 0.5, "event": "message-new-instant" },
                { "type": "sound", "time": 1, "file": "knock.oga", "duration": 0.3 },
                { "type": "sound", "time": 1, "file": "/abs/knock.oga" },
                { "type": "transient", "time": 0, "intensity": 0.6 },
                { "type": "continuous", "time": 0.1, "duration": 0.4, "intensity": 0.8, "sharpness": 0.2,
                  "attack": 0.1, "release": 0.2, "sustained": false },
                { "type": "primitive", "time": 0.6, "name": "double-click", "intensity": 0.5 },
                { "type": "light", "time": 0, "duration": 1.5, "color": "blue", "brightness": 0.5, "frequency": 2 },
                { "type": "light", "time": 2, "duration": 0.5 } ],
              "curves": [ { "control": "intensity", "time": 0.2, "points": [ { "time": 0, "value": 1 }, { "time": 1, "value": 0.2 } ] },
                          { "control": "pan", "points": [ { "time": 0, "value": 0.5 } ] } ] }
            """#)
        let pattern = try HapticPattern(fileAt: path)
        let flat = HapticPattern.HapticEnvelope()
        #expect(pattern.path == path)
        #expect(pattern.events == [
            .sound(time: 0, sound: .id(1007), volume: 0.8, pan: -0.5, duration: nil),
            .transient(time: 0, intensity: 0.6, sharpness: 0.5),
            .light(time: 0, duration: 1.5, color: .blue, brightness: 0.5, frequency: 2),
            .continuous(time: 0.1, duration: 0.4, intensity: 0.8, sharpness: 0.2, envelope: .init(attack: 0.1, release: 0.2, sustained: false)),
            .sound(time: 0.5, sound: .event("message-new-instant"), volume: 1, pan: 0, duration: nil),
            // double-click: 20 ms on, 80 ms off, 20 ms on, at half intensity.
            .continuous(time: 0.6, duration: 0.02, intensity: 0.5, sharpness: 0.5, envelope: flat),
            .continuous(time: 0.7, duration: 0.02, intensity: 0.5, sharpness: 0.5, envelope: flat),
            .sound(time: 1, sound: .file(directory.file("knock.oga")), volume: 1, pan: 0, duration: 0.3),
            .sound(time: 1, sound: .file("/abs/knock.oga"), volume: 1, pan: 0, duration: nil),
            .light(time: 2, duration: 0.5, color: .white, brightness: 1, frequency: 0),
        ])
        #expect(pattern.curves == [
            .init(control: .hapticIntensity, points: [(0.2, 1), (1.2, 0.2)]), .init(control: .audioPan, points: [(0, 0.5)]),
        ])
        #expect(pattern.notes.count == 1 && pattern.notes[0].hasPrefix("sharpness is drawn but not felt"), "\(pattern.notes)")
        #expect(pattern.duration == 2.5)
        // The lights are a lane of their own: not felt, and drawn.
        #expect(pattern.levels(at: [0.05, 2.1]).map(\.light) == [.blue, .white])
        #expect(pattern.levels(at: [1.8]).map(\.light) == [nil])
    }

    /// A malformed document is refused, naming the entry and the field.
    @Test(arguments: [
        (#"{ "events": [ { "type": "sound", "time": 0 } ] }"#, "events[0] must name exactly one of id, event, file"),
        (#"{ "events": [ { "type": "sound", "time": 0, "id": 1007, "file": "a.oga" } ] }"#, "events[0] must name exactly one"),
        (#"{ "events": [ { "type": "sound", "time": 0, "id": -1 } ] }"#, "events[0].id is not a sound ID"),
        (#"{ "events": [ { "type": "sound", "time": 0, "id": 1007.5 } ] }"#, "events[0].id is not a sound ID"),
        (#"{ "events": [ { "type": "sound", "time": 0, "event": "" } ] }"#, "events[0].event is not text"),
        (#"{ "events": [ { "type": "tap", "time": 0 } ] }"#, "events[0].type is not one of continuous, light, primitive, sound, transient"),
        (#"{ "events": [ { "time": 0 } ] }"#, "events[0].type is not one of"),
        (#"{ "events": [ { "type": "transient" } ] }"#, "events[0].time is missing"),
        (#"{ "events": [ { "type": "transient", "time": 0, "intensty": 1 } ] }"#, "events[0].intensty is not a field here"),
        (#"{ "events": [ { "type": "transient", "time": 61 } ] }"#, "events[0].time 61.0 is outside 0.0…60.0"),
        (#"{ "events": [ { "type": "continuous", "time": 0 } ] }"#, "events[0].duration is missing"),
        (#"{ "events": [ { "type": "continuous", "time": 59, "duration": 2 } ] }"#, "events[0] ends after 60.0 s"),
        (#"{ "events": [ { "type": "continuous", "time": 0, "duration": 1, "sustained": 1 } ] }"#, "events[0].sustained is not true or false"),
        (#"{ "events": [ { "type": "primitive", "time": 0, "name": "buzz" } ] }"#, "events[0].name is not one of click, double-click"),
        (#"{ "events": [ { "type": "primitive", "time": 59.99, "name": "slow-rise" } ] }"#, "events[0] ends after 60.0 s"),
        (#"{ "events": [ { "type": "light", "time": 0, "duration": 1, "color": "purple" } ] }"#, "events[0].color is not one of white, red, green, blue"),
        (#"{ "events": [ { "type": "light", "time": 0, "duration": 1, "brightness": 0 } ] }"#, "events[0].brightness is 0"),
        (#"{ "events": [ { "type": "light", "time": 0, "duration": 1, "frequency": 0.001 } ] }"#, "events[0].frequency 0.001 is neither 0"),
        (#"{ "events": [ { "type": "light", "time": 0, "duration": 1, "frequency": 21 } ] }"#, "events[0].frequency 21.0 is outside 0.0…20.0"),
        (#"{ "events": [], "curves": [ { "control": "pitch", "points": [ { "time": 0, "value": 1 } ] } ] }"#, "curves[0].control is not one of intensity, pan, sharpness, volume"),
        (#"{ "events": [], "curves": [ { "control": "volume", "points": [] } ] }"#, "curves[0].points is missing, empty or not a list"),
        (#"{ "events": [], "curves": [ { "control": "volume", "points": [ { "time": 1, "value": 1 }, { "time": 0, "value": 1 } ] } ] }"#, "curves[0].points[1].time goes back in time"),
        (#"{ "events": [], "curves": [ { "control": "volume", "points": [ { "time": 0, "value": 2 } ] } ] }"#, "curves[0].points[0].value 2.0 is outside 0.0…1.0"),
        (#"{ "events": {} }"#, "events is not a list"),
        (#"{ "events": [], "extra": 1 }"#, "the document.extra is not a field here"),
    ])
    func malformedDocumentsAreRefusedByEntryAndField(text: String, problem: String) {
        do {
            let pattern = try read(text)
            Issue.record("read as \(pattern)")
        } catch {
            #expect(error.problem.hasPrefix(problem), "\(error.problem)")
        }
    }

    /// Every count is bounded: the entries, and the events a document's primitives make.
    @Test func theCountsAreBounded() {
        let tap = #"{ "type": "transient", "time": 0 }"#
        #expect(throws: HapticPatternError.self) {
            try read(#"{ "events": [ \#(Array(repeating: tap, count: HapticPattern.Limits.entries + 1).joined(separator: ",")) ] }"#)
        }
        let rise = #"{ "type": "primitive", "time": 0, "name": "slow-rise" }"#
        do {
            _ = try read(#"{ "events": [ \#(Array(repeating: rise, count: 700).joined(separator: ",")) ] }"#)
            Issue.record("700 slow rises (4,200 events) were read")
        } catch {
            #expect(error.problem.contains("primitives make 4200 events"), "\(error.problem)")
        }
    }

    /// Read from bytes with no directory (a pattern passed as an open file), a relative sound
    /// file has nothing to be relative to: refused; an absolute one, an ID or an event are fine.
    @Test func aPatternWithNoDirectoryRefusesARelativeFile() throws {
        let relative = Array(#"{ "events": [ { "type": "sound", "time": 0, "file": "a.oga" } ] }"#.utf8)
        let error = #expect(throws: HapticPatternError.self) { try HapticPattern(bytes: relative, path: "fd", directory: nil) }
        #expect(error?.problem.contains("is relative") == true, "\(String(describing: error))")
        let ahap = Array(#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "AudioCustom", "EventWaveformPath": "a.wav" } } ] }"#.utf8)
        #expect(throws: HapticPatternError.self) { try HapticPattern(bytes: ahap, path: "fd", directory: nil) }
        let named = Array(#"{ "events": [ { "type": "sound", "time": 0, "id": 1007 }, { "type": "sound", "time": 0, "file": "/a.oga" } ] }"#.utf8)
        #expect(try HapticPattern(bytes: named, path: "fd", directory: nil).events.count == 2)
    }

    /// A sound named by ID or by event mixes exactly as the file the theme gives for it.
    @Test func soundsByIDAndEventMixAsTheirFiles() throws {
        let resolver = makeResolver(theme: "feedbackservices", bases: [repositoryThemesDirectory])
        let manager = FeedbackManager(
            registry: SoundRegistry(), vibrator: .none, settings: FeedbackSettings(path: nil), themeResolver: resolver)
        let triTone = try #require(resolvedPath(resolver.resolve(try SystemSoundCatalog.sound(for: 1007))))
        let message = try #require(resolvedPath(try resolver.resolve("message-new-instant")))
        func mix(_ events: String) throws -> [Float] {
            let pattern = try HapticPattern(fileAt: write(#"{ "events": [ \#(events) ] }"#))
            return try #require(try manager.resolve(pattern, maximumDecodedSeconds: 30).sound.buffer).samples
        }
        let byName = try mix(
            #"{ "type": "sound", "time": 0, "id": 1007, "volume": 0.5 }, { "type": "sound", "time": 0.25, "event": "message-new-instant", "pan": 1 }"#)
        let byFile = try mix(
            #"{ "type": "sound", "time": 0, "file": "\#(triTone)", "volume": 0.5 }, { "type": "sound", "time": 0.25, "file": "\#(message)", "pan": 1 }"#)
        #expect(!byName.isEmpty && byName == byFile)

        // What cannot be a sound is refused, naming it.
        for (events, problem) in [
            (#"{ "type": "sound", "time": 0, "id": 4095 }"#, "vibrates and has no sound"),
            (#"{ "type": "sound", "time": 0, "id": 1017 }"#, "1017"),
            (#"{ "type": "sound", "time": 0, "event": "no-such-event-here" }"#, "no-such-event-here"),
        ] {
            do {
                _ = try mix(events)
                Issue.record("\(events) was mixed")
            } catch {
                #expect("\(error)".contains(problem), "\(error)")
            }
        }
    }

    /// The lights lane: each light on the LED of its colour at its time, the LED put back at its
    /// end; a stop ends the lit ones and the others never begin; a colour no LED shows is told once.
    @Test func theLightsPlayOnTheirLEDsAndArePutBack() throws {
        let tree = FakeSysfs()
        try tree.add("red:status", triggers: "[none] timer", udev: ["FEEDBACKD_TYPE": "led"])
        try tree.add("blue:status", triggers: "[none] timer", udev: ["FEEDBACKD_TYPE": "led"])
        let pattern = try read(
            #"""
            { "events": [ { "type": "light", "time": 0, "duration": 0.3, "color": "red" },
                          { "type": "light", "time": 0.1, "duration": 0.1, "color": "blue", "brightness": 0.5 },
                          { "type": "light", "time": 0.1, "duration": 0.1, "color": "green" } ] }
            """#)
        let problems = Lock<[String]>([])
        let lane = LightLane(pattern, discovery: tree.discovery) { problem in problems.withLock { $0.append(problem) } }
        let ended = DispatchSemaphore(value: 0)
        lane.whenEnded { ended.signal() }
        lane.start(at: MonotonicClock.now)
        // Observed by polling the files (the lane keeps its own time): red comes on, then blue.
        #expect(eventually(2) { tree.read("red:status", "brightness") == "255" })
        #expect(eventually(2) { tree.read("blue:status", "brightness") == "128" })
        #expect(ended.wait(timeout: .now() + 3) == .success)
        #expect(tree.read("red:status", "brightness") == "0" && tree.read("blue:status", "brightness") == "0", "put back")
        #expect(problems.withLock { $0 }.count == 1 && problems.withLock { $0 }[0].contains("green"), "\(problems.withLock { $0 })")

        // An LED another blink of this process runs on (a theme's Led feedback) is left to it.
        let other = try LEDBlink(led: try tree.discovery.led(named: "blue:status"), pattern: try LEDBlinkPattern(frequency: 0))
        let blue = try read(#"{ "events": [ { "type": "light", "time": 0, "duration": 0.1, "color": "blue", "brightness": 0.5 } ] }"#)
        let busyProblems = Lock<[String]>([])
        let busy = LightLane(blue, discovery: tree.discovery) { problem in busyProblems.withLock { $0.append(problem) } }
        let busyEnd = DispatchSemaphore(value: 0)
        busy.whenEnded { busyEnd.signal() }
        busy.start(at: nil)
        #expect(busyEnd.wait(timeout: .now() + 2) == .success)
        #expect(tree.read("blue:status", "brightness") == "255", "the other blink keeps its LED")
        #expect(busyProblems.withLock { $0 }.first?.contains("blinks for another feedback") == true, "\(busyProblems.withLock { $0 })")
        try other.end()

        // Stopped at once: the light at 0.5 s never begins, and the lane has ended.
        let late = try read(#"{ "events": [ { "type": "light", "time": 0.5, "duration": 0.2, "color": "red" } ] }"#)
        let stopped = LightLane(late, discovery: tree.discovery) { _ in }
        let stoppedEnd = DispatchSemaphore(value: 0)
        stopped.whenEnded { stoppedEnd.signal() }
        stopped.start(at: nil)
        stopped.stop()
        #expect(stoppedEnd.wait(timeout: .now()) == .success)
        usleep(700_000)
        #expect(tree.read("red:status", "brightness") == "0", "a stopped light never begins")
    }

    /// `FeedbackManager.play` of a pattern with lights: its completion waits for them, in every
    /// profile (silent too: a light is not heard), and a stop ends them.
    @Test func aPatternsPlayEndsAfterItsLights() throws {
        let tree = FakeSysfs()
        try tree.add("red:status", triggers: "[none] timer", udev: ["FEEDBACKD_TYPE": "led"])
        let manager = FeedbackManager(registry: SoundRegistry(), vibrator: .none, settings: FeedbackSettings(path: nil))
        manager.lights = tree.discovery
        let path = write(#"{ "events": [ { "type": "light", "time": 0, "duration": 0.3, "color": "red" } ] }"#)
        let done = DispatchSemaphore(value: 0)
        let result = Lock<FeedbackResult?>(nil)
        let start = MonotonicClock.now
        let ended = Lock<Double>(0)
        _ = try manager.play(hapticPatternAt: path, profile: .silent) { played in
            ended.withLock { $0 = MonotonicClock.now }
            result.withLock { $0 = played }
            done.signal()
        }
        #expect(eventually(2) { tree.read("red:status", "brightness") == "255" })
        #expect(done.wait(timeout: .now() + 3) == .success)
        #expect(ended.withLock { $0 } - start >= 0.3, "the play ended before its light: \(ended.withLock { $0 } - start) s")
        #expect(tree.read("red:status", "brightness") == "0")
        #expect(result.withLock { $0 }?.sound == .silencedByProfile(.silent), "\(String(describing: result.withLock { $0 }))")

        let long = write(#"{ "events": [ { "type": "light", "time": 0, "duration": 30, "color": "red" } ] }"#, "long.json")
        let stoppedDone = DispatchSemaphore(value: 0)
        let playback = try manager.play(hapticPatternAt: long) { _ in stoppedDone.signal() }
        #expect(eventually(2) { tree.read("red:status", "brightness") == "255" })
        playback.stop()
        #expect(stoppedDone.wait(timeout: .now() + 2) == .success)
        #expect(tree.read("red:status", "brightness") == "0")
    }
}

/// Whether `condition` holds within `seconds`, checked every 5 ms.
private func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = MonotonicClock.now + seconds
    while MonotonicClock.now < end {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}
