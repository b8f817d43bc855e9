import Glibc

/// When process `pid` started, in clock ticks after boot (`/proc/PID/stat`, field 22): with the
/// ID, it names one process for the life of the system (an ID alone is reused; they wrap at
/// `pid_max`). Nil when there is no such process. `feedbackctl`'s player files record it; the test
/// watchdog follows its children by it.
package func processStartTime(_ pid: Int32) -> UInt64? {
    let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 1_024)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    // The command name (field 2) is in parentheses and may itself hold spaces or ')'.
    guard let nameEnd = buffer.prefix(count).lastIndex(of: UInt8(ascii: ")")) else { return nil }
    let fields = buffer[(nameEnd + 1)..<count].split(separator: UInt8(ascii: " "))
    // Field 3 (the state) is the first after the name; field 22 is the 20th.
    guard fields.count >= 20 else { return nil }
    return UInt64(String(decoding: fields[19], as: UTF8.self))
}
