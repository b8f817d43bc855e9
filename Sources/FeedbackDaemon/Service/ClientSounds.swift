import FeedbackBus
import FeedbackServices

/// The sounds `SystemSounds1` clients registered: `RegisterFD`'s, in the manager's registry's
/// service range (2,000,000,000 and up), each its client's own — only it may play, change or
/// unregister one, and its sounds are disposed when it leaves the bus — within each client's
/// count and bytes; and the persistent registry (registry.json) that `Register`, `Unregister`,
/// `SetVolume` and `ListSounds` reach for every client.
///
/// Thread safety: the table is behind a lock; `register(descriptor:name:client:)` runs on a
/// thread of its own (it decodes), the rest on the bus thread.
final class ClientSounds: Sendable {
    private struct Sound {
        var client: String
        var name: String
        var bytes: Int
    }

    private let manager: FeedbackManager
    private let limits: SystemSoundsService.Limits
    /// Whether the service is stopping: a sound decoded meanwhile is not kept.
    private let isStopping: @Sendable () -> Bool
    private let sounds = Lock<[SystemSoundID: Sound]>([:])

    /// The sounds of `manager`'s registry, within `limits`.
    init(manager: FeedbackManager, limits: SystemSoundsService.Limits, isStopping: @escaping @Sendable () -> Bool) {
        self.manager = manager
        self.limits = limits
        self.isStopping = isStopping
    }

    /// Who registered service-range sound `id`; nil: nobody (or it is gone).
    func owner(of id: SystemSoundID) -> String? {
        sounds.withLock { $0[id]?.client }
    }

    /// `Register`: the file at the absolute `path` in the persistent registry.
    func register(path: String) throws(BusError) -> UInt32 {
        guard path.hasPrefix("/") else {
            throw .invalidArgs("'\(path.prefix(256))' is relative: the service's working directory is not the caller's")
        }
        guard let file = manager.registry.persistentRegistry else {
            throw .failed("the service has no persistent registry (neither XDG_DATA_HOME nor HOME is set)")
        }
        do {
            return try file.register(fileAt: path, decoder: manager.registry.decoder).id
        } catch {
            throw SystemSoundsService.refusal(.registry(error))
        }
    }

    /// `RegisterFD`: the sound read from `descriptor` (a regular file, from its start), `client`'s
    /// own under `name`.
    func register(descriptor: Int32, name: String, client: String) throws(BusError) -> UInt32 {
        guard name.utf8.count <= RequestBounds.maximumNameLength else {
            throw .invalidArgs("a name has at most \(RequestBounds.maximumNameLength) bytes")
        }
        guard let fileSize = try? System.regularFileSize(descriptor) else {
            throw .invalidArgs("the file descriptor is not a regular file")
        }
        guard fileSize <= limits.fileBytes else {
            throw .limitsExceeded("file bytes: the file has \(fileSize) bytes, more than \(limits.fileBytes)")
        }
        let (count, bytes) = held(by: client)
        guard count < limits.soundsPerClient else {
            throw .limitsExceeded("sounds per client: client \(client) has \(count) registered, the most one client may have")
        }
        guard bytes < limits.bytesPerClient else {
            throw .limitsExceeded("bytes per client: client \(client) holds \(bytes) bytes, the most one client may hold")
        }
        // The descriptor, opened again: the decoder checks it and reads it from its start, whatever
        // the caller's file offset.
        let id: SystemSoundID
        do {
            id = try manager.registry.register(fileAt: "/proc/self/fd/\(descriptor)")
        } catch {
            throw SystemSoundsService.refusal(.registry(error))
        }
        let size = (manager.registry.sound(id)?.byteCount) ?? 0
        let admitted = sounds.withLock { sounds in
            let held = sounds.values.lazy.filter { $0.client == client }.map(\.bytes).reduce(0, +)
            guard held + size <= limits.bytesPerClient, !isStopping() else { return false }
            sounds[id] = Sound(client: client, name: name, bytes: size)
            return true
        }
        guard admitted else {
            try? manager.registry.dispose(id)
            throw .limitsExceeded(
                "bytes per client: client \(client) would hold \(bytes + size) bytes, more than \(limits.bytesPerClient)")
        }
        return id
    }

    /// How many `RegisterFD` sounds `client` has, and their bytes.
    private func held(by client: String) -> (count: Int, bytes: Int) {
        sounds.withLock { sounds in
            let own = sounds.values.filter { $0.client == client }
            return (own.count, own.map(\.bytes).reduce(0, +))
        }
    }

    /// Checks that `id` is a sound `client` may change: its own, or the persistent registry's.
    private func checkOwner(_ id: SystemSoundID, client: String) throws(BusError) {
        switch SoundIDRange(id) {
        case .service:
            guard let owner = owner(of: id) else {
                throw BusError(name: SystemSounds1.ErrorName.noSuchSound, message: "no sound \(id) is registered with this service")
            }
            guard owner == client else { throw .accessDenied("sound \(id) belongs to another client") }
        case .persistent:
            return
        default:
            throw .invalidArgs("\(id) is not a registered sound ID (\(SoundIDRange(id)))")
        }
    }

    /// `Unregister`: removes `client`'s own sound `id`, or one of the persistent registry.
    func unregister(_ id: SystemSoundID, client: String) throws(BusError) {
        try checkOwner(id, client: client)
        if SoundIDRange(id) == .service {
            sounds.withLock { _ = $0.removeValue(forKey: id) }
            try? manager.registry.dispose(id)
            return
        }
        guard let file = manager.registry.persistentRegistry else {
            throw BusError(name: SystemSounds1.ErrorName.noSuchSound, message: "the service has no persistent registry")
        }
        do {
            try file.unregister(id)
        } catch {
            throw SystemSoundsService.refusal(.registry(error))
        }
    }

    /// `SetVolume`: re-registers sound `id` at `level` (0…4; a persistent one in the registry file).
    func setVolume(_ level: Double, for id: SystemSoundID, client: String) throws(BusError) {
        guard VolumeLimit.range.contains(Float(level)) else {
            throw .invalidArgs("level \(level): from 0 to \(VolumeLimit.maximum)")
        }
        try checkOwner(id, client: client)
        do {
            try manager.setVolume(Float(level), for: id)
        } catch {
            throw SystemSoundsService.refusal(.registry(error))
        }
    }

    /// `ListSounds`: (id, path or name, seconds) for the persistent registry and `client`'s own.
    func list(client: String) throws(BusError) -> BusValue {
        var rows: [[BusValue]] = []
        if let file = manager.registry.persistentRegistry {
            do {
                for sound in try file.sounds() {
                    rows.append([.uint32(sound.id), .string(sound.path), .double(sound.duration)])
                }
            } catch {
                throw SystemSoundsService.refusal(.registry(error))
            }
        }
        let own = sounds.withLock { $0.filter { $0.value.client == client } }
        for (id, sound) in own.sorted(by: { $0.key < $1.key }) {
            let duration = manager.registry.sound(id)?.duration ?? 0
            rows.append([.uint32(id), .string(sound.name), .double(duration)])
        }
        return .structures(signature: "usd", rows)
    }

    /// A client left: its own sounds are disposed (a play of one keeps its samples to its end).
    func clientLeft(_ client: String) {
        let gone = sounds.withLock { sounds in
            let own = sounds.filter { $0.value.client == client }.map(\.key)
            for id in own { sounds[id] = nil }
            return own
        }
        for id in gone { try? manager.registry.dispose(id) }
    }
}
