internal import CSndFile
import Glibc

/// Writes PCM buffers to sound files with libsndfile.
///
/// A file is written whole or not at all: the samples go to a temporary file beside the destination,
/// which is flushed and then renamed over it, so a reader never sees half a file and a failure
/// leaves whatever was there before untouched.
public enum SoundFileWriter {
    /// Writes `buffer` to `path` in `format` (`sf_open_fd` + `sf_writef_float`, then `rename`).
    ///
    /// Integer encodings clip samples beyond ±1 (`SFC_SET_CLIPPING`) rather than wrapping them.
    /// The file gets mode 0644 less the process umask.
    /// - Throws: `SoundError` with `.writeFailed` and libsndfile's or the system's message.
    public static func write(_ buffer: PCMBuffer, to path: String, format: SoundFileFormat) throws(SoundError) {
        let temporaryPath = "\(path).tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd: Int32
        do {
            fd = try System.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o644)
        } catch {
            throw SoundError(.writeFailed, source: path, detail: error.description)
        }
        var committed = false
        defer {
            if !committed { unlink(temporaryPath) }
        }
        do {
            try writeSamples(buffer, fd: fd, format: format, path: path)
        } catch {
            close(fd)
            throw error
        }
        guard fsync(fd) == 0, close(fd) == 0 else {
            throw SoundError(.writeFailed, source: path, detail: Errno.current.description)
        }
        guard rename(temporaryPath, path) == 0 else {
            throw SoundError(.writeFailed, source: path, detail: Errno.current.description)
        }
        committed = true
    }

    private static func writeSamples(
        _ buffer: PCMBuffer, fd: Int32, format: SoundFileFormat, path: String
    ) throws(SoundError) {
        var info = SF_INFO()
        info.samplerate = Int32(buffer.sampleRate)
        info.channels = Int32(buffer.channelCount)
        info.format = format.rawValue
        guard sf_format_check(&info) == SF_TRUE else {
            throw SoundError(
                .writeFailed, source: path,
                detail: "libsndfile cannot write \(format) at \(buffer.sampleRate) Hz, \(buffer.channelCount) ch")
        }
        guard let handle = sf_open_fd(fd, Int32(SFM_WRITE), &info, 0) else {
            throw SoundError(.writeFailed, source: path, detail: String(cString: sf_strerror(nil)))
        }
        _ = sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        let frames = buffer.frameCount
        let written = buffer.samples.withUnsafeBufferPointer { samples in
            sf_writef_float(handle, samples.baseAddress, sf_count_t(frames))
        }
        let message = String(cString: sf_strerror(handle))
        let closed = sf_close(handle)
        guard written == frames, closed == 0 else {
            throw SoundError(.writeFailed, source: path, detail: message)
        }
    }
}
