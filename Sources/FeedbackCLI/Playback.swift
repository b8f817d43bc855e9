import Dispatch
import FeedbackServices
import Glibc
import Synchronization

/// Playing from a command: through a `FeedbackManager` (the library's one route for an alert) on
/// the output the options choose, or rendered into a file; waiting with Ctrl-C stopping the sound
/// before the process exits, and outcomes turned into names and exit codes.
enum Playback {
    /// Where a command sends its sound.
    enum Destination {
        /// The engine on the PulseAudio server (the automatic choice).
        case engine
        /// libcanberra.
        case canberra
        /// The engine on an ALSA PCM (`--pcm NAME`), with no sound server.
        case alsa(String)
        /// A sound file, rendered faster than real time.
        case file(String)

        var isFile: Bool {
            if case .file = self { true } else { false }
        }
    }

    /// Reads the options every playing command shares: `--output FILE`, `--canberra`, `--pcm NAME`.
    static func destination(_ parser: inout ArgumentParser) throws(CommandError) -> Destination {
        let file = parser.value(SoundArguments.output)
        let canberra = parser.flag(SoundArguments.canberra)
        let pcm = parser.value(SoundArguments.pcm)
        let chosen: [(Option, Destination)] =
            [(SoundArguments.output, file.map(Destination.file)), (SoundArguments.canberra, canberra ? .canberra : nil),
             (SoundArguments.pcm, pcm.map(Destination.alsa))]
            .compactMap { option, destination in destination.map { (option, $0) } }
        guard chosen.count <= 1 else {
            throw CommandError.usage("\(chosen.map(\.0.name).joined(separator: " and ")) cannot be used together")
        }
        if let pcm, pcm.isEmpty { throw CommandError.usage("\(SoundArguments.pcm.name) needs a PCM name") }
        // A file feedbackctl cannot write is refused before the sound is looked up and decoded.
        if let file { _ = try outputFormat(file) }
        return chosen.first?.1 ?? .engine
    }

    /// The manager a command plays through: sounds go where `destination` says (the engine, or
    /// libcanberra), opened in the background while the sound is looked up and decoded; registered
    /// IDs are looked up in the user's persistent registry; the profile is the command's
    /// environment's unless `profile` overrides it. A play starts on a thread of its own, not on
    /// Dispatch: a command plays one sound, and Dispatch starting its worker pool (three threads)
    /// competed for the CPU with the connect, on the way to the first sample. Ends still
    /// come on the global queue: never on the audio thread, where dropping the last reference to
    /// the manager would shut the output down from its own thread.
    static func manager(
        for destination: Destination, _ parser: ArgumentParser, vibrator: VibratorSource = .none,
        themes: SoundThemeResolver? = nil, profile: FeedbackProfile? = nil
    ) -> FeedbackManager {
        let manager = FeedbackManager(
            registry: SoundRegistry(persistentRegistry: try? SoundRegistryFile(environment: parser.environment)),
            openAudioOutput: opener(for: destination), vibrator: vibrator, settings: FeedbackSettings(environment: parser.environment),
            themeResolver: themes, scheduling: .threads(loop: .queue(.global())))
        manager.profileOverride = profile
        return manager
    }

    /// What opens the output `destination` plays on (a file renders on the automatic one's rate).
    static func opener(for destination: Destination) -> @Sendable () throws(PlaybackError) -> any AudioOutput {
        switch destination {
        case .canberra: { () throws(PlaybackError) in try CanberraOutput() }
        case .alsa(let device): { () throws(PlaybackError) in try AudioOutputSelection.alsa(device: device) }
        case .engine, .file: { () throws(PlaybackError) in try AudioOutputSelection.automatic() }
        }
    }

    /// Plays the sound file at `path` streamed from disk, as the library plays music
    /// (`VoiceSource.streamed(fileAt:)`): for a file longer than a system sound may be, which is
    /// never decoded whole. libcanberra has no streaming voice and would get the file decoded
    /// whole with no bound: it gets at most `FileOutput.maximumDuration` of it, as a rendering
    /// does, or the file is refused. Waits and stops as `play(_:on:type:options:)` does.
    /// - Returns: how it ended: `finished` or `stopped`.
    static func stream(fileAt path: String, on destination: Destination, options: PlaybackOptions) throws(CommandError) -> String {
        try Interruption.check()
        var source = VoiceSource.streamed(fileAt: path)
        if case .canberra = destination {
            do {
                source = .buffer(try SoundDecoder(maximumDuration: FileOutput.maximumDuration).decode(fileAt: path).buffer)
            } catch {
                throw CommandError(error)
            }
        }
        let output: any AudioOutput
        do {
            output = try opener(for: destination)()
        } catch {
            throw CommandError(error)
        }
        let done = DispatchSemaphore(value: 0)
        let end = Lock<PlaybackEnd?>(nil)
        let playback = output.play(source, from: 0, options: options, queue: .global()) { ended in
            end.withLock { $0 = ended }
            done.signal()
        }
        try Interruption.wait(for: done) { playback.stop() }
        switch end.withLock({ $0 })! {
        case .finished: return "finished"
        case .stopped, .cancelled: return "stopped"
        case .failed(let error): throw CommandError(error)
        }
    }

    /// Plays `sound` through `manager` as `type` and waits until both parts have ended. Ctrl-C
    /// (SIGINT) or SIGTERM stop it first — also while the sound server is still being connected
    /// to — and then end the command with 130 or 143 (`Interruption`).
    static func play(
        _ sound: ResolvedAlertSound, on manager: FeedbackManager, type: FeedbackType, options: PlaybackOptions
    ) throws(CommandError) -> FeedbackResult {
        try Interruption.check()
        let done = DispatchSemaphore(value: 0)
        let result = Lock<FeedbackResult?>(nil)
        let playback = manager.play(sound, type: type, options: options) { ended in
            result.withLock { $0 = ended }
            done.signal()
        }
        try Interruption.wait(for: done) { playback.stop() }
        return result.withLock { $0 }!
    }

    /// How the sound part of a play ended, as scripts see it (`finished`, `stopped`, `silenced`,
    /// `disabled`; nil when no sound was asked for).
    /// - Throws: the failure, when the sound could not be played.
    static func name(of outcome: SoundOutcome) throws(CommandError) -> String? {
        switch outcome {
        case .played: "finished"
        case .stopped: "stopped"
        case .silencedByProfile: "silenced"
        case .disabledByTheme: "disabled"
        case .notRequested: nil
        case .noAudioOutput(let error): throw CommandError(error)
        case .failed(let error): throw CommandError(error)
        }
    }

    /// Renders `buffer` into the sound file at `path` (its format from the extension; 16-bit WAV
    /// when it has none, and for `-`, standard output), faster than real time, in memory that does
    /// not grow with the file. An extension we do not write is refused, as is `-` when standard
    /// output is a terminal; so is a file over `FileOutput.maximumDuration`, all before anything
    /// is rendered. Ctrl-C or SIGTERM stops the render within a block and leaves `path` as it was
    /// (130 or 143).
    static func render(_ buffer: PCMBuffer, options: PlaybackOptions, to path: String) throws(CommandError) {
        let file = FileOutput(path: path, format: try outputFormat(path))
        var counted = options
        // `--loop N` counts plays, however many: never the library's `forever`, which a file cuts.
        counted.playCount = min(options.playCount, PlaybackOptions.forever - 1)
        file.play(buffer, options: counted)
        let length: Double?
        do {
            length = try file.finish(stoppingWhen: { Interruption.receivedSignal != nil })
        } catch {
            throw CommandError(error)
        }
        if length == nil { try Interruption.check("interrupted; the file was not written") }
    }

    /// The format of the file `--output` names.
    private static func outputFormat(_ path: String) throws(CommandError) -> SoundFileFormat {
        if path == "-" {
            guard isatty(STDOUT_FILENO) != 1 else {
                throw CommandError.usage(
                    "\(SoundArguments.output.name) - writes a WAV file to standard output, which is a terminal; "
                        + "redirect it ('> sound.wav', '| aplay') or give a file name")
            }
            return .wav16
        }
        let name = fileExtension(path)
        guard !name.isEmpty else { return .wav16 }
        guard let format = SoundFileFormat(fileExtension: name) else {
            throw CommandError.usage(
                "\(SoundArguments.output.name) \(path): feedbackctl does not write '.\(name)' files; name the file "
                    + ".wav, .rf64, .aiff, .caf, .flac, .ogg, .opus or .mp3 (a name with no extension is written as WAV)")
        }
        return format
    }

    private static func fileExtension(_ path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return "" }
        return String(path[path.index(after: dot)...])
    }
}
