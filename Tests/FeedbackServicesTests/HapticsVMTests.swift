import Foundation
import Testing

/// Runs the haptics cases on a real kernel: scripts/vm/haptics boots Debian's kernel with uinput in
/// qemu and runs Tests/HapticsVMCases there. Under CI=true a missing tool, kernel or VM is a
/// failure; elsewhere the test is skipped with the reason.
struct HapticsVMTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let script = packageRoot.appendingPathComponent("scripts/vm/haptics").path
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
    static let missingTools: [String] = ["qemu-system-x86_64", "busybox", "cpio", "gcc", "apt-get", "dpkg-deb"].filter { tool in
        !(ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
        }
    }
    static let skipReason = "haptics VM test skipped: missing \(missingTools.joined(separator: ", ")) (run scripts/setup)"

    @Test(.enabled(if: isCI || missingTools.isEmpty, Comment(rawValue: skipReason)), .timeLimit(.minutes(10)))
    func everyHapticsCasePassesOnARealKernel() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.script)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let cases = output.split(separator: "\n").filter { $0.hasPrefix("CASE ") || $0.hasPrefix("haptics-vm: ") }
        print(cases.joined(separator: "\n"))
        if process.terminationStatus == 69 && !Self.isCI {
            print("haptics VM test skipped: \(output)")
            return
        }
        #expect(process.terminationStatus == 0, "scripts/vm/haptics failed; its output:\n\(output)")
        #expect(output.contains("HAPTICS-VM-VERDICT PASS"), "no passing verdict; the VM's output:\n\(output)")
        #expect(!cases.isEmpty && !cases.contains { $0.contains(" FAIL ") }, "\(output)")
    }
}
