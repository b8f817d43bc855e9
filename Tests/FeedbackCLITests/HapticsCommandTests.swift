@testable import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// Haptic patterns read from AHAP files (`HapticPattern`), on fixtures written as Apple's AHAP
/// documentation lays the format out, and malformed ones; and `feedbackctl haptics check|show`.
@Suite struct HapticsCommandTests {
    var directory = TemporaryDirectory()

    /// A heartbeat as Apple's documentation builds its examples: a tap, a held beat under an
    /// intensity curve, a sound beside them, and sharpness.
    static let heartbeat = #"""
        {
          "Version": 1.0,
          "Metadata": { "Project": "Tests", "Description": "A heartbeat" },
          "Pattern": [
            { "Event": { "Time": 0.0, "EventType": "HapticTransient",
                "EventParameters": [ { "ParameterID": "HapticIntensity", "ParameterValue": 1.0 },
                                     { "ParameterID": "HapticSharpness", "ParameterValue": 0.5 } ] } },
            { "Event": { "Time": 0.5, "EventType": "HapticContinuous", "EventDuration": 0.5,
                "EventParameters": [ { "ParameterID": "HapticIntensity", "ParameterValue": 0.5 },
                                     { "ParameterID": "HapticSharpness", "ParameterValue": 0.5 },
                                     { "ParameterID": "Sustained", "ParameterValue": 1 } ] } },
            { "Event": { "Time": 0.25, "EventType": "AudioCustom", "EventWaveformPath": "beat.wav", "EventDuration": 0.25,
                "EventParameters": [ { "ParameterID": "AudioVolume", "ParameterValue": 0.75 },
                                     { "ParameterID": "AudioPan", "ParameterValue": -0.5 } ] } },
            { "Parameter": { "ParameterID": "HapticIntensityControl", "Time": 0.75, "ParameterValue": 0.5 } },
            { "ParameterCurve": { "ParameterID": "HapticSharpnessControl", "Time": 0.5,
                "ParameterCurveControlPoints": [ { "Time": 0, "ParameterValue": 0 }, { "Time": 0.5, "ParameterValue": -0.5 } ] } }
          ]
        }
        """#

    func write(_ text: String, _ name: String = "pattern.ahap") -> String {
        let path = directory.file(name)
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    /// A pattern whose `Pattern` is `entries`.
    func pattern(_ entries: String) -> String { write(#"{ "Version": 1.0, "Pattern": [ \#(entries) ] }"#) }

    @Test func aDocumentedPatternReadsAsWritten() throws {
        let path = write(Self.heartbeat)
        let read = try HapticPattern(fileAt: path)
        #expect(read.events == [
            .transient(time: 0, intensity: 1, sharpness: 0.5),
            .sound(time: 0.25, sound: .file(directory.file("beat.wav")), volume: 0.75, pan: -0.5, duration: 0.25),
            .continuous(time: 0.5, duration: 0.5, intensity: 0.5, sharpness: 0.5, envelope: .init(sustained: true)),
        ])
        #expect(read.curves == [
            .init(control: .hapticIntensity, points: [(0.75, 0.5)]),
            .init(control: .hapticSharpness, points: [(0.5, 0), (1.0, -0.5)]),
        ])
        #expect(read.duration == 1.0)
        #expect(read.curves[1].value(at: 0.75) == -0.25)
        #expect(read.curves[1].value(at: 0.25) == nil)
        #expect(read.notes.count == 1 && read.notes[0].hasPrefix("sharpness is drawn but not felt"), "\(read.notes)")
    }

    /// A relative AHAP path still gives its sounds absolute paths, from the working directory.
    @Test func aPatternsDirectoryIsAbsolute() {
        #expect(HapticPattern.directory(of: "/a/b/x.ahap", workingDirectory: "/w") == "/a/b")
        #expect(HapticPattern.directory(of: "/x.ahap", workingDirectory: "/w") == "/")
        #expect(HapticPattern.directory(of: "x.ahap", workingDirectory: "/w") == "/w")
        #expect(HapticPattern.directory(of: "p/x.ahap", workingDirectory: "/w") == "/w/p")
        #expect(HapticPattern.directory(of: "p/x.ahap", workingDirectory: "/") == "/p")
        #expect(HapticPattern.directory(of: "x.ahap", workingDirectory: "/") == "/")
    }

    @Test func whatDoesNotPlayHereIsSaidOnce() throws {
        let read = try HapticPattern(fileAt: write(#"""
            { "Version": 2, "Pattern": [
              { "Event": { "Time": 0, "EventType": "AudioContinuous", "EventDuration": 1,
                  "EventParameters": [ { "ParameterID": "AudioPitch", "ParameterValue": -0.3 } ] } },
              { "Event": { "Time": 1, "EventType": "AudioContinuous", "EventDuration": 1 } },
              { "Event": { "Time": 0, "EventType": "AudioCustom", "EventWaveformPath": "/usr/share/sounds/x.wav",
                  "EventParameters": [ { "ParameterID": "AudioBrightness", "ParameterValue": 0.3 } ] } } ] }
            """#))
        #expect(read.events == [.sound(time: 0, sound: .file("/usr/share/sounds/x.wav"), volume: 1, pan: 0, duration: nil)])
        #expect(read.notes.count == 3, "\(read.notes)")
        #expect(read.notes.contains { $0.hasPrefix("Version 2.0") })
        #expect(read.notes.contains { $0.hasPrefix("AudioContinuous events") })
        #expect(read.notes.contains { $0.hasPrefix("AudioBrightness is not played") })
    }

    @Test(arguments: [
        (#"{ "Version": 1 }"#, "Pattern is missing or not a list"),
        ("[1]", "the document is not an object"),
        ("{", "not JSON"),
        (#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticTransient" }, "Parameter": {} } ] }"#,
         "Pattern[0] must hold exactly one of Event, Parameter, ParameterCurve"),
        (#"{ "Pattern": [ { "Sound": {} } ] }"#, "Pattern[0]: 'Sound' is not Event, Parameter or ParameterCurve"),
        (#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticBuzz" } } ] }"#, "Pattern[0].Event.EventType 'HapticBuzz' is not"),
        (#"{ "Pattern": [ { "Event": { "EventType": "HapticTransient" } } ] }"#, "Pattern[0].Event.Time is missing"),
        (#"{ "Pattern": [ { "Event": { "Time": -1, "EventType": "HapticTransient" } } ] }"#, "Pattern[0].Event.Time -1.0 is outside 0.0…60.0"),
        (#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticContinuous" } } ] }"#, "Pattern[0].Event.EventDuration is missing"),
        (#"{ "Pattern": [ { "Event": { "Time": 59, "EventType": "HapticContinuous", "EventDuration": 2 } } ] }"#, "Pattern[0].Event ends after 60.0 s"),
        (#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticTransient", "EventParameters": [ { "ParameterID": "HapticIntensity", "ParameterValue": 1.5 } ] } } ] }"#,
         "Pattern[0].Event.EventParameters[0].ParameterValue (HapticIntensity) 1.5 is outside 0.0…1.0"),
        (#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticTransient", "EventParameters": [ { "ParameterID": "Loudness", "ParameterValue": 1 } ] } } ] }"#,
         "Pattern[0].Event.EventParameters[0].ParameterID 'Loudness' is not an event parameter"),
        (#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "AudioCustom" } } ] }"#, "Pattern[0].Event.EventWaveformPath is missing"),
        (#"{ "Pattern": [ { "Parameter": { "ParameterID": "HapticIntensity", "Time": 0, "ParameterValue": 1 } } ] }"#,
         "Pattern[0].Parameter.ParameterID 'HapticIntensity' is not a dynamic parameter"),
        (#"{ "Pattern": [ { "ParameterCurve": { "ParameterID": "AudioVolumeControl", "Time": 0, "ParameterCurveControlPoints": [] } } ] }"#,
         "Pattern[0].ParameterCurve.ParameterCurveControlPoints is missing, empty or not a list"),
        (#"{ "Pattern": [ { "ParameterCurve": { "ParameterID": "AudioVolumeControl", "Time": 0, "ParameterCurveControlPoints": [ { "Time": 1, "ParameterValue": 1 }, { "Time": 0.5, "ParameterValue": 1 } ] } } ] }"#,
         "Pattern[0].ParameterCurve.ParameterCurveControlPoints[1].Time goes back in time"),
    ])
    func aMalformedPatternIsRefusedNamingTheEntryAndField(_ text: String, _ problem: String) {
        let path = write(text)
        #expect(throws: HapticPatternError.self) { try HapticPattern(fileAt: path) }
        do {
            _ = try HapticPattern(fileAt: path)
        } catch {
            #expect(error.problem.hasPrefix(problem), "\(error.problem)")
            #expect(error.path == path)
        }
    }

    @Test func everyCountIsBounded() throws {
        let tap = #"{ "Event": { "Time": 0, "EventType": "HapticTransient" } }"#
        let many = pattern(Array(repeating: tap, count: HapticPattern.Limits.entries + 1).joined(separator: ","))
        #expect(throws: HapticPatternError(path: many, problem: "Pattern has 4097 entries, more than 4096")) {
            try HapticPattern(fileAt: many)
        }
        #expect(try HapticPattern(fileAt: pattern(Array(repeating: tap, count: HapticPattern.Limits.entries).joined(separator: ","))).events.count == 4_096)
        let point = #"{ "Time": 0, "ParameterValue": 1 }"#
        let curve = { (count: Int) in
            #"{ "ParameterCurve": { "ParameterID": "AudioVolumeControl", "Time": 0, "ParameterCurveControlPoints": [ \#(Array(repeating: point, count: count).joined(separator: ",")) ] } }"#
        }
        let long = pattern(curve(1_025))
        #expect(throws: HapticPatternError(path: long, problem: "Pattern[0].ParameterCurve has 1025 control points, more than 1024")) {
            try HapticPattern(fileAt: long)
        }
        let total = pattern(Array(repeating: curve(1_024), count: 17).joined(separator: ","))
        #expect(throws: HapticPatternError(path: total, problem: "Pattern[16].ParameterCurve: more than 16384 control points in all")) {
            try HapticPattern(fileAt: total)
        }
        let huge = write(String(repeating: " ", count: HapticPattern.Limits.fileSize + 1))
        #expect(throws: HapticPatternError.self) { try HapticPattern(fileAt: huge) }
    }

    /// The lanes, exactly: 16 columns of 1/16 s; the tap in the first, the held beat from 0.5 s
    /// at half intensity, halved again by the intensity control from 0.75 s; sharpness 0.5,
    /// lowered by its curve (each column shows the most it reaches); the sound from 0.25 to 0.5 s.
    @Test func showDrawsTheLanesExactly() throws {
        let lanes = Lanes(pattern: try HapticPattern(fileAt: write(Self.heartbeat)), columns: 16)
        #expect(lanes.intensity == "█       ▄▄▄▄▂▂▂▂")
        #expect(lanes.sharpness == "▄       ▄▄▃▃▂▂▁▁")
        #expect(lanes.sound == "    ████        ")
        #expect(lanes.axis == "0 s       1.00 s")
    }

    /// The haptic lane as one motor's steps, exactly: the 22 ms tap, a pause to 0.5 s, the held
    /// beat at half, then at a quarter under the intensity control.
    @Test func theHapticLaneBecomesOneMotorsSteps() throws {
        let read = try HapticPattern(fileAt: write(Self.heartbeat))
        #expect(read.vibrationPattern?.steps == [
            .init(duration: 22, intensity: 1), .init(duration: 478, intensity: 0), .init(duration: 250, intensity: 0.5),
            .init(duration: 250, intensity: 0.25),
        ])
        #expect(read.levels(at: [0.75, 0.01, 0.3]) == [
            .init(intensity: 0.25, sharpness: 0.25, sound: false), .init(intensity: 1, sharpness: 0.5, sound: false),
            .init(intensity: nil, sharpness: nil, sound: true),
        ])
        // An attack of 0.5 s rises in steps of 1/32 to full (reached, rounded, at 492 ms), which
        // it holds for the rest.
        let rising = try HapticPattern(fileAt: pattern(#"""
            { "Event": { "Time": 0, "EventType": "HapticContinuous", "EventDuration": 1,
                "EventParameters": [ { "ParameterID": "AttackTime", "ParameterValue": 0.5 } ] } }
            """#)).vibrationPattern
        let steps = try #require(rising?.steps)
        #expect(steps.reduce(0) { $0 + $1.duration } == 1_000)
        #expect(steps.last == .init(duration: 508, intensity: 1))
        #expect(steps.count == 33, "\(steps.map(\.intensity))")
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.intensity < $1.intensity })
        // Sounds alone do not vibrate.
        #expect(try HapticPattern(fileAt: pattern(#"{ "Event": { "Time": 0, "EventType": "AudioCustom", "EventWaveformPath": "x.wav" } }"#)).vibrationPattern == nil)
    }

    /// A hostile pattern (4,088 held events on top of one another, 60 s, 8 curves of 1,024 points)
    /// is drawn and mapped in bounded time.
    @Test func theMostAPatternMayHoldIsDrawnInBoundedTime() throws {
        let held = #"{"Event":{"Time":0,"EventType":"HapticContinuous","EventDuration":60,"EventParameters":[{"ParameterID":"AttackTime","ParameterValue":30}]}}"#
        let points = (0..<1_024).map { #"{"Time":\#(Double($0) * 0.05),"ParameterValue":\#($0 % 2)}"# }.joined(separator: ",")
        let curve = #"{"ParameterCurve":{"ParameterID":"HapticIntensityControl","Time":0,"ParameterCurveControlPoints":[\#(points)]}}"#
        let path = pattern((Array(repeating: held, count: 4_088) + Array(repeating: curve, count: 8)).joined(separator: ","))
        let started = MonotonicClock.now
        let read = try HapticPattern(fileAt: path)
        _ = Lanes(pattern: read, columns: 400)
        #expect(read.vibrationPattern != nil)
        // Not a speed figure: a guard against a hostile file holding the command for minutes.
        #expect(MonotonicClock.now - started < 30, "took \(MonotonicClock.now - started) s")
    }

    @Test func checkAndShowAnswerWithExitCodes() throws {
        let path = write(Self.heartbeat)
        let checked = feedbackctl("haptics", "check", path)
        #expect(checked.status == 0, "\(checked.errors)")
        #expect(checked.output == "\(path): 1.00 s, 2 haptic events, 1 sound, 2 curves\n")
        #expect(checked.errors.contains("sharpness is drawn but not felt"))
        let shown = feedbackctl("haptics", "show", "--width", "16", path)
        #expect(shown.output.hasSuffix("intensity │█       ▄▄▄▄▂▂▂▂│\nsharpness │▄       ▄▄▃▃▂▂▁▁│\nsound     │    ████        │\n           0 s       1.00 s\n"), "\(shown.output)")
        let json = feedbackctl("haptics", "show", "--json", "--width", "16", path)
        #expect(json.output.contains(#""valid":true"#) && json.output.contains(#""intensity":"█       ▄▄▄▄▂▂▂▂""#), "\(json.output)")
        let bad = feedbackctl("haptics", "check", pattern(#"{ "Event": { "Time": 0, "EventType": "HapticBuzz" } }"#))
        #expect(bad.status == 65)
        #expect(bad.errors.contains("Pattern[0].Event.EventType 'HapticBuzz'"), "\(bad.errors)")
        #expect(feedbackctl("haptics", "check", directory.file("missing.ahap")).status == 66)
        #expect(feedbackctl("haptics", "check", directory.path).status == 66)
        #expect(feedbackctl("haptics", "dance", path).status == 64)
        #expect(feedbackctl("haptics", "show", "--width", "8", path).status == 64)
    }

    /// Our own form through the command: counted, drawn with its lights lane, and its lights
    /// played on the LEDs of a sysfs tree (put back after); a light no LED shows is a warning.
    @Test func ourFormIsCheckedDrawnAndItsLightsPlayed() throws {
        let path = write(
            #"""
            { "events": [ { "type": "transient", "time": 0 },
                          { "type": "light", "time": 0, "duration": 0.5, "color": "red" },
                          { "type": "light", "time": 0.5, "duration": 0.5, "color": "blue" } ] }
            """#, "lights.json")
        let checked = feedbackctl("haptics", "check", path)
        #expect(checked.status == 0 && checked.output == "\(path): 1.00 s, 1 haptic event, 0 sounds, 0 curves, 2 lights\n", "\(checked.output) \(checked.errors)")
        let shown = feedbackctl("haptics", "show", "--width", "16", path)
        #expect(
            shown.output.hasSuffix(
                "intensity │█               │\nsharpness │▄               │\nsound     │                │\nlight     │RRRRRRRRBBBBBBBB│\n           0 s       1.00 s\n"),
            "\(shown.output)")
        let json = feedbackctl("haptics", "show", "--json", "--width", "16", path)
        #expect(json.output.contains(#""light":"RRRRRRRRBBBBBBBB""#) && json.output.contains(#""lights":2"#), "\(json.output)")

        let tree = FakeSysfs()
        try tree.add("red:status", triggers: "[none] timer", udev: ["FEEDBACKD_TYPE": "led"])
        let lightsOnly = write(
            #"{ "events": [ { "type": "light", "time": 0, "duration": 0.2, "color": "red" }, { "type": "light", "time": 0, "duration": 0.2, "color": "green" } ] }"#,
            "only.json")
        let played = feedbackctl("haptics", "play", "--json", "--sysfs-root", tree.root, lightsOnly)
        #expect(played.status == 0, "\(played.errors)")
        #expect(played.output.contains(#""lights":"unavailable""#) && played.output.contains(#""sound":"none""#), "\(played.output)")
        #expect(played.errors.contains("a light of the pattern is not shown") && played.errors.contains("green"), "\(played.errors)")
        #expect(tree.read("red:status", "brightness") == "0" && tree.read("red:status", "trigger") == "none", "put back")
        let red = write(#"{ "events": [ { "type": "light", "time": 0, "duration": 0.2, "color": "red" } ] }"#, "red.json")
        let lit = feedbackctl("haptics", "play", "--json", "--sysfs-root", tree.root, red)
        #expect(lit.status == 0 && lit.output.contains(#""lights":"finished""#) && lit.errors.isEmpty, "\(lit.output) \(lit.errors)")
        #expect(feedbackctl("haptics", "check", "--sysfs-root", tree.root, red).status == 64, "an option of play")
    }
}

/// The sound lane of a pattern: its steps (`HapticPattern.soundSteps`), rendered sample-exactly
/// mixed once (`HapticPatternSounds.mix`), rendered into a file (`haptics play --output`), and played on a real server.
extension HapticsCommandTests {
    /// Two constant sounds (exact to compare): `a.wav` 0.1 s at 0.25, `b.wav` 0.2 s at 0.4; `a`
    /// at 0.1 s (half volume, hard left), `b` at 0.3 s under a volume curve falling from 1 at
    /// 0.35 s to 0.5 at 0.45 s, and `a` again at 0.6 s cut after 0.05 s.
    func soundLane() throws -> String {
        for (name, level, seconds) in [("a.wav", Float(0.25), 0.1), ("b.wav", Float(0.4), 0.2)] {
            let buffer = try SoundDecoder().decode(
                samples: [Float](repeating: level, count: Int(seconds * 48_000)), sampleRate: 48_000, channelCount: 1)
            try SoundFileWriter.write(buffer, to: directory.file(name), format: .wavFloat)
        }
        return pattern(
            #"""
            { "Event": { "Time": 0.1, "EventType": "AudioCustom", "EventWaveformPath": "a.wav",
                "EventParameters": [ { "ParameterID": "AudioVolume", "ParameterValue": 0.5 },
                                     { "ParameterID": "AudioPan", "ParameterValue": -1 } ] } },
            { "Event": { "Time": 0.3, "EventType": "AudioCustom", "EventWaveformPath": "b.wav" } },
            { "Event": { "Time": 0.6, "EventType": "AudioCustom", "EventWaveformPath": "a.wav", "EventDuration": 0.05 } },
            { "ParameterCurve": { "ParameterID": "AudioVolumeControl", "Time": 0.35,
                "ParameterCurveControlPoints": [ { "Time": 0, "ParameterValue": 1 }, { "Time": 0.1, "ParameterValue": 0.5 } ] } }
            """#)
    }

    /// Steps as text, times to the microsecond, so that 0.35 + 0.1 reads as 0.45.
    func describe(_ steps: [HapticPattern.SoundStep]) -> [String] {
        func time(_ value: Double) -> String { String(Int((value * 1_000_000).rounded())) }
        return steps.map { step in
            let action =
                switch step.action {
                case .start(.file(let path), let volume, let pan): "start \(path.split(separator: "/").last!) \(volume) \(pan)"
                case .start(let sound, let volume, let pan): "start \(sound) \(volume) \(pan)"
                case .volume(let volume, let ramp): "volume \(volume) over \(time(ramp))"
                case .pan(let pan, let ramp): "pan \(pan) over \(time(ramp))"
                case .stop: "stop"
                }
            return "\(time(step.time)) #\(step.sound) \(action)"
        }
    }

    @Test func theSoundLaneIsStepsInTimeOrder() throws {
        let read = try HapticPattern(fileAt: try soundLane())
        let sounds = try HapticPatternSounds(pattern: read)
        #expect(describe(sounds.steps) == [
            "100000 #0 start a.wav 0.5 -1.0",
            "300000 #1 start b.wav 1.0 0.0",
            "350000 #1 volume 0.5 over 100000",
            "600000 #2 start a.wav 0.5 0.0",
            "650000 #2 stop",
        ])
        // A Parameter is a step where it starts: a sound playing across it follows at once.
        let stepped = try HapticPattern(fileAt: pattern(#"""
            { "Event": { "Time": 0.3, "EventType": "AudioCustom", "EventWaveformPath": "b.wav" } },
            { "Parameter": { "ParameterID": "AudioPanControl", "Time": 0.4, "ParameterValue": 0.5 } }
            """#))
        #expect(describe(try HapticPatternSounds(pattern: stepped).steps) == [
            "300000 #0 start b.wav 1.0 0.0",
            "400000 #0 pan 0.5 over 0",
        ])
    }

    @Test func theSoundLaneRendersSampleExactly() throws {
        let path = try soundLane()
        let sounds = try HapticPatternSounds(pattern: try HapticPattern(fileAt: path))
        let mix = try #require(sounds.mix)
        #expect(mix.channelCount == 2 && mix.sampleRate == 48_000)
        let samples = mix.samples
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let right = stride(from: 1, to: samples.count, by: 2).map { samples[$0] }
        // a, half volume, hard left: from frame 4,800 (0.1 s) for 4,800 frames.
        #expect(left[4_799] == 0 && left[4_800] == 0.125 && left[9_599] == 0.125 && left[9_600] == 0)
        #expect(right[4_800..<9_600].allSatisfy { $0 == 0 })
        // b from 0.3 s, full until the curve at 0.35 s, then down a line to half at 0.45 s.
        #expect(left[14_399] == 0 && left[14_400] == 0.4 && left[16_799] == 0.4 && right[15_000] == 0.4)
        #expect(abs(left[19_200] - 0.3) < 1e-4, "half-way down the curve: \(left[19_200])")
        #expect(abs(left[21_700] - 0.2) < 1e-6 && abs(left[23_999] - 0.2) < 1e-6 && left[24_000] == 0)
        // a again at 0.6 s, the curve's last value holding (half), cut at 0.65 s.
        #expect(left[28_800] == 0.125 && right[28_800] == 0.125 && left[31_199] == 0.125)
        #expect(left.dropFirst(31_200 + 480).allSatisfy { $0 == 0 }, "silent 10 ms after the cut")
        #expect(left.count <= 31_200 + 480, "the file ends with the cut sound: \(left.count) frames")

        // The command writes the same render (16-bit here: within a step of it).
        let wav = directory.file("lane.wav")
        let played = feedbackctl("haptics", "play", "--json", "--output", wav, path)
        #expect(played.status == 0, "\(played.errors)")
        #expect(played.output.contains(#""sound":"rendered""#) && played.output.contains(#""vibration":"none""#), "\(played.output)")
        let written = try SoundDecoder(maximumDuration: nil).decode(fileAt: wav).buffer.samples
        #expect(written.count == samples.count && zip(written, samples).allSatisfy { abs($0 - $1) <= 1.0 / 32_768 })
    }

    /// The library's way to play a pattern (`FeedbackManager.play(hapticPatternAt:)`, the
    /// service's `PlayPattern`): the alert it makes of each kind of pattern, and its errors. (Played
    /// on a real server: SystemSoundsTests.playPatternPlaysTheSoundsAsOnePlay.)
    @Test func aPatternIsOneAlert() throws {
        let manager = FeedbackManager(registry: SoundRegistry(), vibrator: .none, settings: FeedbackSettings(path: nil))
        let lane = try soundLane()
        let sounds = try manager.resolve(hapticPatternAt: lane, maximumDecodedSeconds: 30)
        #expect(sounds.type == .audioOnly && sounds.sound.alert == .file(lane))
        #expect(sounds.sound.buffer?.samples == (try HapticPatternSounds(pattern: try HapticPattern(fileAt: lane))).mix?.samples)
        let beat = try SoundDecoder().decode(samples: [Float](repeating: 0.5, count: 4_800), sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(beat, to: directory.file("beat.wav"), format: .wavFloat)
        let tapped = try manager.resolve(hapticPatternAt: write(Self.heartbeat, "heartbeat.ahap"), maximumDecodedSeconds: 30)
        let heartbeat = try HapticPattern(fileAt: directory.file("heartbeat.ahap"))
        #expect(tapped.type == .audioAndVibrate && tapped.vibration == heartbeat.vibrationPattern)
        let tap = try manager.resolve(
            hapticPatternAt: write(#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticTransient" } } ] }"#, "tap.ahap"),
            maximumDecodedSeconds: 30)
        #expect(tap.type == .vibrateOnly)
        #expect(throws: FeedbackError.self) { try manager.resolve(hapticPatternAt: directory.file("none.ahap"), maximumDecodedSeconds: 30) }
        do {
            _ = try manager.resolve(hapticPatternAt: write(#"{ "Version": 1.0, "Pattern": [ ] }"#, "empty.ahap"), maximumDecodedSeconds: 30)
            Issue.record("an empty pattern was played")
        } catch {
            #expect(error.description.contains("no events"), "\(error)")
        }
        do {
            _ = try manager.resolve(hapticPatternAt: lane, maximumDecodedSeconds: 0.25)
            Issue.record("the bound on decoded audio was not kept")
        } catch {
            #expect(error.description.contains("of audio together"), "\(error)")
        }
    }

    @Test func playRefusesWhatItCannotPlay() throws {
        let lane = try soundLane()
        #expect(feedbackctl("haptics", "check", "--output", directory.file("x.wav"), lane).status == 64)
        #expect(feedbackctl("haptics", "play", "--width", "20", "--output", directory.file("x.wav"), lane).status == 64)
        let missing = feedbackctl(
            "haptics", "play", "--output", directory.file("x.wav"),
            pattern(#"{ "Event": { "Time": 0, "EventType": "AudioCustom", "EventWaveformPath": "nowhere.wav" } }"#))
        #expect(missing.status == 66 && missing.errors.contains(directory.file("nowhere.wav")), "\(missing.errors)")
        _ = FileManager.default.createFile(atPath: directory.file("noise.wav"), contents: Data("not a sound".utf8))
        let corrupt = feedbackctl(
            "haptics", "play", "--output", directory.file("x.wav"),
            pattern(#"{ "Event": { "Time": 0, "EventType": "AudioCustom", "EventWaveformPath": "noise.wav" } }"#))
        #expect(corrupt.status == 65 && corrupt.errors.contains("noise.wav"), "\(corrupt.errors)")
        let silent = feedbackctl(
            "haptics", "play", "--output", directory.file("x.wav"),
            pattern(#"{ "Event": { "Time": 0, "EventType": "HapticTransient" } }"#))
        #expect(silent.status == 65 && silent.errors.contains("has no sounds"), "\(silent.errors)")
        #expect(access(directory.file("x.wav"), F_OK) != 0, "nothing was written")
    }
}

/// `feedbackctl haptics play` live, on a PulseAudio server of its own whose null sink's monitor
/// is recorded: the lane's sounds reach it at their times, levels and pans, as one stream.
@Suite(.serialized) struct HapticsPlayServerTests {
    let directory = TemporaryDirectory()

    @Test func theSoundsPlayAtTheirTimesAndAloneWithNoVibrator() throws {
        let server = try PulseAudioTestServer.shared(named: "cli-haptics")
        defer { PulseAudioTestServer.shutDownShared(named: "cli-haptics") }
        let lane = HapticsCommandTests(directory: directory)
        var path = try lane.soundLane()
        // The same lane with a tap at its start: the vibration part, which no vibrator here plays.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        path = lane.write(
            text.replacingOccurrences(
                of: #""Pattern": [ "#, with: #""Pattern": [ { "Event": { "Time": 0, "EventType": "HapticTransient" } }, "#),
            "tapped.ahap")
        mkdir(directory.file("input"), 0o755)
        mkdir(directory.file("config"), 0o755)
        let mark = server.recorder.frameCount
        let played = runProcess(
            feedbackctlBinary, ["haptics", "play", "--json", "--input-dir", directory.file("input"), path],
            environment: ["PULSE_SERVER=\(server.server)", "XDG_CONFIG_HOME=\(directory.file("config"))"])
        #expect(played.status == 0, "\(played.errors)")
        #expect(played.errors.contains("the sounds play alone"), "\(played.errors)")
        #expect(
            played.output.contains(#""sound":"finished""#) && played.output.contains(#""vibration":"unavailable""#),
            "\(played.output)")
        let onset = try #require(server.recorder.firstSound(after: mark, threshold: 0.05, timeout: 5), "\(server.recorder.heard(after: mark))")
        let left = server.recorder.channel(0, from: onset, frames: 0..<30_000)
        let right = server.recorder.channel(1, from: onset, frames: 0..<30_000)
        /// The mean of `samples` over 1,000 frames from `frame` (past the edges the monitor rounds).
        func level(_ samples: [Float], _ frame: Int) -> Float { samples[frame..<frame + 1_000].reduce(0, +) / 1_000 }
        // a, half volume, hard left, at 0 (the pattern's 0.1 s); b 0.2 s later, centred, at 0.4
        // until its curve; a again 0.5 s after the first, centred at half volume.
        #expect(abs(level(left, 200) - 0.125) < 0.01 && abs(level(right, 200)) < 0.01, "\(level(left, 200)) \(level(right, 200))")
        #expect(abs(level(left, 4_900)) < 0.01, "a ended after 0.1 s: \(level(left, 4_900))")
        #expect(abs(level(left, 9_700) - 0.4) < 0.01 && abs(level(right, 9_700) - 0.4) < 0.01, "\(level(left, 9_700))")
        #expect(abs(level(left, 24_200) - 0.125) < 0.01 && abs(level(right, 24_200) - 0.125) < 0.01, "\(level(left, 24_200))")
        // b's onset is 0.2 s (9,600 frames) after a's, to within a frame: one stream keeps the timing.
        let bOnset = try #require(left[9_000..<10_200].firstIndex { $0 > 0.3 })
        #expect(abs(bOnset - 9_600) <= 1, "b began \(bOnset - 9_600) frames off its time")
    }
}
