import Dispatch
import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

/// A render into a file is bounded in length (`FileOutput.maximumDuration`),
/// streams in blocks, can be stopped between blocks, and never replaces what is not a regular file.
@Suite struct FileOutputBoundsTests {
    let second = Signal.buffer(Signal.sines([440], amplitude: 0.25, seconds: 1, rate: 8_000), channels: 1, rate: 8_000)

    /// The exact play counts from the issue (overflow, 23.8 GB, `Int.max − 1`) and a cursor moved
    /// as far as a Double goes: refused before anything is rendered, in well under a second,
    /// naming the limit; the play fails once; no file, no temporary file.
    @Test(arguments: [192_153_584_101_141, 100_000, PlaybackOptions.forever - 1, 0])
    func aRenderOverTheLimitIsRefusedAtOnce(playCount: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("long.wav")
        let output = FileOutput(path: path, sampleRate: 8_000)
        let ends = EndRecorder()
        if playCount == 0 {
            output.play(second, completion: ends.completion)
            output.advance(by: 1e300)
        } else {
            output.play(second, options: PlaybackOptions(playCount: playCount), completion: ends.completion)
        }
        let started = MonotonicClock.now
        do throws(FileError) {
            try output.finish()
            Issue.record("a render over the limit was written")
        } catch {
            guard case .tooLong(let seconds, let limit) = error.reason else {
                Issue.record("expected .tooLong, got \(error)")
                return
            }
            #expect(limit == FileOutput.maximumDuration)
            #expect(seconds > limit)
            #expect(error.description.contains("more than the 600 s a rendered file may last"), "\(error)")
        }
        #expect(MonotonicClock.now - started < 0.5)
        guard case .failed = ends.wait()?.end else {
            Issue.record("expected .failed")
            return
        }
        usleep(50_000)
        #expect(ends.all.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    /// The limit itself is a file; one frame more is not. 8 kHz keeps the 10 minutes at 9.6 MB.
    @Test func exactlyTheLimitIsWrittenAndOneFrameMoreIsNot() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("limit.wav")
        let output = FileOutput(path: path, sampleRate: 8_000)
        output.play(second, options: PlaybackOptions(playCount: Int(FileOutput.maximumDuration)))
        #expect(try output.finish() == FileOutput.maximumDuration)
        let file = try SoundFileReader(path: path)
        #expect(file.info.frames == 4_800_000 && file.info.channels == 2)

        let over = FileOutput(path: directory.file("over.wav"), sampleRate: 8_000)
        over.play(second, options: PlaybackOptions(playCount: Int(FileOutput.maximumDuration)))
        over.play(Signal.buffer([0.1], channels: 1, rate: 8_000))
        over.advance(by: FileOutput.maximumDuration)
        over.play(Signal.buffer([0.1], channels: 1, rate: 8_000))
        #expect(throws: FileError.self) { try over.finish() }
    }

    /// A sound repeating forever is still cut where the file ends, and counts nothing towards it.
    @Test func aSoundRepeatingForeverIsCutAtTheCursor() throws {
        let directory = TemporaryDirectory()
        let output = FileOutput(path: directory.file("forever.wav"), sampleRate: 8_000)
        let ends = EndRecorder()
        output.play(second, options: PlaybackOptions(playCount: PlaybackOptions.forever), completion: ends.completion)
        output.advance(by: 2.5)
        #expect(try output.finish() == 2.5)
        #expect(ends.wait()?.end == .stopped)
    }

    /// Stopped between blocks: nothing is written, the file that was there stays, no temporary
    /// file is left, every play ends `.cancelled` once.
    @Test func stoppingARenderLeavesTheOldFileAndCancelsThePlays() throws {
        let directory = TemporaryDirectory()
        let path = directory.write(Array("old".utf8), to: "kept.wav")
        let output = FileOutput(path: path, sampleRate: 8_000)
        let ends = EndRecorder()
        output.play(second, options: PlaybackOptions(playCount: 300), completion: ends.completion)
        var asked = 0
        let length = try output.finish(stoppingWhen: {
            asked += 1
            return asked > 10
        })
        #expect(length == nil)
        #expect(asked == 11, "asked once per block until it said stop")
        #expect(ends.wait()?.end == .cancelled)
        usleep(50_000)
        #expect(ends.all.count == 1)
        #expect(bytes(of: path) == Array("old".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["kept.wav"])
    }

    /// What is at the path is treated by the writers' one rule (`AtomicFile`), never replaced
    /// unless it is a regular file: a FIFO nobody reads is refused at once, a device node is
    /// written into (as root, where `mknod` works), a symbolic link is followed and stays a link,
    /// a directory is refused. No temporary file is left.
    @Test func whatIsNotARegularFileIsNeverReplaced() throws {
        let directory = TemporaryDirectory()
        let fifo = directory.file("fifo.wav")
        #expect(mkfifo(fifo, 0o600) == 0)
        let target = directory.write(Array("target".utf8), to: "target.wav")
        let link = directory.file("link.wav")
        #expect(symlink(target, link) == 0)
        let folder = directory.file("folder.wav")
        #expect(mkdir(folder, 0o700) == 0)
        var cases: [(path: String, written: Bool)] = [(fifo, false), (link, true), (folder, false)]
        let node = directory.file("null")
        if mknod(node, S_IFCHR | 0o666, device(1, 3)) == 0 { cases.append((node, true)) }
        for (path, written) in cases {
            let before = try #require(Identity(path))
            let output = FileOutput(path: path, sampleRate: 8_000)
            output.play(second)
            let started = MonotonicClock.now
            do throws(FileError) {
                try output.finish()
                #expect(written, "\(path) was written")
            } catch {
                #expect(!written, "\(path): \(error)")
                #expect(error.reason == .cannotWrite, "\(error)")
            }
            #expect(MonotonicClock.now - started < 1)
            #expect(Identity(path) == before, "\(path) was replaced")
        }
        #expect(try SoundDecoder().decode(fileAt: target).buffer.duration == 1, "the link's target got the file")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!left.contains { $0.contains(".tmp-") }, "\(left)")
    }

    /// A FIFO a player reads gets the whole file, byte for byte what a regular file gets.
    @Test func aFIFOWithAReaderGetsTheWholeFile() throws {
        let directory = TemporaryDirectory()
        let regular = directory.file("regular.wav")
        let fifo = directory.file("fifo.wav")
        #expect(mkfifo(fifo, 0o600) == 0)
        let second = self.second
        let render = { @Sendable (path: String) throws(FileError) in
            let output = FileOutput(path: path, sampleRate: 8_000)
            output.play(second, options: PlaybackOptions(playCount: 3))
            try output.finish()
        }
        try render(regular)
        let read = readingFIFO(fifo) { () throws(FileError) in try render(fifo) }
        #expect(read.error == nil)
        #expect(read.bytes == bytes(of: regular))
        #expect(bytes(of: regular).count > 3 * 8_000 * 4)
    }

    /// A fade of any length, even infinite, is a number of frames, never a trap.
    @Test func anInfiniteFadeDoesNotTrap() throws {
        let directory = TemporaryDirectory()
        let output = FileOutput(path: directory.file("fade.wav"), sampleRate: 8_000)
        let handle = output.play(second, options: PlaybackOptions(fadeIn: .infinity))
        handle.fadeOut(duration: .infinity)
        handle.setVolume(0.5, ramp: .nan)
        #expect(try output.finish() == 1)
    }
}
