import FeedbackServices
import Glibc

/// Issue 6's figure: re-registering a 30 s 48 kHz stereo sound at a new volume beside
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
        writeTestSignal(to: input)
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
        guard programExists("sox") else {
            print("re-register 30 s stereo at volume 0.5: ours median \(milliseconds(ours.median)); sox is not installed, no ratio")
            return
        }
        let sox = repeatMeasure(iterations) {
            guard runProgram("sox", ["-v", "0.5", input, output]) == 0 else { fatalError("sox failed") }
        }
        report(
            "re-register a 30 s 48 kHz stereo sound at volume 0.5",
            ours: ("SoundRegistry.setVolume(_:for:)", ours),
            reference: ("sox -v 0.5 in.wav out.wav", sox),
            target: 0.2)
        print("  \(padded("setVolume + export to 16-bit WAV")) median \(milliseconds(oursWithExport.median)), ratio \(ratio(oursWithExport.median, sox.median))")
    }

    /// 30 s of two tones, 16-bit stereo at 48 kHz, peaking at 0.8.
    private func writeTestSignal(to path: String) {
        let rate = 48_000
        let frames = 30 * rate
        var samples = [Float](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let t = Double(frame) / Double(rate)
            samples[frame * 2] = Float(0.5 * sin(2 * .pi * 440 * t) + 0.3 * sin(2 * .pi * (200 + 50 * t) * t))
            samples[frame * 2 + 1] = Float(0.8 * sin(2 * .pi * 660 * t))
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
