import FeedbackServices
import FoundationEssentials
import SoundSynthesis
import Testing

/// The shipped theme: generated deterministically, and each sound what it claims to be.
struct ThemeGeneratorTests {
    @Test func regeneratingGivesTheCommittedFilesByteForByte() throws {
        let tree = ThemeTree()
        let written = try ShippedTheme.write(to: tree.root)
        let committed = shippedSoundFiles().map { "\(ShippedTheme.name)/stereo/\($0)" } + ["\(ShippedTheme.name)/index.theme"]
        #expect(written == committed.sorted(), "the committed theme has missing or extra files: run scripts/generate-sound-theme")
        for file in written {
            let fresh = FileManager.default.contents(atPath: tree.root + "/" + file)
            let shipped = FileManager.default.contents(atPath: repositoryThemesDirectory + "/" + file)
            #expect(fresh != nil && fresh == shipped, "\(file) differs from a fresh generation")
        }
    }

    @Test func renderingTwiceGivesTheSameSamples() {
        for sound in ShippedTheme.sounds.prefix(20) {
            #expect(sound.render() == sound.render(), "\(sound.event)")
        }
    }

    @Test func shippedFilesArePlain16BitWAVWithinLimitsAndWithoutEndClicks() throws {
        let files = shippedSoundFiles()
        #expect(files.count == ShippedTheme.sounds.count)
        let limit = Float(0.8912509)  // −1 dBFS
        let lsb = Float(1) / 32768
        for file in files {
            let decoded = try SoundDecoder().decode(fileAt: shippedThemeDirectory + "/stereo/" + file)
            let buffer = decoded.buffer
            #expect(decoded.sourceFormat == .wav16, "\(file)")
            #expect(decoded.sourceSampleRate == 48_000, "\(file)")
            #expect(decoded.sourceChannelCount <= 2, "\(file)")
            #expect(buffer.peak <= limit, "\(file) peaks at \(buffer.peak)")
            #expect(buffer.peak > 0.01, "\(file) is nearly silent")
            let samples = buffer.samples
            let channels = buffer.channelCount
            #expect(abs(samples[0]) <= lsb && abs(samples[samples.count - 1]) <= lsb, "\(file) starts or ends off zero")
            // Within the first and last five frames the level stays under −30 dBFS: a ramp, not a step.
            let edge = 5 * channels
            let head = samples.prefix(edge).map(abs).max() ?? 0
            let tail = samples.suffix(edge).map(abs).max() ?? 0
            #expect(head < 0.0316 && tail < 0.0316, "\(file) jumps at an end: \(head), \(tail)")
            #expect(buffer.duration < 4, "\(file) lasts \(buffer.duration) s")
        }
    }

    /// Every DTMF key holds exactly its ITU-T Q.23 pair: both tones within 1 dB of each other, and
    /// every other frequency on a 25 Hz grid from 300 Hz to 4 kHz (away from the two tones), every
    /// other DTMF frequency and every second and third harmonic at least 40 dB below the weaker tone.
    @Test(arguments: ShippedTheme.dtmfPairs.map(\.key))
    func dtmfHoldsExactlyItsTwoFrequencies(key: String) throws {
        let pair = try #require(ShippedTheme.dtmfPairs.first { $0.key == key })
        let buffer = try SoundDecoder().decode(fileAt: shippedThemeDirectory + "/stereo/dtmf-\(key).wav").buffer
        let samples = buffer.samples[...]
        let low = goertzelLevel(samples, frequency: pair.low, rate: buffer.sampleRate)
        let high = goertzelLevel(samples, frequency: pair.high, rate: buffer.sampleRate)
        #expect(abs(low - high) < 1, "twist \(low - high) dB")
        #expect(min(low, high) > -20, "tones at \(low), \(high) dBFS")
        var others = Array(stride(from: 300.0, through: 4000, by: 25)).filter { abs($0 - pair.low) > 60 && abs($0 - pair.high) > 60 }
        others += [697.0, 770, 852, 941, 1209, 1336, 1477, 1633].filter { $0 != pair.low && $0 != pair.high }
        others += [2 * pair.low, 3 * pair.low, 2 * pair.high, 3 * pair.high, pair.high - pair.low, pair.high + pair.low]
        let worst = others.map { goertzelLevel(samples, frequency: $0, rate: buffer.sampleRate) }.max() ?? -200
        let margin = min(low, high) - worst
        #expect(margin >= 40, "dtmf-\(key): strongest other frequency only \(margin) dB below the tones")
    }

    @Test func triToneHasThreeDistinctNotes() throws {
        let buffer = try SoundDecoder().decode(fileAt: shippedThemeDirectory + "/stereo/message-new-instant.wav").buffer
        let frame = 960
        let samples = buffer.samples
        let frames = stride(from: 0, to: samples.count - frame, by: frame).map { samples[$0..<($0 + frame)] }
        let energies = frames.map { slice in slice.reduce(0) { $0 + Double($1 * $1) } }
        let loudest = energies.max() ?? 0
        let grid = Array(stride(from: 400.0, through: 5000, by: 10))
        var notes: [Double] = []
        for (index, slice) in frames.enumerated() where energies[index] > loudest * 0.05 {
            let levels = grid.map { goertzelLevel(slice, frequency: $0, rate: buffer.sampleRate) }
            let dominant = grid[levels.indices.max { levels[$0] < levels[$1] }!]
            if let last = notes.last, abs(dominant - last) / last < 0.03 { continue }
            notes.append(dominant)
        }
        #expect(notes.count == 3, "notes found: \(notes)")
        for (found, expected) in zip(notes, ShippedTheme.triToneNotes) {
            #expect(abs(found - expected) / expected < 0.02, "found \(found) Hz, expected \(expected) Hz")
        }
        #expect(Set(notes.map { Int($0) }).count == 3)
    }

    @Test func telephonyCadencesAreTheCEPTOnes() throws {
        // Busy: 0.5 s on / 0.5 s off; congestion: 0.25 s / 0.25 s; both 425 Hz.
        for (event, on) in [("phone-outgoing-busy", 0.5), ("phone-outgoing-congestion", 0.25)] {
            let buffer = try SoundDecoder().decode(fileAt: shippedThemeDirectory + "/stereo/\(event).wav").buffer
            let rate = Double(buffer.sampleRate)
            let samples = buffer.samples
            let cycles = Int((buffer.duration / (2 * on)).rounded())
            #expect(cycles >= 2, "\(event)")
            for cycle in 0..<cycles {
                let onStart = Int((Double(cycle) * 2 * on + 0.05) * rate)
                let onEnd = Int((Double(cycle) * 2 * on + on - 0.05) * rate)
                let offStart = Int((Double(cycle) * 2 * on + on + 0.03) * rate)
                let offEnd = min(Int((Double(cycle + 1) * 2 * on - 0.03) * rate), samples.count)
                #expect(goertzelLevel(samples[onStart..<onEnd], frequency: 425, rate: buffer.sampleRate) > -12, "\(event) on \(cycle)")
                #expect((samples[offStart..<offEnd].map(abs).max() ?? 1) < 0.001, "\(event) off \(cycle)")
            }
        }
    }
}
