import FeedbackServices

/// `feedbackctl register FILE`: give a sound file a persistent sound ID.
enum RegisterCommand: Subcommand {
    static let name = "register"
    static let abstract = "Register a sound file under a new sound ID that later runs can fire"
    static let discussion: [Paragraph] = [
        """
        The file is decoded to check that it is a sound of at most 30 s, then recorded under
        a new ID from 4097 up, which is printed. 'feedbackctl fire ID' plays it from then on,
        in any later run; the file is read again each time, so it must stay where it is. IDs
        are never reused, even after 'feedbackctl unregister'. Several processes may register
        at once. The registry is \(RegistryArguments.location)
        (~/.local/share/… without XDG_DATA_HOME), mode 0600.
        """
    ]

    static let file = Argument("FILE", .file, help: "The sound file (WAV, FLAC, Ogg Vorbis, Opus, MP3, …)")
    static let arguments = [file]

    static let volume = Option(
        "--volume", value: "X", .number, help: "Play it at X times its level, 0 to 4 (+12 dB; default 1); see 'volume'")
    static let limit = Option("--limit", help: "Limit peaks the volume pushes past full scale instead of clipping")
    static let json = Option.json(#"Print {"version", "id", "file", "duration", "volume", "registry"}"#)
    static let options = [volume, limit, json]

    static let exitStatus: String? = """
        0 registered; 64 bad argument; 65 not a usable sound (or longer than 30 s), or
        the registry file is damaged (it is left untouched); 66 no such file; 69 neither
        XDG_DATA_HOME nor HOME is set; 73 the registry cannot be written; 75 another
        process held the registry for 10 s; 77 the registry may not be opened.
        """

    static let examples = [
        #"id=$(feedbackctl register ~/sounds/ding.oga) && feedbackctl fire "$id""#,
        "feedbackctl register --volume 0.5 alarm.wav",
    ]

    /// What `--json` prints.
    struct Report: Encodable {
        let id: SystemSoundID
        let file: String
        let duration: Double
        let volume: Double
        let registry: String
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let volume = try SoundArguments.volume(parser, Self.volume)
        let limit = parser.flag(Self.limit)
        let path = parser.positionals[0]
        let registry = try RegistryArguments.registry(parser)
        let sound: PersistentSound
        do {
            sound = try registry.register(
                fileAt: path, volume: VolumeAdjustment(multiplier: volume, limiting: limit ? .peakLimiter() : .clip))
        } catch {
            throw CommandError(error)
        }
        if parser.flag(Self.json) {
            output += JSONOutput.line(
                Report(
                    id: sound.id, file: sound.path, duration: sound.duration, volume: Double(sound.volume.multiplier),
                    registry: registry.path))
        } else {
            output += "\(sound.id)\n"
        }
    }
}

/// `feedbackctl unregister ID`: remove a persistent registration.
enum UnregisterCommand: Subcommand {
    static let name = "unregister"
    static let abstract = "Remove a sound ID made by 'register'"
    static let discussion: [Paragraph] = [
        """
        The entry is removed from the registry, \(RegistryArguments.location)
        (~/.local/share/… without XDG_DATA_HOME); the sound file itself is not touched. The ID
        is not handed out again.
        """
    ]

    static let id = Argument("ID", .number, help: "A registered sound ID (4097 or above; see 'feedbackctl list')")
    static let arguments = [id]

    static let json = Option.json(#"Print {"version", "id", "file"}"#)
    static let options = [json]

    static let exitStatus: String? = """
        0 removed; 64 not a sound ID; 65 the registry file is damaged (it is left
        untouched); 66 no sound is registered under ID; 69 neither XDG_DATA_HOME nor HOME
        is set; 73 the registry cannot be written; 75 another process held the registry
        for 10 s; 77 the registry may not be opened.
        """

    /// What `--json` prints.
    struct Report: Encodable {
        let id: SystemSoundID
        let file: String
    }

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let text = parser.positionals[0]
        guard let id = SystemSoundID(text), SoundIDRange(id) == .persistent else {
            throw CommandError.usage("'\(text)' is not a registered sound ID (\(SoundIDRange.persistent))")
        }
        let registry = try RegistryArguments.registry(parser)
        let removed: PersistentSound
        do {
            removed = try registry.unregister(id)
        } catch {
            throw RegistryArguments.failure(error, id: id, registry: registry)
        }
        if parser.flag(Self.json) {
            output += JSONOutput.line(Report(id: id, file: removed.path))
        } else {
            output += "Unregistered \(id) (\(removed.path)).\n"
        }
    }
}

/// The persistent registry as the commands use it.
enum RegistryArguments {
    /// Where the registry lives, for help texts.
    static let location = "$XDG_DATA_HOME/feedbackservices/registry.json"

    /// The registry for the command's environment.
    static func registry(_ parser: ArgumentParser) throws(CommandError) -> SoundRegistryFile {
        do {
            return try SoundRegistryFile(environment: parser.environment)
        } catch {
            throw CommandError(error)
        }
    }

    /// The entry of the sound registered as `id`.
    static func entry(_ id: SystemSoundID, _ parser: ArgumentParser) throws(CommandError) -> PersistentSound {
        let registry = try registry(parser)
        do {
            return try registry.sound(id)
        } catch {
            throw failure(error, id: id, registry: registry)
        }
    }

    /// The sound registered as `id`, decoded at its volume, and its entry.
    static func decode(_ id: SystemSoundID, _ parser: ArgumentParser) throws(CommandError) -> (PersistentSound, PCMBuffer) {
        let registry = try registry(parser)
        let entry = try self.entry(id, parser)
        do {
            return (entry, try registry.decode(entry))
        } catch {
            throw failure(.sound(error), id: id, registry: registry)
        }
    }

    /// Every registered sound.
    static func sounds(_ parser: ArgumentParser) throws(CommandError) -> [PersistentSound] {
        let registry = try registry(parser)
        do {
            return try registry.sounds()
        } catch {
            throw CommandError(error)
        }
    }

    /// A registry error about `id` as the commands report it.
    static func failure(_ error: RegistryError, id: SystemSoundID, registry: SoundRegistryFile) -> CommandError {
        var failure = CommandError(error)
        if case .unknownSoundID = error.reason {
            failure.message = "no sound is registered as \(id) (see 'feedbackctl list'; the registry is \(registry.path))"
        } else if error.source != registry.path {
            failure.message = "registered sound \(id): \(error.description)"
        }
        return failure
    }
}
