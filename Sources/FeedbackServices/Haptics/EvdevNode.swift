import CEvdev
import CFeedbackShims
import Glibc

/// The system calls on an evdev node, each retried on `EINTR` in one place and turned into a
/// `HapticsError` naming the node.
enum EvdevNode {
    /// Opens a node for reading and writing (writing is what play, stop and gain need).
    static func open(_ path: String) throws(HapticsError) -> Int32 {
        while true {
            let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            if errno == ENOENT { throw HapticsError(.noDevice, source: path, detail: String(cString: strerror(ENOENT))) }
            throw HapticsError(errno: errno, source: path)
        }
    }

    /// An `ioctl` with a pointer argument.
    static func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer, path: String) throws(HapticsError) {
        while fbs_ioctl_pointer(fd, request, argument) < 0 {
            if errno != EINTR { throw HapticsError(errno: errno, source: path) }
        }
    }

    /// An `ioctl` with an integer argument passed by value.
    static func ioctl(_ fd: Int32, _ request: UInt, value: Int, path: String) throws(HapticsError) {
        while fbs_ioctl_value(fd, request, value) < 0 {
            if errno != EINTR { throw HapticsError(errno: errno, source: path) }
        }
    }

    /// Writes `input_event`s in one `write`, so the kernel delivers them together.
    static func write(_ fd: Int32, _ events: [input_event], path: String) throws(HapticsError) {
        let size = MemoryLayout<input_event>.stride * events.count
        while true {
            let written = events.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, size) }
            if written == size { return }
            if written < 0 && errno == EINTR { continue }
            throw HapticsError(errno: written < 0 ? errno : EIO, source: path)
        }
    }

    /// An `EV_FF` event: play (`value` times) or stop (0) effect `code`, or set the gain (`FF_GAIN`).
    static func forceFeedbackEvent(code: UInt16, value: Int32) -> input_event {
        var event = input_event()
        event.type = UInt16(EV_FF)
        event.code = code
        event.value = value
        return event
    }

    /// What the device on `fd` can do: libevdev for the name and bits, `EVIOCGEFFECTS` for the slots.
    static func describe(_ fd: Int32, path: String) throws(HapticsError) -> VibratorInfo {
        var handle: OpaquePointer?
        let status = libevdev_new_from_fd(fd, &handle)
        guard status == 0, let handle else { throw HapticsError(errno: -status, source: path) }
        defer { libevdev_free(handle) }
        var capabilities: ForceFeedbackCapabilities = []
        if libevdev_has_event_type(handle, UInt32(EV_FF)) == 1 {
            let codes: [(Int32, ForceFeedbackCapabilities)] = [
                (FF_RUMBLE, .rumble), (FF_PERIODIC, .periodic), (FF_CONSTANT, .constant), (FF_SINE, .sine),
                (FF_SQUARE, .square), (FF_TRIANGLE, .triangle), (FF_SAW_UP, .sawUp), (FF_SAW_DOWN, .sawDown),
                (FF_GAIN, .gain),
            ]
            for (code, capability) in codes where libevdev_has_event_code(handle, UInt32(EV_FF), UInt32(code)) == 1 {
                capabilities.insert(capability)
            }
        }
        var maximum: Int32 = 0
        if capabilities.canVibrate {
            try ioctl(fd, fbs_eviocgeffects(), &maximum, path: path)
        }
        let name = libevdev_get_name(handle).map { String(cString: $0) } ?? ""
        return VibratorInfo(path: path, name: name, capabilities: capabilities, maximumEffects: Int(maximum))
    }
}
