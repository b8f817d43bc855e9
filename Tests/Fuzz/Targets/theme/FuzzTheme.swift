// libFuzzer target: index.theme bytes → the key-file parser and SoundThemeIndex, checked against
// the bounds the theme lookup promises. Built and run by scripts/fuzz.
@testable import FeedbackServices
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTheme(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let index = SoundThemeIndex(name: "fuzz", indexFile: "/fuzz/index.theme", file: KeyFile(text: text))
    precondition(index.directories.count <= SoundThemeResolver.maximumDirectoriesPerTheme)
    precondition(index.directories.allSatisfy { !$0.path.hasPrefix("/") && !$0.path.contains("..") })
    precondition(index.parents.allSatisfy { (try? validateThemeName($0)) != nil })
    // The same bytes as an event name: refused or looked up, never more than the bounds allow.
    if (try? validateEventName(text)) != nil {
        precondition(text.utf8.count <= SoundThemeResolver.maximumEventNameLength)
        precondition(SoundThemeResolver.nameFallbacks(text).count <= text.utf8.count)
    }
    return 0
}

/// The program's entry (SwiftPM names an executable's `main` `MODULE_main`): libFuzzer's driver.
@_cdecl("fuzz_theme_main")
func fuzzMain(_ argc: CInt, _ argv: ArgumentVector) -> CInt { runFuzzer(argc, argv, fuzzTheme) }
