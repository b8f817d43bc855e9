import FeedbackCLI
import FeedbackDaemon
import FoundationEssentials
import Glibc

/// Writes all of `text` to descriptor `fd`.
func emit(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        bytes = bytes.dropFirst(written)
    }
}

switch ServiceCommandLine.parse(Array(CommandLine.arguments.dropFirst())) {
case .print(let text):
    emit(1, text)
    exit(0)
case .usageError(let message):
    emit(2, message)
    exit(64)
case .run(let replace, let idleTimeout, let sysfsRoot):
    exit(Daemon.run(replace: replace, idleTimeout: idleTimeout, sysfsRoot: sysfsRoot, environment: ProcessInfo.processInfo.environment))
}
