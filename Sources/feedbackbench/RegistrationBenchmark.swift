import FeedbackServices
import Glibc

/// Issue 2's figure: registering a 30 s 44.1 kHz stereo WAV (decode + resample to 48 kHz) beside
/// `sox in.wav -r 48000 out.wav` on the same file.
struct RegistrationBenchmark {
    let directory: String
    let iterations: Int

    func run() {
        let input = "\(directory)/registration-30s-44k1-stereo.wav"
        let output = "\(directory)/sox-out.wav"
        writeTestSignal(to: input)
        let registry = SoundRegistry()
        let ours = repeatMeasure(iterations) {
            do {
                let id = try registry.register(fileAt: input)
                try registry.dispose(id)
            } catch {
                fatalError("registration failed: \(error)")
            }
        }
        guard programExists("sox") else {
            print("register 30 s WAV: ours median \(milliseconds(ours.median)); sox is not installed, no ratio")
            return
        }
        let sox = repeatMeasure(iterations) {
            guard runProgram("sox", [input, "-r", "48000", output]) == 0 else { fatalError("sox failed") }
        }
        report(
            "register a 30 s 44.1 kHz stereo WAV (decode + resample to 48 kHz)",
            ours: ("SoundRegistry.register(fileAt:)", ours),
            reference: ("sox in.wav -r 48000 out.wav", sox),
            target: 0.5)
    }

    /// 30 s of two tones with a slow sweep, 16-bit stereo at 44.1 kHz.
    private func writeTestSignal(to path: String) {
        let rate = 44_100
        let frames = 30 * rate
        var samples = [Float](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let t = Double(frame) / Double(rate)
            samples[frame * 2] = Float(0.4 * sin(2 * .pi * 440 * t) + 0.1 * sin(2 * .pi * (200 + 50 * t) * t))
            samples[frame * 2 + 1] = Float(0.4 * sin(2 * .pi * 660 * t))
        }
        do {
            let buffer = try SoundDecoder(sampleRate: rate, maximumDuration: nil)
                .decode(samples: samples, sampleRate: rate, channelCount: 2)
            try SoundFileWriter.write(buffer, to: path, format: .wav16)
        } catch {
            fatalError("cannot write the test signal: \(error)")
        }
    }
}
