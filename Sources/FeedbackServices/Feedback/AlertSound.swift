/// What an alert plays: a sound ID, a sound theme event, or a sound file. A value; safe to share
/// across threads.
///
/// This is what every way into FeedbackServices names a sound with — `FeedbackManager.play`,
/// `feedbackctl fire`, the session service — and `FeedbackManager.resolve(_:)` is the one place
/// where it becomes samples.
public enum AlertSound: Sendable, Hashable, CustomStringConvertible {
    /// A sound ID (`SystemSoundID`): a system sound (1000…1351, looked up in the sound theme
    /// through `SystemSoundCatalog`), an ID that only vibrates (4095, 1011, …), a sound of the
    /// persistent registry (4097…999,999) or one registered in this process.
    case id(SystemSoundID)
    /// A sound theme event name, such as `message-new-instant`, looked up in the sound theme.
    case event(String)
    /// A sound file, decoded with the registry's decoder (so the 30 s limit applies).
    case file(String)

    /// "sound 1007", "event message-new-instant", "file /path/ding.oga".
    public var description: String {
        switch self {
        case .id(let id): "sound \(id)"
        case .event(let name): "event \(name)"
        case .file(let path): "file \(path)"
        }
    }

    /// The sound ID, for `.id`.
    public var soundID: SystemSoundID? {
        if case .id(let id) = self { id } else { nil }
    }

    /// Whether it is an ID that vibrates instead of playing a sound (`kSystemSoundID_Vibrate`, 1011,
    /// …; `SystemSoundCatalog`), known without looking anything up: such IDs vibrate whatever the
    /// feedback type, as on an iPhone.
    public var vibratesOnly: Bool {
        guard let id = soundID, case .vibrate? = try? SystemSoundCatalog.action(for: id) else { return false }
        return true
    }
}

/// What an `AlertSound` was found to be: the samples to play, or why there are none to play, and
/// where they came from. A value; safe to share across threads.
public struct ResolvedAlertSound: Sendable {
    /// What plays.
    public enum Content: Sendable {
        /// These samples, at the registry decoder's rate.
        case sound(PCMBuffer)
        /// The sound theme disables the event on purpose (a `.disabled` file): nothing plays.
        case disabledByTheme
        /// The ID vibrates instead of playing a sound (`kSystemSoundID_Vibrate`, 1011, …).
        case vibrationOnly
    }

    /// What was asked for.
    public let alert: AlertSound
    /// The theme event looked up, for system sounds and events.
    public let event: String?
    /// The file that plays (or, for a disabled event, the `.disabled` file); nil for in-memory
    /// sounds and IDs that only vibrate.
    public let file: String?
    /// What plays.
    public let content: Content

    /// The samples, if there is a sound to play.
    public var buffer: PCMBuffer? {
        if case .sound(let buffer) = content { buffer } else { nil }
    }

    /// The sound's length in seconds, if there is a sound to play.
    public var duration: Double? { buffer?.duration }
}

/// Turns `AlertSound`s into samples: the catalog and the sound theme for system sounds and events,
/// the registry for registered IDs, the decoder for files. Theme and file sounds are decoded once and
/// kept while their file is unchanged (within a byte budget); registered sounds are kept by the
/// registry.
///
/// Thread safety: every method may be called from any thread; decoding runs outside any lock.
struct AlertSoundResolver: Sendable {
    /// The bytes of decoded theme and file sounds kept (32 MiB: every sound of a theme, many times over).
    static let cacheLimit = 32 << 20

    let registry: SoundRegistry
    /// Decoded theme and file sounds by path.
    let decoded = DecodedSoundCache<String, PCMBuffer>(byteLimit: cacheLimit)
    /// Decoded theme and file sounds kept between processes; nil for none.
    let store: DecodedSoundStore?

    init(registry: SoundRegistry, store: DecodedSoundStore? = .standard()) {
        self.registry = registry
        self.store = store
    }

    /// Finds and decodes the sound `alert` names, looking system sounds and events up with `themes`.
    /// - Throws: `FeedbackError`: `.catalog` for a system sound ID with no sound assigned,
    ///   `.invalidName` for an event name that could escape the theme directories, `.theme` for an
    ///   event no theme has, `.registry` for a registered ID the registry cannot give (unknown, or
    ///   its file cannot be decoded), `.sound` for a theme's or a named file that cannot be decoded.
    func resolve(_ alert: AlertSound, themes: () throws(SoundThemeError) -> SoundThemeResolver) throws(FeedbackError)
        -> ResolvedAlertSound
    {
        switch alert {
        case .id(let id) where [.system, .vibrate, .unassigned].contains(SoundIDRange(id)):
            let action: SystemSoundAction
            do {
                action = try SystemSoundCatalog.action(for: id)
            } catch {
                throw .catalog(error)
            }
            switch action {
            case .vibrate:
                return ResolvedAlertSound(alert: alert, event: nil, file: nil, content: .vibrationOnly)
            case .play(let sound):
                return try themed(alert, event: sound.event, lookup: resolver(themes).resolve(sound))
            }
        case .id(let id):
            let sound: RegisteredSound
            do {
                sound = try registry.lookup(id)
            } catch {
                throw .registry(error)
            }
            let file: String? = if case .file(let path) = sound.source { path } else { nil }
            return ResolvedAlertSound(alert: alert, event: nil, file: file, content: .sound(sound.buffer))
        case .event(let name):
            let themes = try resolver(themes)
            let lookup: SoundLookupResult
            do {
                lookup = try themes.resolve(name)
            } catch {
                throw .invalidName(error)
            }
            return try themed(alert, event: name, lookup: lookup)
        case .file(let path):
            return ResolvedAlertSound(alert: alert, event: nil, file: path, content: .sound(try decode(path)))
        }
    }

    private func resolver(_ themes: () throws(SoundThemeError) -> SoundThemeResolver) throws(FeedbackError)
        -> SoundThemeResolver
    {
        do throws(SoundThemeError) {
            return try themes()
        } catch {
            throw .invalidName(error)
        }
    }

    private func themed(_ alert: AlertSound, event: String, lookup: SoundLookupResult) throws(FeedbackError)
        -> ResolvedAlertSound
    {
        switch lookup {
        case .notFound(let failure):
            throw .theme(failure.description)
        case .disabled(let file):
            return ResolvedAlertSound(alert: alert, event: event, file: file.path, content: .disabledByTheme)
        case .resolved(let file):
            return ResolvedAlertSound(alert: alert, event: event, file: file.path, content: .sound(try decode(file.path)))
        }
    }

    /// The file at `path` decoded, from the cache while the file is unchanged: this process's,
    /// else the store on disk (`DecodedSoundStore`), which a decoding adds to.
    private func decode(_ path: String) throws(FeedbackError) -> PCMBuffer {
        let stamp = FileStamp(path: path)
        if let buffer = decoded.value(for: path, stamp: stamp) { return buffer }
        let decoder = registry.decoder
        // The store holds sounds of a bounded length only, as a decoder with a limit makes them.
        let maximumFrames = decoder.maximumDuration.map { Int($0 * Double(decoder.sampleRate)) + 1 }
        let buffer: PCMBuffer
        if let stamp, let store, let maximumFrames,
            let stored = store.read(path, stamp: stamp, sampleRate: decoder.sampleRate, maximumFrames: maximumFrames)
        {
            buffer = stored
        } else {
            do {
                buffer = try decoder.decode(fileAt: path).buffer
            } catch {
                throw .sound(error)
            }
            if let stamp, let store, maximumFrames != nil { store.write(buffer, for: path, stamp: stamp) }
        }
        decoded.insert(buffer, for: path, stamp: stamp, bytes: buffer.samples.count * MemoryLayout<Float>.size)
        return buffer
    }
}
