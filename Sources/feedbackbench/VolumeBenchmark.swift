import FeedbackServices
import Glibc

/// Re-registering a 30 s 48 kHz stereo sound at a new volume beside
/// `sox -v 0.5 in.wav out.wav` on the same file. Ours works on the PCM already in memory, which is
/// the point of re-registration; the second line adds writing the adjusted file, the classic
/// "adjust a WAV, then register it again" workflow, for a like-for-like comparison with sox.
struct VolumeBenchmark {
    let directory: String
    let iterations: Int

    func run() {
        let input = "\(directory)/volume-30s-48k-stereo.wav"
        let output = "\(directory)/volume-sox-out.wav"
        let exported = "\(directory)/volume-ours-out.wav"
        writeTwoTones(to: input, rate: 48_000, levels: (0.5, 0.3, 0.8))
        let registry = SoundRegistry()
        let id: SystemSoundID
        do {
            id = try registry.register(fileAt: input)
        } catch {
            fatalError("registration failed: \(error)")
        }
        var multiplier: Float = 0.5
        let ours = repeatMeasure(iterations) {
            do {
                try registry.setVolume(multiplier, for: id)
            } catch {
                fatalError("setVolume failed: \(error)")
            }
            // A different value each time, so no run can be skipped as a repeat.
            multiplier = multiplier == 0.5 ? 0.51 : 0.5
        }
        let oursWithExport = repeatMeasure(iterations) {
            do {
                try registry.setVolume(0.5, for: id)
                try registry.export(id, to: exported)
            } catch {
                fatalError("setVolume and export failed: \(error)")
            }
        }
        guard let sox = soxTimings(
            ["-v", "0.5", input, output], iterations: iterations, figure: "re-register 30 s stereo at volume 0.5",
            ours: ours)
        else { return }
        report(
            "re-register a 30 s 48 kHz stereo sound at volume 0.5",
            ours: ("SoundRegistry.setVolume(_:for:)", ours),
            reference: ("sox -v 0.5 in.wav out.wav", sox),
            target: 0.2)
        print("  \(padded("setVolume + export to 16-bit WAV")) median \(milliseconds(oursWithExport.median)), ratio \(ratio(oursWithExport.median, sox.median))")
    }
}
