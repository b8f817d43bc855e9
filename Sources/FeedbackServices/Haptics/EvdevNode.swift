import CEvdev
import CFeedbackShims
import Glibc

/// The system calls on an evdev node (made through `System`, which retries `EINTR`), each
/// failure turned into a `HapticsError` naming the node.
enum EvdevNode {
    /// Opens a node for reading and writing (writing is what play, stop and gain need).
    static func open(_ path: String) throws(HapticsError) -> Int32 {
        do {
            return try System.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        } catch {
            if error == .noSuchFile { throw HapticsError(.noDevice, source: path, detail: error.description) }
            throw HapticsError(errno: error.rawValue, source: path)
        }
    }

    /// An `ioctl` with a pointer argument.
    static func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer, path: String) throws(HapticsError) {
        do {
            try System.ioctl(fd, request, argument)
        } catch {
            throw HapticsError(errno: error.rawValue, source: path)
        }
    }

    /// An `ioctl` with an integer argument passed by value.
    static func ioctl(_ fd: Int32, _ request: UInt, value: Int, path: String) throws(HapticsError) {
        do {
            try System.ioctl(fd, request, value: value)
        } catch {
            throw HapticsError(errno: error.rawValue, source: path)
        }
    }

    /// Writes `input_event`s in one `write`, so the kernel delivers them together; a short write
    /// is an `EIO`.
    static func write(_ fd: Int32, _ events: [input_event], path: String) throws(HapticsError) {
        let size = MemoryLayout<input_event>.stride * events.count
        let written: Int
        do {
            written = try events.withUnsafeBytes { bytes in
                Result { () throws(Errno) in try System.write(fd, from: bytes.baseAddress!, count: size) }
            }.get()
        } catch {
            throw HapticsError(errno: error.rawValue, source: path)
        }
        guard written == size else { throw HapticsError(errno: EIO, source: path) }
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
        guard status == 0, let handle else {
            if let missing = OptionalLibrary.evdev.unavailableReason {
                throw HapticsError(.ioError(errno: ELIBACC), source: path, detail: missing)
            }
            throw HapticsError(errno: -status, source: path)
        }
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
