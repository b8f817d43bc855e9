import CSndFile
import Foundation
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// The inputs a hostile user tried, replayed against the library: each one
/// with the answer it must get, and the time it may take.

/// What identifies a file system object: a writer must leave both unchanged for a non-regular target.
struct Identity: Equatable {
    let inode: UInt64
    let type: mode_t

    init?(_ path: String) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        inode = UInt64(status.st_ino)
        type = status.st_mode & S_IFMT
    }
}

/// Seconds `body` takes.
private func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = MonotonicClock.now
    try body()
    return MonotonicClock.now - start
}

/// A short tone to write.
private func tone() throws -> PCMBuffer {
    try SoundDecoder().decode(samples: Signal.sines([440], seconds: 0.1, rate: 48_000), sampleRate: 48_000, channelCount: 1)
}

/// The error a throwing call threw, if it was a `SoundError`.
private func soundError(_ body: () throws -> Void) -> SoundError? {
    do {
        try body()
        return nil
    } catch {
        return error as? SoundError
    }
}

/// The `FileError` `body` throws (our own files and the sound files we write), or nil.
private func fileError(_ body: () throws -> Void) -> FileError? {
    do {
        try body()
        return nil
    } catch {
        return error as? FileError
    }
}

/// Linux's `makedev` for small numbers (a macro Swift does not import).
func device(_ major: UInt64, _ minor: UInt64) -> dev_t {
    dev_t(major << 8 | minor)
}

/// A file of `size` bytes that takes no disk space (a hole).
private func sparseFile(_ path: String, size: Int64) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0 && ftruncate(fd, off_t(size)) == 0)
    close(fd)
}

@Suite struct WriterTargetTests {
    let directory = TemporaryDirectory()

    /// `fire 1007 --output d/null` with d/null made by `mknod c 1 3` turned the node into a regular
    /// file; the sound is now written into the device.
    @Test func aCharacterDeviceIsWrittenIntoNotReplaced() throws {
        let node = directory.file("null")
        #expect(mknod(node, S_IFCHR | 0o666, device(1, 3)) == 0, "mknod needs root")
        let before = try #require(Identity(node))
        try SoundFileWriter.write(try tone(), to: node, format: .wav16)
        #expect(Identity(node) == before)
        #expect(before.type == S_IFCHR)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["null"], "no temporary file left")
    }

    /// As root, `--output /dev/null` replaced the machine's /dev/null.
    @Test func devNullStaysTheDevice() throws {
        let before = try #require(Identity("/dev/null"))
        try SoundFileWriter.write(try tone(), to: "/dev/null", format: .wav16)
        #expect(Identity("/dev/null") == before)
        #expect(before.type == S_IFCHR)
    }

    /// A FIFO a player reads gets the whole file, exactly what a regular file would hold.
    @Test func aFIFOWithAReaderGetsTheWholeFile() throws {
        let fifo = directory.file("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)
        let before = try #require(Identity(fifo))
        let sound = try tone()
        let read = readingFIFO(fifo) { () throws(FileError) in try SoundFileWriter.write(sound, to: fifo, format: .wav16) }
        #expect(read.error == nil)
        let regular = directory.file("regular.wav")
        try SoundFileWriter.write(sound, to: regular, format: .wav16)
        #expect(read.bytes == bytes(of: regular))
        #expect(Identity(fifo) == before)
    }

    /// A FIFO no process reads is refused at once instead of blocking forever.
    @Test func aFIFOWithoutAReaderIsRefusedAtOnce() throws {
        let fifo = directory.file("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)
        let before = try #require(Identity(fifo))
        var error: FileError?
        let elapsed = seconds { error = fileError { try SoundFileWriter.write(try tone(), to: fifo, format: .wav16) } }
        #expect(error?.reason == .cannotWrite && error?.detail == "no process is reading the FIFO", "\(String(describing: error))")
        #expect(elapsed < 1)
        #expect(Identity(fifo) == before)
    }

    /// A symbolic link is followed to the regular file it names, which is replaced; the link stays.
    @Test func aSymlinkIsWrittenThroughAndKept() throws {
        let target = directory.file("real.wav")
        let link = directory.file("link.wav")
        _ = directory.write([1, 2, 3], to: "real.wav")
        chmod(target, 0o640)
        #expect(symlink("real.wav", link) == 0)
        let linkBefore = try #require(Identity(link))
        try SoundFileWriter.write(try tone(), to: link, format: .wav16)
        #expect(Identity(link) == linkBefore && linkBefore.type == S_IFLNK)
        #expect(try SoundDecoder().decode(fileAt: target).buffer.frameCount == 4_800)
        var status = stat()
        #expect(stat(target, &status) == 0 && status.st_mode & 0o777 == 0o640, "the replaced file keeps its mode")
    }

    /// What cannot be written into or replaced is refused with `.cannotWrite`, and left as it is.
    @Test func danglingLinksDirectoriesAndBlockDevicesAreRefused() throws {
        let dangling = directory.file("dangling.wav")
        #expect(symlink("nothing-here.wav", dangling) == 0)
        let folder = directory.file("folder.wav")
        #expect(mkdir(folder, 0o700) == 0)
        let block = directory.file("loop")
        #expect(mknod(block, S_IFBLK | 0o600, device(7, 0)) == 0, "mknod needs root")
        for path in [dangling, folder, block] {
            let before = try #require(Identity(path))
            let error = fileError { try SoundFileWriter.write(try tone(), to: path, format: .wav16) }
            #expect(error?.reason == .cannotWrite, "\(path): \(String(describing: error))")
            #expect(Identity(path) == before, "\(path)")
        }
        #expect(Identity(directory.file("nothing-here.wav")) == nil, "nothing was created through the dangling link")
    }

    /// The registry's and the settings' writer refuses a FIFO or device: those files must be regular.
    @Test func settingsAndRegistryWritersRefuseNonRegularTargets() throws {
        let fifo = directory.file("registry.json")
        #expect(mkfifo(fifo, 0o600) == 0)
        let before = try #require(Identity(fifo))
        let error = fileError { try AtomicFile.write(Array("{}".utf8), to: fifo, mode: 0o600) }
        #expect(error?.reason == .cannotWrite)
        #expect(Identity(fifo) == before)
        let devNull = try #require(Identity("/dev/null"))
        #expect(fileError { try AtomicFile.write([1], to: "/dev/null", mode: 0o600) }?.reason == .cannotWrite)
        #expect(Identity("/dev/null") == devNull)
    }
}

@Suite struct BoundedLookupTests {
    /// An event name of ~100 kB of `a-a-a-…` made a fallback list of 50,000 names (7.3 GB).
    @Test func aHundredKilobyteEventNameIsRefusedAtOnce() throws {
        let name = Array(repeating: "a", count: 50_000).joined(separator: "-")
        let resolver = makeResolver(theme: "none", bases: [TemporaryDirectory().path])
        var error: SoundThemeError?
        let elapsed = seconds {
            do {
                _ = try resolver.resolve(name)
            } catch let thrown as SoundThemeError {
                error = thrown
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(error?.reason == .invalidEventName)
        #expect(elapsed < 0.1)
        #expect((error?.description.count ?? .max) < 200, "the message does not echo 100 kB")
        let longest = String(repeating: "a", count: SoundThemeResolver.maximumEventNameLength)
        #expect(throws: Never.self) { try resolver.resolve(longest) }
    }

    /// The fallback list is slices of the name: linear in its length, however many dashes.
    @Test func nameFallbacksAreLinear() {
        let name = Array(repeating: "a", count: 50_000).joined(separator: "-")
        var names: [Substring] = []
        let elapsed = seconds { names = SoundThemeResolver.nameFallbacks(name) }
        #expect(names.count == 50_000)
        #expect(names.last == "a")
        #expect(elapsed < 1)
    }

    /// A theme `Inherits` chain 20,000 deep crashed the lookup (recursion, SIGSEGV).
    @Test func anInheritanceChainTwentyThousandDeepEnds() throws {
        // 40,000 files and directories: on tmpfs they take a second, on this machine's /tmp ten.
        var template = Array("/dev/shm/feedbackservices-chain-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) } != nil
        let fallback = TemporaryDirectory()
        let root = made ? String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : fallback.path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for level in 0..<20_000 {
            let folder = root + "/t\(level)"
            mkdir(folder, 0o755)
            let text = Array("[Sound Theme]\nName=t\(level)\nInherits=t\(level + 1)\nDirectories=stereo\n".utf8)
            let fd = open(folder + "/index.theme", O_WRONLY | O_CREAT, 0o644)
            #expect(write(fd, text, text.count) == text.count)
            close(fd)
        }
        let resolver = makeResolver(theme: "t0", bases: [root])
        var chain: [SoundThemeIndex] = []
        var result: SoundLookupResult?
        let elapsed = try seconds {
            chain = resolver.inheritance(of: "t0")
            result = try resolver.resolve("bell")
        }
        #expect(chain.map(\.name) == (0...SoundThemeResolver.maximumInheritanceDepth).map { "t\($0)" })
        if case .notFound = result {} else { Issue.record("expected notFound, got \(String(describing: result))") }
        #expect(elapsed < 1)
    }

    /// A theme listing thousands of parents and directories is searched within the bounds.
    @Test func fanOutIsBounded() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        let parents = (0..<2_000).map { "p\($0)" }
        tree.theme("wide", in: base, inherits: parents, directories: (0..<2_000).map { ("d\($0)", nil) })
        for parent in parents.prefix(100) { tree.theme(parent, in: base) }
        let resolver = makeResolver(theme: "wide", bases: [base])
        var chain: [SoundThemeIndex] = []
        let elapsed = try seconds {
            chain = resolver.inheritance(of: "wide")
            _ = try resolver.resolve("bell")
        }
        #expect(chain.count == SoundThemeResolver.maximumThemesPerChain)
        #expect(chain.first?.directories.count == SoundThemeResolver.maximumDirectoriesPerTheme)
        #expect(elapsed < 1)
    }

    /// A 2 GB `gtk-3.0/settings.ini` crashed the lookup (SIGABRT): it is skipped unread.
    @Test func aTwoGigabyteGTKSettingsFileIsSkipped() throws {
        let config = TemporaryDirectory()
        mkdir(config.file("gtk-3.0"), 0o755)
        sparseFile(config.file("gtk-3.0/settings.ini"), size: 2 << 30)
        var selection: SoundThemeSelection?
        let elapsed = try seconds {
            selection = try SoundThemeSelection.current(environment: ["XDG_CONFIG_HOME": config.path, "XDG_CONFIG_DIRS": config.path])
        }
        #expect(selection?.source == .fallback)
        #expect(elapsed < 0.1)
    }

    /// An `index.theme` over the settings bound is not read: the theme counts as not installed.
    @Test func anOversizedIndexThemeIsNotRead() throws {
        let tree = ThemeTree()
        let base = tree.base("system")
        tree.theme("huge", in: base)
        sparseFile(base + "/huge/index.theme", size: Int64(SettingsFile.sizeLimit) + 1)
        #expect(makeResolver(theme: "huge", bases: [base]).inheritance(of: "huge").isEmpty)
    }
}

@Suite struct SettingsBoundTests {
    /// A 1 GB settings file made every `fire` run 350 s at 2.4 GB: it is refused unread now, and
    /// the profile is the default.
    @Test func aGigabyteSettingsFileIsNotRead() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("settings")
        sparseFile(path, size: 1 << 30)
        let settings = FeedbackSettings(path: path)
        var profile: FeedbackProfile?
        let elapsed = seconds { profile = settings.profile }
        #expect(profile == .full)
        #expect(elapsed < 0.1)
        let error = fileError { _ = try settings.readFileProfile() }
        #expect(error?.reason == .tooLarge(size: 1 << 30, limit: SettingsFile.sizeLimit), "\(String(describing: error))")
        #expect(
            fileError { try settings.store(.quiet) }?.reason == .tooLarge(size: 1 << 30, limit: SettingsFile.sizeLimit),
            "a file it cannot read is not rewritten")
    }

    /// A FIFO as the settings file is never opened for reading (which would wait for a writer).
    @Test func aFIFOSettingsFileDoesNotHang() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("settings")
        #expect(mkfifo(path, 0o600) == 0)
        let settings = FeedbackSettings(path: path)
        var profile: FeedbackProfile?
        let elapsed = seconds { profile = settings.profile }
        #expect(profile == .full)
        #expect(elapsed < 0.1)
        #expect(fileError { _ = try settings.readFileProfile() }?.reason == .notARegularFile)
    }

    /// A settings file at the bound is still read.
    @Test func aSettingsFileAtTheBoundIsRead() throws {
        let directory = TemporaryDirectory()
        let line = "profile=quiet\n"
        let padding = String(repeating: "#", count: SettingsFile.sizeLimit - line.utf8.count - 1) + "\n"
        let path = directory.write(Array((padding + line).utf8), to: "settings")
        #expect(FeedbackSettings(path: path).profile == .quiet)
    }
}

@Suite struct DecoderAnswerTests {
    let directory = TemporaryDirectory()

    /// An Ogg file with any trailing byte was refused as lasting 209,146,758,205,323 s: libsndfile
    /// cannot tell its length then, so it is counted by decoding.
    @Test(arguments: [(SoundFileFormat.oggVorbis, "ogg"), (.oggOpus, "opus")])
    func anOggFileWithATrailingByteDecodes(format: SoundFileFormat, suffix: String) throws {
        let path = directory.file("trailing.\(suffix)")
        let buffer = try SoundDecoder().decode(samples: Signal.sines([440, 660], seconds: 1, rate: 48_000), sampleRate: 48_000, channelCount: 2)
        try SoundFileWriter.write(buffer, to: path, format: format)
        let clean = try SoundDecoder().decode(fileAt: path)
        let fd = open(path, O_WRONLY | O_APPEND)
        #expect(write(fd, "Z", 1) == 1)
        close(fd)
        let decoded = try SoundDecoder().decode(fileAt: path)
        #expect(decoded.buffer.frameCount == clean.buffer.frameCount)
        #expect(abs(decoded.buffer.duration - 1) < 0.05)
    }

    /// An Ogg stream of unknown length is still refused past the limit, by counting while decoding.
    @Test func anOggFileOfUnknownLengthIsBoundedWhileDecoding() throws {
        let path = directory.file("long.ogg")
        let buffer = try SoundDecoder(maximumDuration: nil).decode(
            samples: [Float](repeating: 0.1, count: 48_000 * 3), sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(buffer, to: path, format: .oggVorbis)
        let fd = open(path, O_WRONLY | O_APPEND)
        #expect(write(fd, "Z", 1) == 1)
        close(fd)
        let error = soundError { _ = try SoundDecoder(maximumDuration: 2).decode(fileAt: path) }
        guard case .exceedsMaximumDuration(let seconds, _)? = error?.reason else {
            Issue.record("expected exceedsMaximumDuration, got \(String(describing: error))")
            return
        }
        #expect(seconds > 2 && seconds < 3, "what was read before the limit stopped it")
    }

    /// A symbolic link loop is an input that cannot be opened (66 in the CLI), not an I/O error (74).
    @Test func aSymlinkLoopIsNotFound() {
        let a = directory.file("a.wav")
        let b = directory.file("b.wav")
        #expect(symlink(b, a) == 0 && symlink(a, b) == 0)
        #expect(soundError { _ = try SoundDecoder().decode(fileAt: a) }?.reason == .notFound)
    }

    /// The rate of the 170 KB FLAC that decoded at 1.67 GB (655,350 Hz) is now refused from its
    /// header, before any audio is read.
    @Test func aRateAboveTheLimitIsRefusedFromTheHeader() throws {
        let path = directory.file("fast.flac")
        let bytes = try SoundFileWriter.encode(path: path, format: .flac16, sampleRate: 655_350, channelCount: 8) { handle in
            let silence = [Float](repeating: 0, count: 8 * 65_535)
            _ = sf_writef_float(handle, silence, 65_535)
        }
        try AtomicFile.write(bytes, to: path, mode: 0o644)
        var error: SoundError?
        let elapsed = seconds { error = soundError { _ = try SoundDecoder().decode(fileAt: path) } }
        #expect(error?.reason == .invalidSampleRate(655_350, supported: SoundDecoder.supportedSampleRates))
        #expect(elapsed < 0.1)
    }

    /// Found by fuzzing: a float WAV whose finite samples reach ±2.3e38 overflowed to infinity in
    /// the resampler, breaking the promise that a buffer is always finite. It is refused now.
    @Test func hugeFloatSamplesThatOverflowWhenConvertedAreRefused() throws {
        let input = "UklGRkgBAABXQVZFZm10IBAAAAADAAEAIlYAAIhYAQAEACAAZmFjdAQAAABAAAAAUEVBSxAAAAABAAAA0I4NawK+/z4/AAAAZGF0YQABAAAAKAAAAD8NgD0n7f49oEZsb2ESPD52JXY+hC2WPrzsrj7u7MQ+rgB8vpbWQr6eGQa+Apj6Pscr/z6+nhkGvgKY+j7HK/8+Ar7/Pg=="
        let path = directory.write(Array(try #require(Data(base64Encoded: input))), to: "huge-floats.wav")
        let error = soundError { _ = try SoundDecoder().decode(fileAt: path) }
        guard case .invalidSamples(let why)? = error?.reason else {
            Issue.record("expected invalidSamples, got \(String(describing: error))")
            return
        }
        #expect(why.hasPrefix("sample values too large to convert"))
    }

    /// Found by fuzzing: two frames at 310,144 Hz resampled to no frame at all, and the decoder
    /// returned an empty buffer; an empty sound is `.empty`.
    @Test func aSoundShorterThanOneFrameAtTheEngineRateIsEmpty() throws {
        let input = "UklGRiQBAABXQVZFZm10IBAAAAABAAgAgLsEAAC4CwAAABAAZGF0YQABgFJJZkaoJAEAAFdBVkVmbQAAANo1MToICZEQAAAAAQA="
        let path = directory.write(Array(try #require(Data(base64Encoded: input))), to: "two-frames.wav")
        #expect(soundError { _ = try SoundDecoder().decode(fileAt: path) }?.reason == .empty)
    }

    /// Eight channels are down-mixed while they are read: the result matches the down-mix of the
    /// whole file at once.
    @Test func eightChannelsAreDownmixedWhileRead() throws {
        let path = directory.file("surround.wav")
        let samples = Signal.sines([200, 300, 400, 500, 600, 700, 800, 900], amplitude: 0.1, seconds: 0.5, rate: 48_000)
        let bytes = try SoundFileWriter.encode(path: path, format: .wavFloat, sampleRate: 48_000, channelCount: 8) { handle in
            _ = sf_writef_float(handle, samples, sf_count_t(samples.count / 8))
        }
        try AtomicFile.write(bytes, to: path, mode: 0o644)
        let decoded = try SoundDecoder().decode(fileAt: path)
        #expect(decoded.sourceChannelCount == 8 && decoded.buffer.channelCount == 2)
        let whole = Downmix.toStereo(samples, channels: 8, map: nil)
        #expect(Analysis.maximumDifference(decoded.buffer.samples, whole) == 0)
    }
}

@Suite struct SoundExportTests {
    let directory = TemporaryDirectory()

    /// A 3-channel 44.1 kHz source in `format`.
    func source(_ format: SoundFileFormat, suffix: String, rate: Int = 44_100, channels: Int = 3) throws -> String {
        let path = directory.file("source.\(suffix)")
        let samples = Signal.sines([220, 330, 440, 550].prefix(channels).map { $0 }, amplitude: 0.6, seconds: 0.5, rate: rate)
        let bytes = try SoundFileWriter.encode(path: path, format: format, sampleRate: rate, channelCount: channels) { handle in
            _ = sf_writef_float(handle, samples, sf_count_t(samples.count / channels))
        }
        try AtomicFile.write(bytes, to: path, mode: 0o644)
        return path
    }

    /// A file's format, rate, channels and samples as 32-bit integers (left-justified).
    func contents(_ path: String) -> (format: Int32, rate: Int32, channels: Int32, samples: [Int32]) {
        var info = SF_INFO()
        let handle = sf_open(path, Int32(SFM_READ), &info)
        defer { sf_close(handle) }
        var samples = [Int32](repeating: 0, count: Int(info.frames) * Int(info.channels))
        _ = sf_readf_int(handle, &samples, info.frames)
        return (info.format, info.samplerate, info.channels, samples)
    }

    /// `volume FILE 1 --export` of a 44.1 kHz source wrote a 48 kHz file: an export keeps the
    /// source's rate, channels and encoding, and at volume 1 its samples bit for bit.
    @Test(arguments: [
        (SoundFileFormat.wav16, "wav"), (.wav24, "wav"), (.wavFloat, "wav"), (.flac16, "flac"), (.aiff16, "aiff"),
        (.cafALAC16, "caf"),
    ])
    func anExportAtVolumeOneIsBitIdentical(format: SoundFileFormat, suffix: String) throws {
        let path = try source(format, suffix: suffix)
        let exported = directory.file("exported.\(suffix)")
        try SoundExport.write(fileAt: path, volume: .unchanged, to: exported)
        let original = contents(path)
        let copy = contents(exported)
        #expect(copy.format == original.format && copy.rate == 44_100 && copy.channels == 3)
        #expect(copy.samples == original.samples)
    }

    /// At another volume the source's own samples are scaled, at its own rate and depth.
    @Test func anExportScalesTheSourceSamples() throws {
        let path = try source(.wav16, suffix: "wav", channels: 2)
        let exported = directory.file("half.wav")
        try SoundExport.write(fileAt: path, volume: VolumeAdjustment(multiplier: 0.5), to: exported)
        let original = contents(path)
        let half = contents(exported)
        #expect(half.rate == 44_100 && half.channels == 2 && half.format == original.format)
        let worst = zip(original.samples, half.samples).map { abs(Int64($0 >> 16) - 2 * Int64($1 >> 16)) }.max() ?? .max
        #expect(worst <= 1, "each 16-bit sample halved, rounded")
        #expect(half.samples.allSatisfy { $0 & 0xFFFF == 0 }, "rounded to 16 bits")
    }

    /// The limiter keeps an export at the ceiling, as it keeps the registered sound.
    @Test func aLimitedExportStaysUnderTheCeiling() throws {
        let path = try source(.wav24, suffix: "wav", channels: 2)
        let exported = directory.file("loud.wav")
        try SoundExport.write(fileAt: path, volume: VolumeAdjustment(multiplier: 4, limiting: .peakLimiter(ceiling: 0.9)), to: exported)
        let peak = contents(exported).samples.map { abs(Double($0)) / Double(1 << 31 as Int64) }.max() ?? 0
        #expect(peak <= 0.9 + 1e-6 && peak > 0.85)
    }
}
