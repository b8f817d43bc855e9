import Glibc

/// Which vibrator to use.
public enum VibratorSelector: Sendable, Equatable {
    /// The first suitable device, in node-number order.
    case first
    /// The device at this node.
    case path(String)
    /// The first suitable device whose name contains this text (case-insensitive).
    case name(String)
}

/// Finds vibrators: evdev nodes (`event*`) whose device has `EV_FF` with `FF_RUMBLE` or `FF_PERIODIC`.
///
/// The directory is `/dev/input` unless told otherwise (tests scan their own).
public struct VibratorDiscovery: Sendable {
    /// The directory scanned for `event*` nodes.
    public var directory: String

    /// Creates a discovery over `directory`.
    public init(directory: String = "/dev/input") {
        self.directory = directory
    }

    /// Every vibrator, in node-number order (`opendir`/`readdir`, then `open` and libevdev on each).
    ///
    /// Nodes that are not evdev devices or cannot vibrate are skipped.
    /// - Throws: `.permissionDenied` naming the first refused node when no vibrator could be
    ///   opened but some node refused us, since the vibrator may well be that node.
    public func vibrators() throws(HapticsError) -> [VibratorInfo] {
        var found: [VibratorInfo] = []
        var refused: HapticsError?
        for path in nodePaths() {
            do {
                let device = try ForceFeedbackDevice(path: path)
                found.append(device.info)
                device.close()
            } catch where error.reason == .permissionDenied {
                if refused == nil { refused = error }
            } catch {
                continue
            }
        }
        if found.isEmpty, let refused { throw refused }
        return found
    }

    /// The vibrator `selector` picks.
    /// - Throws: `.noDevice` when none matches; `.permissionDenied` for a refused node.
    public func vibrator(_ selector: VibratorSelector = .first) throws(HapticsError) -> VibratorInfo {
        switch selector {
        case .path(let path):
            let device = try ForceFeedbackDevice(path: path)
            defer { device.close() }
            return device.info
        case .first:
            guard let info = try vibrators().first else { throw HapticsError(.noDevice, source: directory) }
            return info
        case .name(let text):
            let wanted = text.lowercased()
            guard let info = try vibrators().first(where: { $0.name.lowercased().contains(wanted) }) else {
                throw HapticsError(.noDevice, source: directory, detail: "none named '\(text)'")
            }
            return info
        }
    }

    /// Opens the vibrator `selector` picks.
    package func open(_ selector: VibratorSelector = .first) throws(HapticsError) -> ForceFeedbackDevice {
        try ForceFeedbackDevice(path: vibrator(selector).path)
    }

    /// The `event<N>` entries of the directory, ordered by N.
    func nodePaths() -> [String] {
        var numbered: [(Int, String)] = []
        for name in (try? System.directoryEntries(directory)) ?? [] {
            guard name.hasPrefix("event"), let number = Int(name.dropFirst(5)) else { continue }
            numbered.append((number, directory + "/" + name))
        }
        return numbered.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
