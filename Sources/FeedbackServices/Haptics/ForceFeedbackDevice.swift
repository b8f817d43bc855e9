import CFeedbackShims
import Glibc
import Synchronization

/// An open evdev force-feedback device: it owns the file descriptor and the effects uploaded
/// through it.
///
/// An effect belongs to the descriptor that uploaded it, so everything a program plays on a device
/// goes through one `ForceFeedbackDevice`. `close()` (or the last reference going away) erases
/// the effects it uploaded and closes the node.
///
/// Thread safety: every method may be called from any thread; calls are serialised by an internal
/// lock. `upload` and `erase` can block while the driver answers (a uinput driver is a process).
package final class ForceFeedbackDevice: @unchecked Sendable {
    // Locking rule: `state` (the descriptor and the uploaded ids) is only read or changed while
    // its Mutex is held, and every system call on the descriptor is made under that lock, so a
    // descriptor is never used after `close()` nor closed while a call on it is in flight.
    // `@unchecked` because this class owns that raw descriptor.
    private struct State {
        var fd: Int32
        var uploaded: Set<Int16> = []
    }
    private let state: Lock<State>

    /// What the device is and can do, read when it was opened.
    package let info: VibratorInfo

    /// The device node.
    package var path: String { info.path }

    /// Opens the node (`open(2)` with `O_RDWR`) and reads its capabilities with libevdev.
    ///
    /// - Throws: `HapticsError` `.permissionDenied` (naming the node and the usual fix),
    ///   `.noDevice` when there is no such node or it cannot vibrate, `.deviceGone`, `.ioError`.
    package init(path: String) throws(HapticsError) {
        let fd = try EvdevNode.open(path)
        do {
            info = try EvdevNode.describe(fd, path: path)
        } catch {
            Glibc.close(fd)
            throw error
        }
        guard info.capabilities.canVibrate else {
            Glibc.close(fd)
            throw HapticsError(.noDevice, source: path, detail: "no FF_RUMBLE or FF_PERIODIC")
        }
        state = Lock(State(fd: fd))
    }

    deinit { close() }

    /// The descriptor, for `poll(2)`; −1 once closed. Only for waiting, never for I/O.
    var pollDescriptor: Int32 { state.withLock { $0.fd } }

    /// Uploads an effect (`ioctl(EVIOCSFF)`): a new one when `id` is nil, else updates effect `id`
    /// in place (changing a playing effect changes it as it plays).
    /// - Returns: the effect id the kernel assigned or kept.
    /// - Throws: `.noFreeEffectSlot` when every slot is taken, `.unsupported` for an effect the
    ///   device cannot play, `.deviceGone`.
    @discardableResult
    package func upload(_ effect: ForceFeedbackEffect, id: Int16? = nil) throws(HapticsError) -> Int16 {
        try withOpenDescriptor { fd, uploaded throws(HapticsError) in
            var encoded = effect.encoded(id: id ?? -1)
            try EvdevNode.ioctl(fd, fbs_eviocsff(), &encoded, path: info.path)
            uploaded.insert(encoded.id)
            return encoded.id
        }
    }

    /// Starts effects (`write(2)` of one `EV_FF` event per id, value `count`), all in one write so
    /// the kernel starts them at the same instant; each begins after its own `delay`.
    package func play(_ ids: [Int16], count: Int32 = 1) throws(HapticsError) {
        try send(ids.map { EvdevNode.forceFeedbackEvent(code: UInt16(bitPattern: $0), value: count) })
    }

    /// Starts one effect (`write(2)` of an `EV_FF` event with value 1).
    package func play(_ id: Int16) throws(HapticsError) { try play([id]) }

    /// Stops effects (`write(2)` of `EV_FF` events with value 0).
    package func stop(_ ids: [Int16]) throws(HapticsError) {
        try send(ids.map { EvdevNode.forceFeedbackEvent(code: UInt16(bitPattern: $0), value: 0) })
    }

    /// Stops one effect.
    package func stop(_ id: Int16) throws(HapticsError) { try stop([id]) }

    /// Sets the device-wide strength 0…1 (`write(2)` of `EV_FF`/`FF_GAIN`, 0…0xFFFF).
    /// - Throws: `.unsupported` when the device has no `FF_GAIN`.
    package func setGain(_ gain: Double) throws(HapticsError) {
        guard info.supportsGain else { throw HapticsError(.unsupported, source: info.path, detail: "no FF_GAIN") }
        let value = Int32(ForceFeedbackEffect.unsignedMagnitude(gain))
        try send([EvdevNode.forceFeedbackEvent(code: UInt16(FF_GAIN), value: value)])
    }

    /// Erases an uploaded effect (`ioctl(EVIOCRMFF)`, which takes the id by value), freeing its slot.
    package func erase(_ id: Int16) throws(HapticsError) {
        try withOpenDescriptor { fd, uploaded throws(HapticsError) in
            uploaded.remove(id)
            try EvdevNode.ioctl(fd, fbs_eviocrmff(), value: Int(id), path: info.path)
        }
    }

    /// Erases every effect this device uploaded and closes the node (`close(2)`). Errors are
    /// ignored: a device that went away has dropped its effects already. Calling it again does nothing.
    package func close() {
        state.withLock { state in
            guard state.fd >= 0 else { return }
            for id in state.uploaded.sorted() {
                try? System.ioctl(state.fd, fbs_eviocrmff(), value: Int(id))
            }
            state.uploaded.removeAll()
            Glibc.close(state.fd)
            state.fd = -1
        }
    }

    /// Whether the device has been closed.
    package var isClosed: Bool { state.withLock { $0.fd < 0 } }

    private func send(_ events: [input_event]) throws(HapticsError) {
        try withOpenDescriptor { fd, _ throws(HapticsError) in
            try EvdevNode.write(fd, events, path: info.path)
        }
    }

    private func withOpenDescriptor<T>(
        _ body: (Int32, inout Set<Int16>) throws(HapticsError) -> T
    ) throws(HapticsError) -> T {
        try state.withLock { state throws(HapticsError) in
            guard state.fd >= 0 else { throw HapticsError(.deviceGone, source: info.path, detail: "closed") }
            return try body(state.fd, &state.uploaded)
        }
    }
}
