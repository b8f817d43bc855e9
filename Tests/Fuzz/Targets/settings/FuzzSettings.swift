// libFuzzer target: settings-file bytes → FeedbackSettings (our settings file) and the GTK
// settings.ini reader, through a real path. Built and run by scripts/fuzz.
internal import CLibFuzzer
internal import CFeedbackShims
@testable import FeedbackServices
import Glibc

private let memoryFile = fbs_memfd("fuzz-settings")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSettings(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    precondition(memoryFile >= 0, "memfd_create failed")
    guard ftruncate(memoryFile, 0) == 0, pwrite(memoryFile, data, size, 0) == size else { return 0 }
    let path = "/proc/self/fd/\(memoryFile)"
    let settings = FeedbackSettings(path: path)
    do {
        _ = try settings.readFileProfile()
        precondition(size <= SettingsFile.sizeLimit, "a file over the bound was read")
    } catch {
        precondition(size > SettingsFile.sizeLimit || error.reason != .malformed)
    }
    _ = settings.profile
    if let name = SoundThemeSelection.gtkSoundThemeName(inFile: path) {
        precondition((try? validateThemeName(name)) != nil)
    }
    return 0
}

/// The program's entry (SwiftPM calls an executable's `main` `MODULE_main`): libFuzzer's driver.
@_cdecl("fuzz_settings_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var vector = argv
    return LLVMFuzzerRunDriver(&count, &vector, fuzzSettings)
}
