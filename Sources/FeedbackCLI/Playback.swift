import Dispatch
import FeedbackServices
import Glibc
import Synchronization

/// Playing one sound from a command and waiting for it: the output the options choose, Ctrl-C
/// stopping the sound before the process exits, and errors turned into exit codes.
enum Playback {
    /// Where a command sends its sound.
    enum Destination {
        /// The engine on the PulseAudio server (the automatic choice).
        case engine
        /// libcanberra.
        case canberra
        /// A sound file, rendered faster than real time.
        case file(String)

        var isFile: Bool {
            if case .file = self { true } else { false }
        }
    }

    /// Reads the options every playing command shares: `--output FILE`, `--canberra`.
    static func destination(_ parser: inout ArgumentParser) throws(CommandError) -> Destination {
        let file = parser.value(SoundArguments.output)
        let canberra = parser.flag(SoundArguments.canberra)
        switch (file, canberra) {
        case (let path?, false): return .file(path)
        case (nil, true): return .canberra
        case (nil, false): return .engine
        case (_?, true): throw CommandError.usage("--output and --canberra cannot be used together")
        }
    }

    /// Plays `buffer` (on `pending`, an output already being opened, if given) and returns how it ended; Ctrl-C (SIGINT) or SIGTERM stop the sound first
    /// and then end the command with 130 or 143 (`Interruption`). Without `wait`, a detached copy
    /// of the command plays it (`Detach`) and this returns nil at once; rendering to a file always
    /// finishes first.
    static func play(
        _ buffer: PCMBuffer, options: PlaybackOptions, to destination: Destination, wait: Bool,
        pending: PendingOutput? = nil
    ) throws(CommandError) -> PlaybackEnd? {
        if !wait && !destination.isFile {
            _ = try Detach.relaunch()
            return nil
        }
        let output: any AudioOutput
        switch destination {
        case .file(let path):
            let file = FileOutput(path: path, format: SoundFileFormat(fileExtension: fileExtension(path)) ?? .wav16)
            let ends = Mutex<PlaybackEnd?>(nil)
            file.play(buffer, options: options) { end in ends.withLock { $0 = end } }
            do {
                try file.finish()
            } catch {
                throw CommandError(message: error.description, exitCode: .cannotCreate)
            }
            return .finished
        case .canberra:
            output = try (pending ?? PendingOutput(.canberra)).output()
        case .engine:
            output = try (pending ?? PendingOutput(.engine)).output()
        }
        try Interruption.check()
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<PlaybackEnd?>(nil)
        let handle = output.play(buffer, options: options, queue: .global()) { end in
            result.withLock { $0 = end }
            done.signal()
        }
        try Interruption.wait(for: done) { handle.stop() }
        let end = result.withLock { $0 }
        if case .failed(let error) = end {
            throw CommandError(message: error.description, exitCode: .unavailable)
        }
        return end
    }

    private static func fileExtension(_ path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return "" }
        return String(path[path.index(after: dot)...])
    }

    /// The name scripts see for how a play ended.
    static func name(of end: PlaybackEnd?) -> String {
        switch end {
        case nil: "started"
        case .finished?: "finished"
        case .stopped?: "stopped"
        case .cancelled?: "cancelled"
        case .failed?: "failed"
        }
    }
}

/// An audio output being opened on another thread while the command finds and decodes its sound:
/// connecting to the sound server and creating the stream take as long as the rest of a `fire`,
/// so doing both at once brings the first sample forward.
final class PendingOutput: Sendable {
    /// The outputs that can be opened ahead.
    enum Kind: Sendable {
        /// The engine on the PulseAudio server (`AudioOutputSelection.automatic()`).
        case engine
        /// libcanberra.
        case canberra
    }

    private let result = Mutex<Result<any AudioOutput, CommandError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts opening the output `destination` names; nil for a file, which has nothing to open.
    static func opening(_ destination: Playback.Destination) -> PendingOutput? {
        switch destination {
        case .file: nil
        case .engine: PendingOutput(.engine)
        case .canberra: PendingOutput(.canberra)
        }
    }

    /// Starts opening an output of `kind`.
    init(_ kind: Kind) {
        DispatchQueue.global(qos: .userInitiated).async {
            let opened: Result<any AudioOutput, CommandError>
            do throws(PlaybackError) {
                opened = .success(kind == .canberra ? try CanberraOutput() : try AudioOutputSelection.automatic())
            } catch {
                opened = .failure(CommandError(message: error.description, exitCode: .unavailable))
            }
            self.result.withLock { $0 = opened }
            self.done.signal()
        }
    }

    /// The output, once it is open.
    /// - Throws: `CommandError` (69) when it could not be opened, or the interruption when Ctrl-C
    ///   or SIGTERM arrives while it is being opened.
    func output() throws(CommandError) -> any AudioOutput {
        while done.wait(timeout: .now() + .milliseconds(10)) == .timedOut {
            try Interruption.check()
        }
        done.signal()
        return try result.withLock { $0 }!.get()
    }
}
