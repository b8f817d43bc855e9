// libFuzzer target: file bytes → SoundDecoder, the way `feedbackctl info` and registration read
// a file. Built and run by scripts/fuzz.
import FeedbackServices
import FuzzSupport
import Glibc

private let input = MemoryFile(name: "fuzz-decoder")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard input.fill(data, size) else { return 0 }
    do {
        // A 2 s limit instead of 30: the same code paths, but a mutated header cannot make every
        // run decode and resample 30 s, which would cut the executions per second tenfold.
        let decoded = try SoundDecoder(maximumDuration: 2).decode(fileAt: input.path)
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

/// The program's entry (SwiftPM names an executable's `main` `MODULE_main`): libFuzzer's driver.
@_cdecl("fuzz_decoder_main")
func fuzzMain(_ argc: CInt, _ argv: ArgumentVector) -> CInt { runFuzzer(argc, argv, fuzzDecoder) }
