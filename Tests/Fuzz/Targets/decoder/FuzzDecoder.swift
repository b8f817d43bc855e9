// libFuzzer target: file bytes → SoundDecoder, the way `feedbackctl info` and registration read
// a file. Built and run by scripts/fuzz.
internal import CLibFuzzer
internal import CFeedbackShims
import FeedbackServices
import Glibc

/// One anonymous in-memory file, refilled for every input and decoded through its /proc path:
/// the decoder's own open-and-check path, without touching the disk.
private let memoryFile = fbs_memfd("fuzz-decoder")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    precondition(memoryFile >= 0, "memfd_create failed")
    guard ftruncate(memoryFile, 0) == 0, pwrite(memoryFile, data, size, 0) == size else { return 0 }
    do {
        // A 2 s limit instead of 30: the same code paths, but a mutated header cannot make every
        // run decode and resample 30 s, which would cut the executions per second tenfold.
        let decoded = try SoundDecoder(maximumDuration: 2).decode(fileAt: "/proc/self/fd/\(memoryFile)")
        // What the decoder promises of every buffer it returns.
        let buffer = decoded.buffer
        precondition(buffer.channelCount == 1 || buffer.channelCount == 2)
        precondition(buffer.frameCount > 0 && buffer.duration <= 2.01)
        precondition(buffer.samples.allSatisfy(\.isFinite))
    } catch {
        // Refusing a file is an answer; only a crash, a hang or a broken promise is a finding.
    }
    return 0
}

/// The program's entry (SwiftPM calls an executable's `main` `MODULE_main`): libFuzzer's driver.
@_cdecl("fuzz_decoder_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var vector = argv
    return LLVMFuzzerRunDriver(&count, &vector, fuzzDecoder)
}
