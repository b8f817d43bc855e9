import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

/// Tests/AudioToolboxPackage's programs, as `scripts/test` builds them.
enum AudioToolboxPackage {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// The same sources in the Swift 5 and in the Swift 6 language mode.
    static let programs = ["ios-sounds-swift5", "ios-sounds-swift6"]
    static func binary(_ program: String) -> String {
        packageRoot.appendingPathComponent(".build/audiotoolbox-package/debug/\(program)").path
    }
    static var built: Bool { programs.allSatisfy { FileManager.default.isExecutableFile(atPath: binary($0)) } }
    static let notBuilt =
        "Tests/AudioToolboxPackage is not built: swift build --package-path Tests/AudioToolboxPackage --scratch-path .build/audiotoolbox-package"
}

extension AudioServerSuites {
    /// Code written for iOS's System Sound Services, built unchanged against the `AudioToolbox`
    /// product (Tests/AudioToolboxPackage, in the Swift 5 and the Swift 6 language mode), run as
    /// its own process at a private PulseAudio server: what it prints says each call's result,
    /// and the server's monitor says each sound was heard, in order.
    ///
    /// `scripts/test` builds the package before the tests run. Under CI=true a program that was
    /// not built is a failure; elsewhere the test is skipped with the command that builds it.
    @Suite(
        .serialized, .shutsDownSoundServers(named: ["audioToolbox"]),
        .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"),
        .enabled(if: runningInCI || AudioToolboxPackage.built, Comment(rawValue: AudioToolboxPackage.notBuilt)))
    struct AudioToolboxPackageTests {
        let directory = TemporaryDirectory()
        let rate = 48_000

        /// A chirp from `from` to `to` Hz, with 10 ms fades, written as a plain 16-bit WAV file.
        func chirp(_ name: String, seconds: Double, from: Double, to: Double) throws -> String {
            let frames = Int(seconds * Double(rate))
            let samples: [Float] = (0..<frames).map { frame in
                let t = Double(frame) / Double(rate)
                let phase = 2 * .pi * (from * t + (to - from) * t * t / (2 * seconds))
                return 0.4 * Float(min(1, t * 100, (seconds - t) * 100) * sin(phase))
            }
            let path = directory.file(name)
            try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: rate), to: path, format: .wav16)
            return path
        }

        @Test(arguments: AudioToolboxPackage.programs)
        func iOSCodeBuildsUnchangedAndIsHeard(_ program: String) throws {
            let binary = AudioToolboxPackage.binary(program)
            try #require(FileManager.default.isExecutableFile(atPath: binary), "\(AudioToolboxPackage.notBuilt)")
            // At debug level, so that a gap in the program's stream shows in the server's log.
            let server = try PulseAudioTestServer.shared(named: "audioToolbox", debugLog: true)
            let tap = try chirp("tap.wav", seconds: 0.25, from: 400, to: 1_600)
            let chime = try chirp("chime.wav", seconds: 0.35, from: 2_000, to: 700)
            let settings = TemporaryDirectory()
            let decoder = SoundDecoder()
            let expected = [
                ("tap", try decoder.decode(fileAt: tap).buffer.samples), ("chime", try decoder.decode(fileAt: chime).buffer.samples),
                ("tap", try decoder.decode(fileAt: tap).buffer.samples), ("chime", try decoder.decode(fileAt: chime).buffer.samples),
            ]

            // The suite's one retry rule (`measuredAgainAfterUnderflows`): measured again only when
            // the program's stream ran dry mid-run, which the server logs; its stream's start is
            // logged so too, once a run.
            var runs = 0
            let (run, heard) = try measuredAgainAfterUnderflows(underflows: { server.endsOfUnderrun - runs }) {
                () throws -> (ProcessResult, [(name: String, correlation: Double?)]) in
                runs += 1
                let mark = server.recorder.frameCount
                let run = runProcess(
                    binary, [tap, chime],
                    environment: [
                        "PULSE_SERVER=\(server.server)", "XDG_CONFIG_HOME=\(settings.path)", "XDG_DATA_HOME=\(settings.path)",
                    ])
                // Each play waited for its completion, so the four sounds came one after another,
                // and the last one had been played when the program ended.
                var heard: [(name: String, correlation: Double?)] = []
                var position = mark
                for (name, samples) in expected {
                    guard let onset = server.recorder.firstSound(after: position, timeout: 1) else {
                        heard.append((name, nil))
                        break
                    }
                    let start = max(mark, onset - 200)
                    let recorded = server.recorder.channel(0, from: start, frames: 0..<(samples.count + 400))
                    let match = Analysis.bestCorrelation(samples, recorded, lags: 0...400)
                    heard.append((name, match.value))
                    position = start + match.lag + samples.count
                }
                return (run, heard)
            }
            #expect(run.status == 0, "\(run.errors)")
            #expect(
                run.output == """
                    create tap: true
                    create chime: true
                    tap with completion: true
                    chime with completion routine: true
                    tap with completion function: true
                    chime as alert: true
                    vibrate: true
                    is UI sound: true 1
                    set complete playback: true
                    unknown property: true
                    dispose: true true

                    """)
            #expect(heard.count == expected.count, "heard \(heard)")
            for (index, play) in heard.enumerated() {
                let correlation = try #require(play.correlation, "play \(index + 1) (\(play.name)) was not heard")
                #expect(correlation >= 0.99, "play \(index + 1) (\(play.name)) correlates \(correlation) with its file (runs \(runs))")
            }
        }
    }
}
