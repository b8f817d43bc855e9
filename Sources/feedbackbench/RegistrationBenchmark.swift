import FeedbackServices
import Glibc

/// Registering a 30 s 44.1 kHz stereo WAV (decode + resample to 48 kHz) beside
/// `sox in.wav -r 48000 out.wav` on the same file.
struct RegistrationBenchmark {
    let directory: String
    let iterations: Int

    func run() {
        let input = "\(directory)/registration-30s-44k1-stereo.wav"
        let output = "\(directory)/sox-out.wav"
        writeTwoTones(to: input, rate: 44_100, levels: (0.4, 0.1, 0.4))
        let registry = SoundRegistry()
        let ours = repeatMeasure(iterations) {
            do {
                let id = try registry.register(fileAt: input)
                try registry.dispose(id)
            } catch {
                fatalError("registration failed: \(error)")
            }
        }
        guard let sox = soxTimings(
            [input, "-r", "48000", output], iterations: iterations, figure: "register 30 s WAV", ours: ours)
        else { return }
        report(
            "register a 30 s 44.1 kHz stereo WAV (decode + resample to 48 kHz)",
            ours: ("SoundRegistry.register(fileAt:)", ours),
            reference: ("sox in.wav -r 48000 out.wav", sox),
            target: 0.5)
    }
}
