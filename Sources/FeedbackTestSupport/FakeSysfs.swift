package import FeedbackServices
import Glibc

/// A sysfs tree of plain files under a temporary root: LED class devices with the attributes the
/// kernel gives them, and udev's database entries.
package final class FakeSysfs: Sendable {
    private let directory = TemporaryDirectory()
    /// The tree's root, as `LEDDiscovery(root:)` and `--sysfs-root` take it.
    package var root: String { directory.path }
    /// A discovery of this tree.
    package var discovery: LEDDiscovery { LEDDiscovery(root: root) }

    /// An empty tree.
    package init() {}

    /// Adds an LED; a multicolor one when `channels` is given.
    package func add(
        _ name: String, maximum: Int = 255, channels: [String]? = nil, triggers: String = "[none] timer pattern",
        brightness: Int = 0, udev: [String: String]? = nil
    ) throws {
        let path = root + "/sys/class/leds/" + name
        try make(path)
        write(path + "/max_brightness", "\(maximum)\n")
        write(path + "/brightness", "\(brightness)\n")
        write(path + "/trigger", triggers + "\n")
        for file in ["pattern", "repeat"] { write(path + "/" + file, "") }
        if let channels {
            write(path + "/multi_index", channels.joined(separator: " ") + "\n")
            write(path + "/multi_intensity", channels.map { _ in "0" }.joined(separator: " ") + "\n")
        }
        if let udev {
            try make(root + "/run/udev/data")
            let lines = udev.keys.sorted().map { "E:\($0)=\(udev[$0]!)" } + ["G:seat", "Q:seat"]
            write(root + "/run/udev/data/+leds:" + name, lines.joined(separator: "\n") + "\n")
        }
    }

    /// An attribute's content as the blink left it.
    package func read(_ name: String, _ file: String) -> String {
        guard let stream = fopen(root + "/sys/class/leds/" + name + "/" + file, "r") else { return "<missing>" }
        defer { fclose(stream) }
        var text = ""
        while case let byte = fgetc(stream), byte != EOF { text.append(Character(UnicodeScalar(UInt8(byte)))) }
        while text.last == "\n" { text.removeLast() }
        return text
    }

    /// Replaces the file at `path` (creating it) with `text`: what the kernel or another program
    /// would have set.
    package func write(_ path: String, _ text: String) {
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
        precondition(fd >= 0, "cannot create \(path)")
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
    }

    private func make(_ path: String) throws {
        var made = ""
        for part in path.split(separator: "/") {
            made += "/" + part
            mkdir(made, 0o755)
        }
    }
}
