import Glibc

/// A Unix socket that takes connections and never answers, as a hung sound server would: the
/// kernel completes each connection from the listen backlog and nothing ever reads or writes.
/// Closed when released.
package final class SilentServer: Sendable {
    /// The socket's path.
    package let path: String
    private let fd: Int32

    /// Listens on `path`.
    package init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw TestFailure("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            close(fd)
            throw TestFailure("cannot listen on \(path)")
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The address for `PULSE_SERVER`: `unix:PATH`.
    package var server: String { "unix:\(path)" }
}
