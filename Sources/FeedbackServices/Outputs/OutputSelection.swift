public import FoundationEssentials
import Dispatch
import Glibc
import Synchronization

/// Choosing where sounds go.
public enum AudioOutputSelection {
    /// The outputs `automatic()` can choose, by the name `FEEDBACKSERVICES_OUTPUT` gives them.
    public enum Kind: String, Sendable, CaseIterable {
        /// `PipeWireOutput`: the engine on PipeWire's own protocol.
        case pipeWire = "pipewire"
        /// `PulseAudioOutput`: the engine on a PulseAudio server (or pipewire-pulse).
        case pulseAudio = "pulseaudio"
        /// `ALSAOutput`: the engine on an ALSA PCM, with no sound server.
        case alsa
        /// `CanberraOutput`: libcanberra, with the desktop's own settings.
        case canberra
    }

    /// The environment variable that forces one output: `pipewire`, `pulseaudio`, `alsa` or `canberra`.
    public static let environmentVariable = "FEEDBACKSERVICES_OUTPUT"

    /// How long `automatic()` and `alsa(device:)` wait for an output to open, by default, in seconds.
    public static let defaultTimeout = 2.0

    /// After how many seconds without sound the outputs they open close, by default (they open
    /// again at the next sound).
    public static let defaultIdleTimeout = 10.0

    /// Which output `automatic()` would try first here, and why, without connecting to anything
    /// but PipeWire's socket (a connect and close: well under a millisecond).
    ///
    /// The order: `FEEDBACKSERVICES_OUTPUT` when set; PulseAudio when a PulseAudio server is named
    /// (`server`, or `PULSE_SERVER`); PipeWire when its socket (`PIPEWIRE_REMOTE`, else
    /// `$XDG_RUNTIME_DIR/pipewire-0`) takes a connection; PulseAudio otherwise. `automatic()`
    /// falls back to ALSA (`alsaDevice(environment:)`) when no sound server answers.
    /// - Returns: the kind and a sentence saying why; `nil` kind with the reason when the variable
    ///   names no known output.
    public static func choice(
        server: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (kind: Kind?, reason: String) {
        if let forced = environment[environmentVariable], !forced.isEmpty {
            guard let kind = Kind(rawValue: forced.lowercased()) else {
                let known = Kind.allCases.map(\.rawValue).joined(separator: ", ")
                return (nil, "\(environmentVariable)=\(forced) names no output (known: \(known))")
            }
            return (kind, "forced by \(environmentVariable)=\(forced)")
        }
        if let server { return (.pulseAudio, "a PulseAudio server was named (\(server))") }
        if let variable = environment["PULSE_SERVER"], !variable.isEmpty {
            return (.pulseAudio, "PULSE_SERVER names a PulseAudio server (\(variable))")
        }
        let socket = pipeWireSocket(environment: environment)
        if answers(socket) { return (.pipeWire, "a PipeWire daemon answers at \(socket)") }
        return (.pulseAudio, "no PipeWire daemon answers at \(socket)")
    }

    /// The automatic choice (see `choice(server:environment:)`), connected and ready so the first
    /// sound starts at once. When PipeWire was chosen but its stream does not start within
    /// `timeout`, the PulseAudio engine (through pipewire-pulse, say) is tried next; when no sound
    /// server answers, the engine on the ALSA PCM `alsaDevice(environment:)` names (unless
    /// `PULSE_SERVER` names the server: see the code's comment). An output
    /// forced by `FEEDBACKSERVICES_OUTPUT` is the only one tried.
    ///
    /// - Parameters:
    ///   - server: a PulseAudio server address; nil for `PULSE_SERVER`, then PipeWire, then the
    ///     user's PulseAudio socket (`$XDG_RUNTIME_DIR/pulse/native`).
    ///   - timeout: how long to wait for each output, in seconds.
    ///   - idleTimeout: seconds without sound after which the engine closes its stream (or PCM),
    ///     whichever output it plays on; it opens again at the next sound.
    ///   - environment: where the choice is read; libpulse and libpipewire themselves read the
    ///     process's environment.
    /// - Throws: `PlaybackError` `.noAudioOutput`, naming each output tried and why it failed.
    public static func automatic(
        server: String? = nil, timeout: Double = defaultTimeout, idleTimeout: Double = defaultIdleTimeout,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(PlaybackError) -> any AudioOutput {
        // The early open was made with the defaults: only a call asking for them may take it.
        if server == nil && timeout == defaultTimeout && idleTimeout == defaultIdleTimeout,
            let early = EarlyOpen.take(environment: environment)
        {
            return try early.get()
        }
        return try openFirstAnswering(
            choice(server: server, environment: environment), server: server, timeout: timeout, idleTimeout: idleTimeout,
            environment: environment)
    }

    /// `automatic()`'s work: the outputs in order, from the one `choice` names, until one opens.
    private static func openFirstAnswering(
        _ choice: (kind: Kind?, reason: String), server: String?, timeout: Double, idleTimeout: Double,
        environment: [String: String]
    ) throws(PlaybackError) -> any AudioOutput {
        let (kind, reason) = choice
        guard let kind else { throw PlaybackError(.noAudioOutput(tried: [reason])) }
        var tried: [String] = []
        var candidates = [kind]
        if environment[environmentVariable].map({ $0.isEmpty }) ?? true {
            if kind == .pipeWire { candidates.append(.pulseAudio) }
            // The last resort, for machines with no sound server; not when PULSE_SERVER names one.
            // That variable says where sound goes (paplay plays nowhere else either), and ALSA's
            // `default` mostly leads back to the same server through the pulse plugin, which
            // reads PULSE_SERVER too: on a hung server that open is bounded (ALSAOutput opens on
            // a thread of its own) but would only add a second wait of `timeout` before the same
            // failure.
            if (environment["PULSE_SERVER"] ?? "").isEmpty { candidates.append(.alsa) }
        }
        for candidate in candidates {
            do {
                return try open(candidate, server: server, timeout: timeout, idleTimeout: idleTimeout, environment: environment)
            } catch {
                tried.append("\(describe(candidate, server: server, environment: environment)): \(error)")
            }
        }
        throw PlaybackError(.noAudioOutput(tried: tried))
    }

    /// Loads the library of the output `automatic()` with its default arguments and `environment`
    /// would try first (libpipewire or libpulse) on the calling thread, then starts opening that
    /// output on a thread of its own, for that call to take (the first such call after it waits
    /// for it, then opens as usual again). `feedbackctl fire` calls it first thing, before any
    /// other thread exists and before it looks up and decodes its sound: the connection, the
    /// stream and the wait for the server's answers then run beside that work.
    package static func openInBackground(environment: [String: String]) {
        // Chosen once, for the loading and the open (on PipeWire, the choice connects to its socket).
        let chosen = choice(environment: environment)
        switch chosen.kind {
        case .pipeWire: _ = OptionalLibrary.pipeWire.unavailableReason
        case .pulseAudio: _ = OptionalLibrary.pulse.unavailableReason
        case .alsa, .canberra, nil: break
        }
        EarlyOpen.start(environment: environment) { () throws(PlaybackError) in
            try openFirstAnswering(
                chosen, server: nil, timeout: defaultTimeout, idleTimeout: defaultIdleTimeout, environment: environment)
        }
    }

    /// For tests: whether the output `openInBackground` is opening has been opened (or failed),
    /// waiting up to `timeout` seconds; false when none is pending.
    package static func earlyOpenFinished(timeout: Double) -> Bool {
        EarlyOpen.finished(timeout: timeout)
    }

    /// The output `openInBackground` is opening, or has opened, until `automatic()` takes it.
    private enum EarlyOpen {
        private final class Pending: Sendable {
            let environment: [String: String]
            let result = Lock<Result<any AudioOutput, PlaybackError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            init(environment: [String: String]) { self.environment = environment }
        }

        private static let pending = Lock<Pending?>(nil)

        static func start(environment: [String: String], open: @escaping @Sendable () throws(PlaybackError) -> any AudioOutput) {
            let opening = Pending(environment: environment)
            let started = pending.withLock { pending -> Bool in
                guard pending == nil else { return false }
                pending = opening
                return true
            }
            guard started else { return }
            // On another CPU than the caller's, which goes on with its own work.
            startDetachedThread(name: "output-open", onAnotherCPU: true) {
                let result: Result<any AudioOutput, PlaybackError>
                do throws(PlaybackError) {
                    result = .success(try open())
                } catch {
                    result = .failure(error)
                }
                opening.result.withLock { $0 = result }
                opening.done.signal()
            }
        }

        /// Whether an early open not yet taken has finished, waiting up to `timeout` seconds for it
        /// (false when there is none).
        static func finished(timeout: Double) -> Bool {
            guard let opening = pending.withLock({ $0 }) else { return false }
            guard opening.done.wait(timeout: .now() + timeout) == .success else { return false }
            // Signalled again for `take`, which waits on it.
            opening.done.signal()
            return true
        }

        /// The early open's result once it is there, if it was made for `environment` and nobody
        /// took it yet.
        static func take(environment: [String: String]) -> Result<any AudioOutput, PlaybackError>? {
            let taken = pending.withLock { pending -> Pending? in
                guard let opening = pending, opening.environment == environment else { return nil }
                pending = nil
                return opening
            }
            guard let taken else { return nil }
            // Bounded: the open gives up after `timeout` for each output it tries.
            taken.done.wait()
            return taken.result.withLock { $0 }
        }
    }

    private static func open(
        _ kind: Kind, server: String?, timeout: Double, idleTimeout: Double, environment: [String: String]
    ) throws(PlaybackError) -> any AudioOutput {
        switch kind {
        case .pipeWire:
            let output = PipeWireOutput(
                configuration: .init(remote: pipeWireSocket(environment: environment), idleTimeout: idleTimeout))
            try output.prepare(timeout: timeout)
            return output
        case .pulseAudio:
            let output = PulseAudioOutput(configuration: .init(server: server, idleTimeout: idleTimeout))
            try output.prepare(timeout: timeout)
            return output
        case .alsa:
            return try alsa(device: alsaDevice(environment: environment), timeout: timeout, idleTimeout: idleTimeout)
        case .canberra:
            return try CanberraOutput()
        }
    }

    /// The environment variable naming the ALSA PCM the engine uses when it plays on ALSA.
    public static let alsaDeviceVariable = "FEEDBACKSERVICES_ALSA_PCM"

    /// The ALSA PCM to play on: `FEEDBACKSERVICES_ALSA_PCM` when set and not empty, else `default`.
    public static func alsaDevice(environment: [String: String]) -> String {
        if let device = environment[alsaDeviceVariable], !device.isEmpty { return device }
        return ALSAOutput.Configuration().device
    }

    /// The engine on the ALSA PCM `device`, opened (so the first sound starts at once), closing it
    /// after `idleTimeout` seconds without sound.
    /// - Throws: `PlaybackError` `.deviceBusy` or `.deviceUnavailable` when it does not open within
    ///   `timeout` seconds.
    public static func alsa(
        device: String, timeout: Double = defaultTimeout, idleTimeout: Double = defaultIdleTimeout
    ) throws(PlaybackError) -> ALSAOutput {
        let output = ALSAOutput(configuration: .init(device: device, idleTimeout: idleTimeout))
        try output.prepare(timeout: timeout)
        return output
    }

    /// The engine output for `configuration`, not connected yet: what the player builds its own
    /// outputs with when it is given a PulseAudio configuration.
    package static func engine(_ configuration: PulseAudioOutput.Configuration) -> any AudioOutput {
        PulseAudioOutput(configuration: configuration)
    }

    /// The engine output `choice(environment:)` names, not connected yet, on a stream of the media
    /// role `mediaRole` (PulseAudio's spelling: `event`, `music`, `game`, …; PipeWire gets its own):
    /// what the player builds its outputs with by default. Nothing is opened (the choice only
    /// connects to PipeWire's socket and closes it), so nothing here waits; the output opens at
    /// its first sound. libcanberra, which cannot fade nor stream, gives way to the engine the
    /// servers make the choice of (so does a choice that names no output). The ALSA fallback of
    /// `automatic()` needs a server that did not answer, which only opening shows: set
    /// `FEEDBACKSERVICES_OUTPUT=alsa` for it.
    package static func engine(
        mediaRole: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> any AudioOutput {
        var kind = choice(environment: environment).kind
        if kind == .canberra || kind == nil {
            var servers = environment
            servers[environmentVariable] = nil
            kind = choice(environment: servers).kind
        }
        switch kind {
        case .pipeWire:
            return PipeWireOutput(
                configuration: .init(
                    remote: pipeWireSocket(environment: environment), mediaRole: PipeWireOutput.pipeWireRole(mediaRole)))
        case .alsa:
            return ALSAOutput(configuration: .init(device: alsaDevice(environment: environment)))
        case .pulseAudio, .canberra, nil:
            let server = environment["PULSE_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
            return PulseAudioOutput(configuration: .init(server: server, mediaRole: mediaRole))
        }
    }

    /// Where the engine will look for the server: the explicit address, `PULSE_SERVER`, or the
    /// default socket.
    public static func describe(server: String?, environment: [String: String]) -> String {
        if let server { return server }
        if let variable = environment["PULSE_SERVER"], !variable.isEmpty { return "\(variable) (PULSE_SERVER)" }
        let runtime = environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        return "unix:\(runtime)/pulse/native (the default socket; set PULSE_SERVER to use another)"
    }

    private static func describe(_ kind: Kind, server: String?, environment: [String: String]) -> String {
        switch kind {
        case .pipeWire: "PipeWire at \(pipeWireSocket(environment: environment))"
        case .pulseAudio: "PulseAudio at \(describe(server: server, environment: environment))"
        case .alsa: "ALSA PCM \(alsaDevice(environment: environment))"
        case .canberra: "libcanberra"
        }
    }

    /// PipeWire's socket as libpipewire finds it: `PIPEWIRE_REMOTE` (absolute, or a name in the
    /// runtime directory), else `pipewire-0`, in `PIPEWIRE_RUNTIME_DIR`, else `XDG_RUNTIME_DIR`.
    static func pipeWireSocket(environment: [String: String]) -> String {
        let name = environment["PIPEWIRE_REMOTE"].flatMap { $0.isEmpty ? nil : $0 } ?? "pipewire-0"
        if name.hasPrefix("/") { return name }
        let runtime = environment["PIPEWIRE_RUNTIME_DIR"] ?? environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        return "\(runtime)/\(name)"
    }

    /// Whether a daemon accepts a connection on the Unix socket at `path` (a socket file left by a
    /// dead daemon refuses it).
    static func answers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}
