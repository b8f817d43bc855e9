import AudioToolbox
import Foundation

// System Sound Services as an iOS app calls it, with nothing changed for Linux. The sounds'
// files are the arguments, where an app would find them in its bundle; each step prints one line
// that AudioToolboxPackageTests compares, and plays one sound that its recorder listens for.

let arguments = CommandLine.arguments
let tap = URL(fileURLWithPath: arguments[1])
let chime = NSURL(fileURLWithPath: arguments[2])

var tapID: SystemSoundID = 0
print("create tap:", AudioServicesCreateSystemSoundID(tap as CFURL, &tapID) == kAudioServicesNoError)
var chimeID: SystemSoundID = 0
print("create chime:", AudioServicesCreateSystemSoundID(chime as CFURL, &chimeID) == kAudioServicesNoError)

AudioServicesPlaySystemSoundWithCompletion(tapID) {
    soundFinished.signal()
}
print("tap with completion:", waitForSound())

let board = SoundBoard()
print("chime with completion routine:", board.playChime(chimeID))

AudioServicesAddSystemSoundCompletion(tapID, nil, nil, tapFinished, nil)
AudioServicesPlaySystemSound(tapID)
print("tap with completion function:", waitForSound())
AudioServicesRemoveSystemSoundCompletion(tapID)

AudioServicesPlayAlertSoundWithCompletion(chimeID) {
    soundFinished.signal()
}
print("chime as alert:", waitForSound())

AudioServicesPlaySystemSoundWithCompletion(kSystemSoundID_Vibrate) {
    soundFinished.signal()
}
print("vibrate:", waitForSound())

var isUISound: UInt32 = 0
var size = UInt32(MemoryLayout<UInt32>.size)
var status = AudioServicesGetProperty(
    kAudioServicesPropertyIsUISound, UInt32(MemoryLayout<SystemSoundID>.size), &tapID, &size, &isUISound)
print("is UI sound:", status == kAudioServicesNoError, isUISound)
var playsOn: UInt32 = 1
status = AudioServicesSetProperty(
    kAudioServicesPropertyCompletePlaybackIfAppDies, UInt32(MemoryLayout<SystemSoundID>.size), &tapID,
    UInt32(MemoryLayout<UInt32>.size), &playsOn)
print("set complete playback:", status == kAudioServicesNoError)
status = AudioServicesGetProperty(0x6162_6364, UInt32(MemoryLayout<SystemSoundID>.size), &tapID, &size, &isUISound)
print("unknown property:", status == kAudioServicesUnsupportedPropertyError)

print("dispose:", AudioServicesDisposeSystemSoundID(tapID) == kAudioServicesNoError,
    AudioServicesDisposeSystemSoundID(chimeID) == kAudioServicesNoError)
