internal import COptionalLibraries

/// A C library the package loads on its first call rather than links (COptionalLibraries): a
/// process maps only the libraries its route calls. These are the ones whose absence the Swift code
/// reports itself; libcanberra, libsoxr and libasound say why through their own error strings
/// (`ca_strerror`, `soxr_error_t`, `snd_strerror`).
///
/// Thread safety: a value; `unavailableReason` may be asked from any thread (the library is opened
/// once, whichever thread asks first).
package enum OptionalLibrary: Sendable {
    /// libevdev (`libevdev2`): vibrator discovery.
    case evdev
    /// libebur128 (`libebur128-1`): loudness of registered sounds.
    case ebur128
    /// libpulse (`libpulse0`): `PulseAudioOutput`, `SoundServerInfo`.
    case pulse
    /// libsndfile (`libsndfile1`): reading and writing sound files.
    case sndfile
    /// libsystemd (`libsystemd0`): sd-bus and sd-event (FeedbackBus).
    case systemd
    /// libpipewire-0.3 (`libpipewire-0.3-0`): `PipeWireOutput`.
    case pipeWire

    /// Why the library cannot be used — the loader's message and the Debian package that provides
    /// it ("libpulse.so.0: cannot open shared object file: No such file or directory; install the
    /// Debian package libpulse0") — or nil when it is loaded. Loads it if that was not tried yet
    /// (`fbs_optional_library_error`).
    package var unavailableReason: String? {
        fbs_optional_library_error(cValue).map { String(cString: $0) }
    }

    private var cValue: fbs_optional_library {
        switch self {
        case .evdev: FBS_LIBRARY_EVDEV
        case .ebur128: FBS_LIBRARY_EBUR128
        case .pulse: FBS_LIBRARY_PULSE
        case .sndfile: FBS_LIBRARY_SNDFILE
        case .systemd: FBS_LIBRARY_SYSTEMD
        case .pipeWire: FBS_LIBRARY_PIPEWIRE
        }
    }
}
