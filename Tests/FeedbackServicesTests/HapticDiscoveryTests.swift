@testable import FeedbackServices
import Glibc
import Testing

struct HapticDiscoveryTests {
    /// A fresh directory standing in for /dev/input.
    func directory(files: [String] = []) throws -> String {
        var template = Array("/tmp/fbs-input-XXXXXX".utf8CString)
        let path = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        for file in files { close(open(path + "/" + file, O_CREAT | O_WRONLY, 0o644)) }
        return path
    }

    @Test func anEmptyDirectoryHasNoVibrators() throws {
        let discovery = VibratorDiscovery(directory: try directory())
        #expect(try discovery.vibrators().isEmpty)
        #expect(throws: HapticsError(.noDevice, source: discovery.directory)) { try discovery.vibrator() }
        #expect(try VibratorDiscovery(directory: "/nonexistent/input").vibrators().isEmpty)
    }

    @Test func nodesAreScannedInNumberOrderAndOthersIgnored() throws {
        let path = try directory(files: ["event10", "event2", "mouse0", "event", "eventX", "by-id"])
        let discovery = VibratorDiscovery(directory: path)
        #expect(discovery.nodePaths() == [path + "/event2", path + "/event10"])
        // Regular files are not evdev devices: skipped, not an error.
        #expect(try discovery.vibrators().isEmpty)
    }

    @Test func openingSomethingThatIsNotAVibratorSaysWhy() throws {
        #expect(throws: HapticsError.self) { try ForceFeedbackDevice(path: "/nonexistent/event0") }
        do {
            _ = try ForceFeedbackDevice(path: "/nonexistent/event0")
        } catch {
            #expect(error.reason == .noDevice && error.source == "/nonexistent/event0")
        }
        do {
            _ = try ForceFeedbackDevice(path: "/dev/null")
        } catch {
            #expect(error.reason == .unsupported && error.source == "/dev/null")
        }
        let empty = VibratorDiscovery(directory: try directory())
        do {
            _ = try empty.vibrator(.name("rumble"))
        } catch {
            #expect(error.reason == .noDevice && error.detail == "none named 'rumble'")
        }
    }

    @Test func permissionDeniedNamesTheNodeAndTheFix() {
        let error = HapticsError(errno: EACCES, source: "/dev/input/event4")
        #expect(error.reason == .permissionDenied)
        #expect(error.description.hasPrefix("/dev/input/event4: permission denied"))
        #expect(error.description.contains("'input' group") && error.description.contains("uaccess"))
    }

    @Test(arguments: [
        (EPERM, HapticsError.Reason.permissionDenied), (ENODEV, .deviceGone), (ENOSPC, .noFreeEffectSlot),
        (EINVAL, .unsupported), (ENOTTY, .unsupported), (EIO, .ioError(errno: EIO)),
    ])
    func errnoValuesMapToReasons(code: Int32, reason: HapticsError.Reason) {
        #expect(HapticsError(errno: code, source: "x").reason == reason)
    }

    @Test func capabilityNamesAreStable() {
        let capabilities: ForceFeedbackCapabilities = [.gain, .rumble, .sine, .periodic]
        #expect(capabilities.names == ["rumble", "periodic", "sine", "gain"])
        #expect(capabilities.canVibrate && !ForceFeedbackCapabilities.gain.canVibrate)
    }

    @Test func theMonitorStartsAndCancels() throws {
        let monitor = try VibratorMonitor(discovery: VibratorDiscovery(directory: try directory())) { _ in }
        #expect(monitor.current.isEmpty)
        monitor.cancel()
        monitor.cancel()
        #expect(throws: HapticsError.self) {
            try VibratorMonitor(discovery: VibratorDiscovery(directory: "/nonexistent/input")) { _ in }
        }
    }
}
