// libFuzzer target: settings-file bytes → FeedbackSettings (our settings file) and the GTK
// settings.ini reader, through a real path. Built and run by scripts/fuzz.
@testable import FeedbackServices
import FuzzSupport
import Glibc

private let input = MemoryFile(name: "fuzz-settings")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSettings(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard input.fill(data, size) else { return 0 }
    let path = input.path
    let settings = FeedbackSettings(path: path)
    do {
        _ = try settings.readFileProfile()
        precondition(size <= SettingsFile.sizeLimit, "a file over the bound was read")
    } catch {
        if case .tooLarge = error.reason { precondition(size > SettingsFile.sizeLimit, "a file within the bound was refused") }
    }
    _ = settings.profile
    if let name = SoundThemeSelection.gtkSoundThemeName(inFile: path) {
        precondition((try? validateThemeName(name)) != nil)
    }
    return 0
}

/// The program's entry (SwiftPM names an executable's `main` `MODULE_main`): libFuzzer's driver.
@_cdecl("fuzz_settings_main")
func fuzzMain(_ argc: CInt, _ argv: ArgumentVector) -> CInt { runFuzzer(argc, argv, fuzzSettings) }
