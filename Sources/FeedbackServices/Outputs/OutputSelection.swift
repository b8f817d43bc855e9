public import FoundationEssentials
import Glibc

/// Choosing where sounds go.
public enum AudioOutputSelection {
    /// The automatic choice: the engine when a PulseAudio server answers within `timeout` seconds;
    /// else the engine on the ALSA PCM `alsaDevice(environment:)` names, when it opens.
    ///
    /// - Parameters:
    ///   - server: a server address; nil for `PULSE_SERVER`, then the user's socket
    ///     (`$XDG_RUNTIME_DIR/pulse/native`).
    ///   - timeout: how long to wait for the server, in seconds.
    ///   - environment: used only to say, in the error, where the server was looked for; libpulse
    ///     itself reads the process's environment.
    /// - Returns: the engine, connected and ready, so the first sound starts at once.
    /// - Throws: `PlaybackError` `.noAudioOutput`, naming each output tried and why it failed.
    public static func automatic(
        server: String? = nil, timeout: Double = 2,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(PlaybackError) -> any AudioOutput {
        let output = PulseAudioOutput(configuration: .init(server: server))
        var tried: [String] = []
        do {
            try output.prepare(timeout: timeout)
            return output
        } catch {
            tried.append("PulseAudio at \(describe(server: server, environment: environment)): \(error)")
        }
        // The last resort, for machines with no sound server.
        let device = alsaDevice(environment: environment)
        do {
            return try alsa(device: device, timeout: timeout)
        } catch {
            tried.append("ALSA PCM \(device): \(error)")
        }
        throw PlaybackError(.noAudioOutput(tried: tried))
    }

    /// The environment variable naming the ALSA PCM the engine uses when it plays on ALSA.
    public static let alsaDeviceVariable = "FEEDBACKSERVICES_ALSA_PCM"

    /// The ALSA PCM to play on: `FEEDBACKSERVICES_ALSA_PCM` when set and not empty, else `default`.
    public static func alsaDevice(environment: [String: String]) -> String {
        if let device = environment[alsaDeviceVariable], !device.isEmpty { return device }
        return ALSAOutput.Configuration().device
    }

    /// The engine on the ALSA PCM `device`, opened (so the first sound starts at once).
    /// - Throws: `PlaybackError` `.deviceBusy` or `.deviceUnavailable` when it does not open within
    ///   `timeout` seconds.
    public static func alsa(device: String, timeout: Double = 2) throws(PlaybackError) -> ALSAOutput {
        let output = ALSAOutput(configuration: .init(device: device))
        try output.prepare(timeout: timeout)
        return output
    }

    /// The engine output for `configuration`, not connected yet: what the player builds its own
    /// outputs with, so that it names no server type.
    package static func engine(_ configuration: PulseAudioOutput.Configuration) -> any AudioOutput {
        PulseAudioOutput(configuration: configuration)
    }

    /// Where the engine will look for the server: the explicit address, `PULSE_SERVER`, or the
    /// default socket.
    public static func describe(server: String?, environment: [String: String]) -> String {
        if let server { return server }
        if let variable = environment["PULSE_SERVER"], !variable.isEmpty { return "\(variable) (PULSE_SERVER)" }
        let runtime = environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        return "unix:\(runtime)/pulse/native (the default socket; set PULSE_SERVER to use another)"
    }
}
