import Dispatch
@testable import FeedbackServices
import FeedbackTestSupport

/// The ways the engine reaches a sound server, each a case of the engine suites: our mixer on
/// PulseAudio, the same PulseAudio output on pipewire-pulse, and PipeWire's own stream.
enum EngineRoute: String, CaseIterable, Sendable, CustomStringConvertible {
    case pulseAudio = "PulseAudioOutput on PulseAudio"
    case pulseAudioOnPipeWire = "PulseAudioOutput on pipewire-pulse"
    case pipeWire = "PipeWireOutput on PipeWire"

    /// The routes to test here: all in CI (a missing server fails there), otherwise those whose
    /// server is installed.
    static var testable: [EngineRoute] { allCases.filter { SoundServerKind.testable.contains($0.server) } }

    var description: String { rawValue }

    /// The server it plays to.
    var server: SoundServerKind { self == .pulseAudio ? .pulseAudio : .pipeWire }

    /// How much later than a frame's true arrival at this route's monitor
    /// `MonitorRecorder.arrivalTime(ofFrame:)` may place it, in seconds (an upper bound: so a
    /// completion on time may look that much early): PulseAudio's monitor reaches the recorder
    /// within 1 ms; recorded through pipewire-pulse from PipeWire's null sink, up to 6 ms late for
    /// one frame (a CI run saw a completion 7.75 ms "early" against a 5 ms allowance).
    var monitorJitter: Double { self == .pulseAudio ? 0.005 : 0.01 }

    /// The smallest graph cycle, in frames, of the PipeWire that PipeWireOutput is tested on
    /// (10.7 ms): the 2 ms cycle the recorder asks for glitched while other builds loaded the
    /// machine, though the daemon's data thread and the stream's are SCHED_FIFO here (root). pipewire-pulse keeps the default (its
    /// engine queue of 20 ms underruns at longer cycles); feedbackbench measures the default.
    static let pipeWireQuantum = 512

    /// The suite's shared server for this route, named `name`.
    func server(named name: String) throws -> any SoundTestServer {
        self == .pipeWire
            ? try PipeWireTestServer.shared(named: Self.nativeServerName(name), minimumQuantum: Self.pipeWireQuantum)
            : try server.shared(named: name)
    }

    /// The names of the servers `server(named: name)` starts on the routes: `name` for PulseAudio
    /// and pipewire-pulse, and PipeWireOutput's own (its graph forced to `pipeWireQuantum`).
    static func serverNames(_ name: String) -> [String] { [name, nativeServerName(name)] }

    private static func nativeServerName(_ name: String) -> String { "\(name)-native" }

    /// A new output on `server`, not connected yet, whose client on the server is named
    /// `applicationName`.
    func output(
        on server: any SoundTestServer, idleTimeout: Double = 10, applicationName: String = "FeedbackServices"
    ) -> any EngineOutput {
        switch self {
        case .pulseAudio, .pulseAudioOnPipeWire:
            PulseAudioOutput(
                configuration: .init(server: server.server, idleTimeout: idleTimeout, applicationName: applicationName))
        case .pipeWire:
            PipeWireOutput(
                configuration: .init(remote: server.pipeWireSocket, idleTimeout: idleTimeout, applicationName: applicationName))
        }
    }
}

extension EngineOutput {
    /// The longest a change can take to be heard: the audio queued ahead of the server.
    var queueDuration: Double {
        switch self {
        case let output as PulseAudioOutput:
            output.configuration.bufferDuration
        case let output as PipeWireOutput:
            Double(max(statistics.quantum, output.configuration.latencyFrames)) / Double(output.configuration.sampleRate) * 3
        case let output as ALSAOutput:
            Double(statistics.queuedFrames) / Double(output.configuration.sampleRate)
        default:
            preconditionFailure("not an engine route's output: \(self)")
        }
    }
}

extension EngineOutput {
    /// Plays with the completion on a global queue, as the concrete outputs' defaults do.
    @discardableResult
    func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        play(buffer, options: options, queue: .global(), completion: completion)
    }
}
