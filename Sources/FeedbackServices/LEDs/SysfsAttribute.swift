import Glibc

/// Reads and writes of sysfs attribute files, through `System` (which retries `EINTR`), each
/// failure an `LEDError` naming the file.
///
/// Thread safety: stateless; any thread. Two threads writing one attribute race as two `echo`s would.
enum SysfsAttribute {
    /// The most read of one attribute: sysfs attributes are a page at most, and `trigger`, the
    /// longest, lists a few dozen names.
    static let maximumSize = 65_536

    /// The file's content without its trailing newline.
    static func read(_ path: String) throws(LEDError) -> String {
        let fd: Int32
        do {
            fd = try System.open(path, O_RDONLY | O_CLOEXEC)
        } catch {
            throw LEDError(errno: error.rawValue, source: path)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < maximumSize {
            let count: Int
            do {
                count = try System.read(fd, into: &chunk, count: chunk.count)
            } catch {
                throw LEDError(errno: error.rawValue, source: path)
            }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    /// Writes `text` in one `write`, as sysfs takes a value (a second write would be a second
    /// value). `O_TRUNC` is harmless on sysfs and makes a fake tree of plain files behave alike.
    static func write(_ path: String, _ text: String) throws(LEDError) {
        let fd: Int32
        do {
            fd = try System.open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        } catch {
            throw LEDError(errno: error.rawValue, source: path)
        }
        defer { close(fd) }
        var bytes = Array(text.utf8)
        let written: Int
        do {
            written = try System.write(fd, from: &bytes, count: bytes.count)
        } catch {
            throw LEDError(errno: error.rawValue, source: path)
        }
        guard written == bytes.count else { throw LEDError(errno: EIO, source: path) }
    }

    /// `trigger`'s words and the active one, which the kernel brackets (`none [timer] pattern`).
    /// A file with one unbracketed word (a fake tree's, after a write) has that word active.
    static func triggers(_ text: String) -> (all: [String], active: String) {
        var all: [String] = []
        var active: String?
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            if word.hasPrefix("[") && word.hasSuffix("]") && word.count > 2 {
                let name = String(word.dropFirst().dropLast())
                active = name
                all.append(name)
            } else {
                all.append(String(word))
            }
        }
        return (all, active ?? (all.count == 1 ? all[0] : "none"))
    }
}
