internal import CFeedbackShims
internal import CSndFile
import Glibc

/// Writes PCM buffers to sound files with libsndfile.
///
/// The file is encoded in memory first, then written by the one rule every writer follows
/// (`AtomicFile`): a regular file is written whole or not at all (a temporary file beside it,
/// flushed, renamed over it), so a reader never sees half a file and a failure leaves whatever was
/// there before untouched; a symbolic link is followed to the regular file it names and stays a
/// link; a FIFO or character device (`/dev/null`) is written into, never replaced; `-` is standard
/// output; a directory, block device or socket is refused.
public enum SoundFileWriter {
    /// Writes `buffer` to `path` in `format`, as described above (`sf_open_fd` on a memory file +
    /// `sf_writef_float`).
    ///
    /// Integer encodings clip samples beyond ±1 (`SFC_SET_CLIPPING`) rather than wrapping them.
    /// A replaced file keeps its mode; a new one gets 0644 less the process umask.
    /// - Throws: `FileError`: `.cannotWrite` with libsndfile's or the system's message (libsndfile
    ///   cannot encode this, or the path holds what may not be written), `.cannotCreate` when the
    ///   file cannot be made.
    public static func write(_ buffer: PCMBuffer, to path: String, format: SoundFileFormat) throws(FileError) {
        let bytes = try encode(path: path, format: format, sampleRate: buffer.sampleRate, channelCount: buffer.channelCount) {
            handle throws(FileError) in
            let written = buffer.samples.withUnsafeBufferPointer { samples in
                sf_writef_float(handle, samples.baseAddress, sf_count_t(buffer.frameCount))
            }
            guard written == buffer.frameCount else {
                throw FileError(.cannotWrite, path: path, detail: String(cString: sf_strerror(handle)))
            }
        }
        try AtomicFile.write(bytes, to: path, permissions: .keepingExisting(new: 0o644), streams: .writeInto)
    }

    /// The bytes of a sound file in `format`: `body` writes the frames through the libsndfile
    /// handle it is given. The file is built in an anonymous memory file (`memfd_create`), since
    /// libsndfile seeks back to finish headers, which a FIFO or standard output cannot do.
    /// - Throws: `FileError` with `.cannotWrite`; what `body` throws.
    static func encode(
        path: String, format: SoundFileFormat, sampleRate: Int, channelCount: Int,
        _ body: (OpaquePointer) throws(FileError) -> Void
    ) throws(FileError) -> [UInt8] {
        var info = try format.writingInfo(sampleRate: sampleRate, channelCount: channelCount, path: path)
        let fd = fbs_memfd("feedbackservices-sound")
        guard fd >= 0 else { throw FileError(.cannotWrite, path: path, errno: errno) }
        defer { close(fd) }
        guard let handle = quietly({ sf_open_fd(fd, Int32(SFM_WRITE), &info, 0) }) else {
            throw FileError(.cannotWrite, path: path, detail: String(cString: sf_strerror(nil)))
        }
        _ = sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        do throws(FileError) {
            try quietly { () throws(FileError) in try body(handle) }
        } catch {
            quietly { _ = sf_close(handle) }
            throw error
        }
        let message = String(cString: sf_strerror(handle))
        guard quietly({ sf_close(handle) }) == 0 else { throw FileError(.cannotWrite, path: path, detail: message) }
        let size = lseek(fd, 0, SEEK_END)
        guard size >= 0 else { throw FileError(.cannotWrite, path: path, errno: errno) }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + count, $0.count - count, off_t(count)) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw FileError(.cannotWrite, path: path, errno: got < 0 ? errno : EIO) }
            count += got
        }
        return bytes
    }
}
