public import Dispatch
public import FoundationEssentials
import Synchronization

// Apple's System Sound Services (AudioToolbox's AudioServices), with Apple's names, signatures and
// result codes, so code written for Apple platforms compiles and behaves the same. Sounds are
// registered in `SoundRegistry.shared` and played through `FeedbackManager.shared`, so they obey the
// feedback profile. Every function may be called from any thread and returns at once.
//
// The functions that return an `OSStatus` are `@discardableResult`, as every C function is when
// Swift imports Apple's header: Apple code that ignores a result compiles here without a warning.
//
// This file (with `SystemSoundID` and the `kSystemSoundID_` constants in Registry/SystemSoundID.swift)
// is where Apple's names live: the AudioToolbox module declares nothing and re-exports this module,
// so `import AudioToolbox` reaches these same declarations.

/// A result code, as in Apple's frameworks: 0 for success, otherwise an error constant.
public typealias OSStatus = Int32

/// The URL `AudioServicesCreateSystemSoundID` takes: Foundation's `URL` itself.
///
/// Apple code passes a `URL` (or an `NSURL`) as `url as CFURL`, Core Foundation's toll-free bridged
/// type. There is no Core Foundation API here (swift-corelibs-foundation keeps its CFURL private),
/// so `CFURL` names `URL`: `url as CFURL` is then a coercion to the type the value already has, and
/// `nsurl as CFURL` the `NSURL`-to-`URL` bridging Foundation does on Linux too, in the Swift 5 and
/// Swift 6 language modes alike.
public typealias CFURL = URL

/// The identifier of a System Sound Services property (a four-character code).
public typealias AudioServicesPropertyID = UInt32

/// The callback `AudioServicesAddSystemSoundCompletion` registers: the sound's ID and the client data.
public typealias AudioServicesSystemSoundCompletionProc = @convention(c) (SystemSoundID, UnsafeMutableRawPointer?) -> Void

/// No error has occurred.
public let kAudioServicesNoError: OSStatus = 0
/// The property is not supported (`'pty?'`).
public let kAudioServicesUnsupportedPropertyError: OSStatus = 0x7074_793F
/// The size of the property data was not correct (`'!siz'`).
public let kAudioServicesBadPropertySizeError: OSStatus = 0x2173_697A
/// The size of the specifier data was not correct (`'!spc'`).
public let kAudioServicesBadSpecifierSizeError: OSStatus = 0x2173_7063
/// An unspecified error: here, a file that cannot be read or decoded, an unknown sound ID, or a
/// null out-pointer.
public let kAudioServicesSystemSoundUnspecifiedError: OSStatus = -1500
/// System sound client message timed out. Apple returns it when its sound server does not answer;
/// sounds here play in-process, so no function returns it. Defined for code that compares with it.
public let kAudioServicesSystemSoundClientTimedOutError: OSStatus = -1501
/// The sound is longer than the 30 s that system sounds may last.
public let kAudioServicesSystemSoundExceededMaximumDurationError: OSStatus = -1502

/// A `UInt32`, 1 by default: the sound is a user-interface sound. Apple silences UI sounds when the
/// user turns sound effects off; Linux has no such setting, so here the value is stored and read
/// back but every sound follows the feedback profile alike (`'isui'`).
public let kAudioServicesPropertyIsUISound: AudioServicesPropertyID = 0x6973_7569
/// A `UInt32`, 0 by default: whether the sound plays to its end if the program exits. Sounds are
/// mixed in the program's own process, so playback ends with it whatever the value; it is stored
/// and read back for compatibility (`'ifdi'`).
public let kAudioServicesPropertyCompletePlaybackIfAppDies: AudioServicesPropertyID = 0x6966_6469

/// Registers the sound file a `file:` URL names and returns its ID through `outSystemSoundID`
/// (`SoundRegistry.register(contentsOf:)`). Every format libsndfile reads is accepted.
/// - Parameters:
///   - inFileURL: the file; `CFURL` is `URL`, so Apple's `url as CFURL` passes it unchanged.
///   - outSystemSoundID: where the new sound's ID is written.
/// - Returns: `kAudioServicesNoError`; `kAudioServicesSystemSoundExceededMaximumDurationError` for a
///   sound over 30 s; `kAudioServicesSystemSoundUnspecifiedError` for a file that cannot be read or
///   decoded. On failure `outSystemSoundID` is left unchanged.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesCreateSystemSoundID(
    _ inFileURL: CFURL, _ outSystemSoundID: UnsafeMutablePointer<SystemSoundID>
) -> OSStatus {
    AudioServicesFacade.create(outSystemSoundID) { () throws(RegistryError) in
        try SoundRegistry.shared.register(contentsOf: inFileURL)
    }
}

/// Registers the sound file at `inFilePath` (FeedbackServices' path form of
/// `AudioServicesCreateSystemSoundID(_:_:)`, with the same results).
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesCreateSystemSoundID(
    _ inFilePath: String, _ outSystemSoundID: UnsafeMutablePointer<SystemSoundID>
) -> OSStatus {
    AudioServicesFacade.create(outSystemSoundID) { () throws(RegistryError) in
        try SoundRegistry.shared.register(fileAt: inFilePath)
    }
}

/// Disposes of a sound registered with `AudioServicesCreateSystemSoundID`; its ID is never reused.
/// Plays already running finish; the sound's completion and properties are removed.
/// - Returns: `kAudioServicesNoError`, or `kAudioServicesSystemSoundUnspecifiedError` for an ID
///   that names no registered sound (system sound IDs cannot be disposed).
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesDisposeSystemSoundID(_ inSystemSoundID: SystemSoundID) -> OSStatus {
    do {
        try SoundRegistry.shared.dispose(inSystemSoundID)
    } catch {
        return AudioServicesFacade.status(for: error)
    }
    AudioServicesFacade.forget(inSystemSoundID)
    return kAudioServicesNoError
}

/// Plays a system sound (1000…1351) or a registered sound, as the profile allows; an unknown ID
/// plays nothing. `kSystemSoundID_Vibrate` and the vibrate-only IDs vibrate. A completion added
/// with `AudioServicesAddSystemSoundCompletion` runs when it ends.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
public func AudioServicesPlaySystemSound(_ inSystemSoundID: SystemSoundID) {
    AudioServicesFacade.play(inSystemSoundID, type: .audioOnly, block: nil)
}

/// Plays a sound and vibrates with it, as the profile allows: in `quiet` it only vibrates; without a
/// vibrator it only plays the sound.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
public func AudioServicesPlayAlertSound(_ inSystemSoundID: SystemSoundID) {
    AudioServicesFacade.play(inSystemSoundID, type: .audioAndVibrate, block: nil)
}

/// Plays a sound as `AudioServicesPlaySystemSound` does; `inCompletionBlock` runs once when it has
/// ended, for every call: also when nothing could play (an unknown ID, the profile, no output).
///
/// The block's type is Apple's, not `@Sendable`: it runs on a background thread, as Apple's runs on
/// a serial queue of its own, and what it touches must be safe to touch from there (Apple: "the
/// client is responsible for handling thread safety"). A block that updates main-actor state hops
/// to the main actor itself.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
public func AudioServicesPlaySystemSoundWithCompletion(
    _ inSystemSoundID: SystemSoundID, _ inCompletionBlock: (() -> Void)?
) {
    AudioServicesFacade.play(inSystemSoundID, type: .audioOnly, block: inCompletionBlock)
}

/// Plays an alert as `AudioServicesPlayAlertSound` does; `inCompletionBlock` runs once when sound
/// and vibration have ended, for every call, success or failure. The block runs on a background
/// thread, as for `AudioServicesPlaySystemSoundWithCompletion`.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
public func AudioServicesPlayAlertSoundWithCompletion(
    _ inSystemSoundID: SystemSoundID, _ inCompletionBlock: (() -> Void)?
) {
    AudioServicesFacade.play(inSystemSoundID, type: .audioAndVibrate, block: inCompletionBlock)
}

/// Registers a callback that runs each time a play of the sound ends (after the play's own block,
/// if any); it replaces an earlier one for that ID.
///
/// - Parameters:
///   - inSystemSoundID: the sound whose plays the callback follows.
///   - inRunLoop: where the callback runs. There is no Core Foundation run loop here: pass nil (the
///     usual value in Apple code) for a background queue, or a `DispatchQueue` to run it there.
///   - inRunLoopMode: accepted for compatibility and ignored.
///   - inCompletionRoutine: a C function; state goes through `inClientData`.
///   - inClientData: handed back to `inCompletionRoutine` as it is; never dereferenced here.
/// - Returns: `kAudioServicesNoError`, or `kAudioServicesSystemSoundUnspecifiedError` for an ID that
///   is neither a registered sound nor a system sound ID.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesAddSystemSoundCompletion(
    _ inSystemSoundID: SystemSoundID, _ inRunLoop: DispatchQueue?, _ inRunLoopMode: String?,
    _ inCompletionRoutine: AudioServicesSystemSoundCompletionProc, _ inClientData: UnsafeMutableRawPointer?
) -> OSStatus {
    guard AudioServicesFacade.isKnown(inSystemSoundID) else { return kAudioServicesSystemSoundUnspecifiedError }
    AudioServicesFacade.setCompletion(
        .init(routine: inCompletionRoutine, clientData: UInt(bitPattern: inClientData), queue: inRunLoop ?? .global()),
        for: inSystemSoundID)
    return kAudioServicesNoError
}

/// Removes the callback added for the sound; plays that already ended keep their calls.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
public func AudioServicesRemoveSystemSoundCompletion(_ inSystemSoundID: SystemSoundID) {
    AudioServicesFacade.setCompletion(nil, for: inSystemSoundID)
}

/// The size of a property's value and whether it can be set.
/// - Returns: as `AudioServicesGetProperty`.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesGetPropertyInfo(
    _ inPropertyID: AudioServicesPropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeRawPointer?,
    _ outPropertyDataSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?
) -> OSStatus {
    if case .failure(let error) = AudioServicesFacade.specifier(inPropertyID, inSpecifierSize, inSpecifier) { return error.status }
    outPropertyDataSize?.pointee = UInt32(MemoryLayout<UInt32>.size)
    outWritable?.pointee = true
    return kAudioServicesNoError
}

/// Reads a property of a sound: the specifier is the `SystemSoundID` (4 bytes), the value a `UInt32`.
/// - Returns: `kAudioServicesNoError` (and `ioPropertyDataSize` set to 4);
///   `kAudioServicesUnsupportedPropertyError` for another property;
///   `kAudioServicesBadSpecifierSizeError` unless the specifier is a 4-byte ID;
///   `kAudioServicesBadPropertySizeError` when the buffer is not 4 bytes or is nil;
///   `kAudioServicesSystemSoundUnspecifiedError` for an unknown sound ID.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesGetProperty(
    _ inPropertyID: AudioServicesPropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeRawPointer?,
    _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutableRawPointer?
) -> OSStatus {
    let id: SystemSoundID
    switch AudioServicesFacade.specifier(inPropertyID, inSpecifierSize, inSpecifier) {
    case .failure(let error): return error.status
    case .success(let found): id = found
    }
    guard ioPropertyDataSize.pointee == UInt32(MemoryLayout<UInt32>.size), let outPropertyData else {
        return kAudioServicesBadPropertySizeError
    }
    outPropertyData.storeBytes(of: AudioServicesFacade.property(inPropertyID, of: id), as: UInt32.self)
    ioPropertyDataSize.pointee = UInt32(MemoryLayout<UInt32>.size)
    return kAudioServicesNoError
}

/// Sets a property of a sound; the specifier is the `SystemSoundID`, the value a `UInt32` (any
/// non-zero value is stored as 1).
/// - Returns: as `AudioServicesGetProperty`.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesSetProperty(
    _ inPropertyID: AudioServicesPropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeRawPointer?,
    _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer
) -> OSStatus {
    let id: SystemSoundID
    switch AudioServicesFacade.specifier(inPropertyID, inSpecifierSize, inSpecifier) {
    case .failure(let error): return error.status
    case .success(let found): id = found
    }
    guard inPropertyDataSize == UInt32(MemoryLayout<UInt32>.size) else { return kAudioServicesBadPropertySizeError }
    let value = inPropertyData.loadUnaligned(as: UInt32.self)
    AudioServicesFacade.setProperty(inPropertyID, of: id, to: value == 0 ? 0 : 1)
    return kAudioServicesNoError
}

/// Stops every play of the sound that is still running; their completions run as for any end.
/// FeedbackServices' addition: Apple's System Sound Services cannot stop a sound.
/// - Returns: `kAudioServicesNoError`, also when nothing was playing.
/// Thread safety: any thread; returns at once (decoding a file is the only work done in the call).
@discardableResult
public func AudioServicesStopSystemSound(_ inSystemSoundID: SystemSoundID) -> OSStatus {
    FeedbackManager.shared.stop(inSystemSoundID)
    return kAudioServicesNoError
}

/// Apple's one-byte `Boolean`, as `AudioServicesGetPropertyInfo` writes it (Swift on Linux has no
/// `DarwinBoolean`; this one has the same layout and `boolValue`).
public struct DarwinBoolean: Sendable, Hashable, ExpressibleByBooleanLiteral, CustomStringConvertible {
    private var value: UInt8

    /// Creates a value from a `Bool`.
    public init(_ value: Bool) { self.value = value ? 1 : 0 }
    /// Creates a value from `true` or `false`.
    public init(booleanLiteral value: Bool) { self.init(value) }
    /// The value as a `Bool`.
    public var boolValue: Bool { value != 0 }
    /// `true` or `false`.
    public var description: String { boolValue.description }
}

/// The facade's state: per-ID completions and properties.
enum AudioServicesFacade {
    struct Completion: Sendable {
        let routine: AudioServicesSystemSoundCompletionProc
        /// The client data as an address: a raw pointer is not `Sendable`, and the facade never
        /// dereferences it, only hands it back.
        let clientData: UInt
        let queue: DispatchQueue
    }

    private struct Properties {
        var isUISound: UInt32 = 1
        var completePlaybackIfAppDies: UInt32 = 0
    }

    private struct State {
        var completions: [SystemSoundID: Completion] = [:]
        var properties: [SystemSoundID: Properties] = [:]
    }

    private static let state = Lock(State())

    static func create(
        _ out: UnsafeMutablePointer<SystemSoundID>, _ register: () throws(RegistryError) -> SystemSoundID
    ) -> OSStatus {
        do {
            out.pointee = try register()
            return kAudioServicesNoError
        } catch {
            return status(for: error)
        }
    }

    /// The one place a registry's error becomes a result code. Apple has codes for only a few
    /// failures; everything else is `kAudioServicesSystemSoundUnspecifiedError`, as there.
    static func status(for error: RegistryError) -> OSStatus {
        switch error.reason {
        case .sound(let error):
            switch error.reason {
            case .exceedsMaximumDuration: kAudioServicesSystemSoundExceededMaximumDurationError
            case .notFound, .permissionDenied, .isDirectory, .notARegularFile, .notASoundFile, .malformed,
                .unsupportedEncoding, .empty, .tooManyChannels, .invalidSampleRate, .invalidSamples, .ioError,
                .libraryUnavailable:
                kAudioServicesSystemSoundUnspecifiedError
            }
        case .unknownSoundID, .persistentSoundID, .soundIDsExhausted, .registryDamaged, .registryBusy,
            .noDefaultLocation, .loudnessUnmeasurable, .file:
            kAudioServicesSystemSoundUnspecifiedError
        }
    }

    static func isKnown(_ id: SystemSoundID) -> Bool {
        SoundRegistry.systemSoundIDs.contains(id) || id == kSystemSoundID_Vibrate || SoundRegistry.shared.contains(id)
    }

    static func forget(_ id: SystemSoundID) {
        state.withLock { state in
            state.completions[id] = nil
            state.properties[id] = nil
        }
    }

    static func setCompletion(_ completion: Completion?, for id: SystemSoundID) {
        state.withLock { $0.completions[id] = completion }
    }

    static func play(_ id: SystemSoundID, type: FeedbackType, block: (() -> Void)?) {
        // Apple's block type is not `@Sendable`: by Apple's contract it runs on a queue of the
        // framework's and its caller makes what it touches safe there. It is called once, on the
        // thread the play ends on, and shared with nothing else.
        nonisolated(unsafe) let block = block
        FeedbackManager.shared.play(id, type: type) { _ in
            block?()
            if let completion = state.withLock({ $0.completions[id] }) {
                completion.queue.async {
                    completion.routine(id, UnsafeMutableRawPointer(bitPattern: completion.clientData))
                }
            }
        }
    }

    static func specifier(
        _ property: AudioServicesPropertyID, _ size: UInt32, _ specifier: UnsafeRawPointer?
    ) -> Result<SystemSoundID, OSStatusError> {
        guard property == kAudioServicesPropertyIsUISound || property == kAudioServicesPropertyCompletePlaybackIfAppDies
        else { return .failure(OSStatusError(kAudioServicesUnsupportedPropertyError)) }
        guard size == UInt32(MemoryLayout<SystemSoundID>.size), let specifier else {
            return .failure(OSStatusError(kAudioServicesBadSpecifierSizeError))
        }
        let id = specifier.loadUnaligned(as: SystemSoundID.self)
        guard isKnown(id) else { return .failure(OSStatusError(kAudioServicesSystemSoundUnspecifiedError)) }
        return .success(id)
    }

    static func property(_ property: AudioServicesPropertyID, of id: SystemSoundID) -> UInt32 {
        let values = state.withLock { $0.properties[id] } ?? Properties()
        return property == kAudioServicesPropertyIsUISound ? values.isUISound : values.completePlaybackIfAppDies
    }

    static func setProperty(_ property: AudioServicesPropertyID, of id: SystemSoundID, to value: UInt32) {
        state.withLock { state in
            if property == kAudioServicesPropertyIsUISound {
                state.properties[id, default: Properties()].isUISound = value
            } else {
                state.properties[id, default: Properties()].completePlaybackIfAppDies = value
            }
        }
    }
}

/// An `OSStatus` carried through `Result`.
struct OSStatusError: Error {
    let status: OSStatus
    init(_ status: OSStatus) { self.status = status }
}
