import AudioToolbox
import Foundation

/// Signalled by every completion below.
let soundFinished = DispatchSemaphore(value: 0)

/// Waits for one completion; false after 10 s.
func waitForSound() -> Bool {
    soundFinished.wait(timeout: .now() + 10) == .success
}

/// A completion routine that is a C function, as `AudioServicesAddSystemSoundCompletion` takes.
func tapFinished(_ soundID: SystemSoundID, _ clientData: UnsafeMutableRawPointer?) {
    soundFinished.signal()
}

/// Plays a sound and reaches itself from its completion routine through the client data, the way
/// Apple's sample code passes an object to a C callback.
final class SoundBoard {
    private let done = DispatchSemaphore(value: 0)

    func playChime(_ soundID: SystemSoundID) -> Bool {
        let status = AudioServicesAddSystemSoundCompletion(
            soundID, nil, nil,
            { _, clientData in
                let board = Unmanaged<SoundBoard>.fromOpaque(clientData!).takeUnretainedValue()
                board.done.signal()
            },
            UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque()))
        guard status == kAudioServicesNoError else { return false }
        AudioServicesPlaySystemSound(soundID)
        let finished = done.wait(timeout: .now() + 10) == .success
        AudioServicesRemoveSystemSoundCompletion(soundID)
        return finished
    }
}
