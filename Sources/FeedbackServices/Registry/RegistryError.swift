/// The error of the sound registries (`SoundRegistry`, `SoundRegistryFile`): what a registry
/// refused, or what failed beneath it.
///
/// A registry's own refusals (an unknown ID, a busy or damaged registry file, …) name `source`:
/// the registry file's path, or "sound N" for an ID of the process. What fails beneath a registry
/// keeps its own error: `.sound` when registering or looking up a sound decodes a file (the
/// `SoundError` names that file), `.file` when the registry's file, its lock or an exported file
/// cannot be read or written (the `FileError` names it). `source` and `detail` then repeat the
/// wrapped error's path and message, so `description` reads as it would.
public struct RegistryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the registry refused, or what failed beneath it.
    public enum Reason: Sendable, Equatable {
        /// The ID names no sound: none was registered under it in this process, or the persistent
        /// registry has no such entry; the message says which range the ID is in.
        case unknownSoundID(UInt32)
        /// The ID is one of the persistent registry's, which a process cannot dispose of: only
        /// `SoundRegistryFile.unregister` (`feedbackctl unregister`) removes it, for every process.
        case persistentSoundID(UInt32)
        /// Every ID a registry can hand out has been used once; IDs are never reused in a process.
        case soundIDsExhausted
        /// The persistent registry file (`SoundRegistryFile`) cannot be read as one: not JSON, a
        /// format this version does not know, or entries that contradict each other. It is left
        /// exactly as it is; `detail` says what is wrong.
        case registryDamaged
        /// Another process held the persistent registry's lock for longer than the wait allowed.
        case registryBusy(waited: Double)
        /// There is no default persistent registry: neither `XDG_DATA_HOME` nor `HOME` is set.
        case noDefaultLocation
        /// The sound's loudness cannot be measured: it is silent, or has no 400 ms stretch above
        /// EBU R128's −70 LUFS gate, so it cannot be normalised.
        case loudnessUnmeasurable
        /// The sound could not be read or decoded (registering it, or decoding a persistent
        /// sound's file, which may have been moved, changed or deleted since it was registered).
        case sound(SoundError)
        /// A file could not be read or written: the registry's file or its lock, or the file a
        /// sound was exported to.
        case file(FileError)
    }

    /// Why it failed.
    public var reason: Reason
    /// The registry file's path, "sound N" for an ID of the process, or the wrapped error's path.
    public var source: String
    /// What is wrong, where there is more to say (the wrapped error's message).
    public var detail: String?

    /// Creates an error.
    public init(_ reason: Reason, source: String, detail: String? = nil) {
        self.reason = reason
        self.source = source
        self.detail = detail
    }

    /// A sound that could not be read or decoded, under its own source.
    public static func sound(_ error: SoundError) -> RegistryError {
        RegistryError(.sound(error), source: error.source, detail: error.detail)
    }

    /// A file that could not be read or written, under its own path.
    public static func file(_ error: FileError) -> RegistryError {
        RegistryError(.file(error), source: error.path, detail: error.detail)
    }

    /// A sentence naming the source and the cause, for logs and the command line.
    public var description: String {
        let summary: String
        switch reason {
        case .sound(let error): return error.description
        case .file(let error): return error.description
        case .unknownSoundID(let id):
            summary =
                switch SoundIDRange(id) {
                case .persistent: "no sound is registered as \(id) in the persistent registry"
                case .processLocal:
                    "no sound has ID \(id) in this process (\(SoundIDRange.processLocal): only the process that registered a sound can play it)"
                case .system, .vibrate: "\(id) is a system sound ID, not a registered sound"
                case .service, .unassigned: "no sound can have ID \(id) (IDs \(SoundIDRange(id)))"
                }
        case .persistentSoundID(let id):
            summary = "sound \(id) is in the persistent registry: only unregistering it there removes it (feedbackctl unregister \(id))"
        case .soundIDsExhausted: summary = "every sound ID has been used"
        case .registryDamaged: summary = "damaged sound registry; it was left untouched (repair or remove the file)"
        case .registryBusy(let waited): summary = "another process has held the registry's lock for \(formatSeconds(waited))"
        case .noDefaultLocation: summary = "no default location"
        case .loudnessUnmeasurable:
            summary = "too short or too quiet to measure its loudness (EBU R128 needs 400 ms above -70 LUFS)"
        }
        return errorSentence(source, summary, detail: detail)
    }
}

extension RegistryError {
    /// What `body` returns; a sound it could not read or decode is thrown as `.sound`.
    static func decoding<Result>(_ body: () throws(SoundError) -> Result) throws(RegistryError) -> Result {
        do {
            return try body()
        } catch {
            throw .sound(error)
        }
    }

    /// What `body` returns; a file it could not read or write is thrown as `.file`.
    static func accessing<Result>(_ body: () throws(FileError) -> Result) throws(RegistryError) -> Result {
        do {
            return try body()
        } catch {
            throw .file(error)
        }
    }
}
