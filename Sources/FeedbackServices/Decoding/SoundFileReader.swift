internal import CFeedbackShims
internal import CSndFile
import Glibc

/// An open sound file: the file descriptor and the libsndfile handle reading it.
///
/// Owned by one decode call from open to close and never shared, so it needs no lock; being
/// non-copyable, it closes both exactly once.
package struct SoundFileReader: ~Copyable {
    let path: String
    let info: SF_INFO
    /// The file's length in seconds, from its header (no decoding); infinity when the header does
    /// not say (`knownFrameCount` is nil).
    package var duration: Double {
        knownFrameCount.map { Double($0) / Double(max(1, info.samplerate)) } ?? .infinity
    }
    /// The number of frames the header declares; nil when libsndfile does not know it
    /// (`SF_COUNT_MAX`, which Swift does not import: `Int64.max`), as for an Ogg stream followed by any byte that is not Ogg: only decoding
    /// the file tells its length then.
    package var knownFrameCount: Int64? { info.frames == Int64.max ? nil : max(0, info.frames) }
    private let fd: Int32
    private let handle: OpaquePointer

    /// Opens `path` for decoding.
    ///
    /// The file is opened non-blocking and checked with `fstat` before libsndfile sees it, so a FIFO
    /// with no writer, a device such as `/dev/zero`, or a directory is refused at once instead of
    /// hanging or reading forever.
    package init(path: String) throws(SoundError) {
        self.path = path
        let fd: Int32
        let size: Int64
        do throws(OpenRefusal) {
            (fd, size) = try openRegularFile(path)
        } catch {
            throw SoundError(refused: error, source: path)
        }
        guard size > 0 else {
            close(fd)
            throw SoundError(.empty, source: path, detail: "zero bytes")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)

        var info = SF_INFO()
        // close_desc = 0: the descriptor stays ours and is closed in deinit, on every path.
        guard let handle = quietly({ sf_open_fd(fd, Int32(SFM_READ), &info, 0) }) else {
            let error =
                OptionalLibrary.sndfile.unavailableReason.map { SoundError(.libraryUnavailable, source: path, detail: $0) }
                ?? Self.libraryError(code: sf_error(nil), message: sf_strerror(nil), path: path)
            close(fd)
            throw error
        }
        self.fd = fd
        self.handle = handle
        self.info = info
    }

    deinit {
        quietly { _ = sf_close(handle) }
        close(fd)
    }

    var format: SoundFileFormat { SoundFileFormat(rawValue: info.format) }

    /// libsndfile's channel positions (`SFC_GET_CHANNEL_MAP_INFO`), when the file declares them.
    func channelMap() -> [Int32]? {
        var map = [Int32](repeating: 0, count: Int(info.channels))
        let ok = map.withUnsafeMutableBytes { bytes in
            sf_command(handle, Int32(SFC_GET_CHANNEL_MAP_INFO), bytes.baseAddress, Int32(bytes.count))
        }
        return ok == Int32(SF_TRUE) ? map : nil
    }

    /// Reads every frame as interleaved floats, refusing to read past `maximumFrames`; a file of
    /// more than two channels comes back down-mixed to stereo (`Downmix`, with the channel
    /// positions `map`), one chunk at a time, so memory never holds the file's own channels: a
    /// 30 s 8-channel file costs the stereo samples, a quarter of its decoded size.
    ///
    /// The header's frame count is a hint, not a promise: compressed formats may estimate it, a
    /// damaged WAV may overstate it (libsndfile then clamps it to the data present), an Ogg stream
    /// with trailing bytes leaves it unknown. Reading goes on until the decoder says the stream has
    /// ended, or one frame past `maximumFrames`.
    func readAll(maximumFrames: Int?, downmixMap map: [Int32]?) throws(SoundError) -> [Float] {
        let channels = Int(info.channels)
        guard channels <= 2 else { return try readDownmixed(maximumFrames: maximumFrames, map: map) }
        let declared = Int(clamping: knownFrameCount ?? 0)
        var capacity = declared
        if let maximumFrames { capacity = min(capacity, maximumFrames + 1) }
        // Uninitialised, then filled by libsndfile and trimmed to what it wrote: no zero-fill pass.
        var samples = [Float](unsafeUninitializedCapacity: max(capacity, 4096) * channels) { _, count in
            count = max(capacity, 4096) * channels
        }
        var framesRead = 0
        while true {
            if framesRead * channels == samples.count {
                samples.append(contentsOf: repeatElement(0, count: max(samples.count, 4096 * channels)))
            }
            let room = samples.count / channels - framesRead
            let got = samples.withUnsafeMutableBufferPointer { buffer in
                quietly { sf_readf_float(handle, buffer.baseAddress! + framesRead * channels, sf_count_t(room)) }
            }
            if got <= 0 { break }
            framesRead += Int(got)
            if let maximumFrames, framesRead > maximumFrames { break }
        }
        let status = sf_error(handle)
        if status != 0 {
            throw Self.libraryError(code: status, message: sf_strerror(handle), path: path)
        }
        samples.removeLast(samples.count - framesRead * channels)
        return samples
    }

    private func readDownmixed(maximumFrames: Int?, map: [Int32]?) throws(SoundError) -> [Float] {
        let channels = Int(info.channels)
        let chunkFrames = 4_096
        var capacity = Int(clamping: knownFrameCount ?? 0)
        if let maximumFrames { capacity = min(capacity, maximumFrames + 1) }
        var stereo: [Float] = []
        stereo.reserveCapacity(capacity * 2)
        var chunk = [Float](repeating: 0, count: chunkFrames * channels)
        var framesRead = 0
        while true {
            let got = try chunk.withUnsafeMutableBufferPointer { buffer throws(SoundError) in
                try read(into: buffer.baseAddress!, frameCount: chunkFrames)
            }
            if got == 0 { break }
            stereo += Downmix.toStereo(Array(chunk[..<(got * channels)]), channels: channels, map: map)
            framesRead += got
            if let maximumFrames, framesRead > maximumFrames { break }
        }
        return stereo
    }

    /// Reads up to `frameCount` frames into `buffer` (`sf_readf_float`).
    /// - Returns: the frames read; 0 at the end of the file.
    /// - Throws: `SoundError` if libsndfile reports a decoding error.
    func read(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) throws(SoundError) -> Int {
        try read(into: buffer, frameCount: frameCount, sf_readf_float)
    }

    /// Reads up to `frameCount` frames into `buffer` with libsndfile's reader for its sample type
    /// (`sf_readf_float`, `sf_readf_int`: 32-bit integers, left-justified).
    /// - Returns: the frames read; 0 at the end of the file.
    /// - Throws: `SoundError` if libsndfile reports a decoding error.
    func read<Sample>(
        into buffer: UnsafeMutablePointer<Sample>, frameCount: Int,
        _ reader: (OpaquePointer?, UnsafeMutablePointer<Sample>?, sf_count_t) -> sf_count_t
    ) throws(SoundError) -> Int {
        let got = quietly { reader(handle, buffer, sf_count_t(frameCount)) }
        if got <= 0, sf_error(handle) != 0 {
            throw Self.libraryError(code: sf_error(handle), message: sf_strerror(handle), path: path)
        }
        return Int(max(0, got))
    }

    /// Moves the read position to `frame` of the file (`sf_seek`).
    /// - Throws: `SoundError` (`.malformed`) if the file cannot seek there.
    func seek(toFrame frame: Int64) throws(SoundError) {
        guard quietly({ sf_seek(handle, sf_count_t(frame), SEEK_SET) }) >= 0 else {
            throw SoundError(.malformed, source: path, detail: "cannot seek to frame \(frame)")
        }
    }

    /// The error for a failed `open` of `path`.
    static func openError(errno code: Int32, path: String) -> SoundError {
        SoundError(refused: OpenRefusal(Errno(rawValue: code)), source: path)
    }

    /// Maps libsndfile's error codes: the four public ones by meaning; among its internal ones
    /// (stable across libsndfile 1.x), 18 `SFE_UNIMPLEMENTED` ("data in an unimplemented format",
    /// e.g. an AIFF-C compression type it lacks) is an unsupported encoding and 24
    /// ("SF_INFO struct incomplete") means the header gave a zero sample
    /// rate or channel count; the rest (e.g. "No 'data' chunk marker") mean a damaged file.
    static func libraryError(code: Int32, message: UnsafePointer<CChar>?, path: String) -> SoundError {
        let text = message.map { String(cString: $0) }
        switch Int(code) {
        case SF_ERR_UNRECOGNISED_FORMAT:
            return SoundError(.notASoundFile, source: path, detail: text)
        case SF_ERR_UNSUPPORTED_ENCODING, libsndfileUnimplemented:
            return SoundError(.unsupportedEncoding, source: path, detail: text)
        case SF_ERR_SYSTEM:
            return SoundError(.ioError(errno: errno), source: path, detail: text)
        case libsndfileInfoIncomplete:
            return SoundError(
                .malformed, source: path,
                detail: "the header declares a sample rate or channel count of zero; libsndfile: \(text ?? "")")
        default:
            return SoundError(.malformed, source: path, detail: text)
        }
    }
}

/// libsndfile's internal `SFE_UNIMPLEMENTED`.
private let libsndfileUnimplemented = 18
/// libsndfile's internal error for an `SF_INFO` left incomplete by the header (zero rate or channels).
private let libsndfileInfoIncomplete = 24

/// Why `openRegularFile` refused a path, in the terms every domain names it by: `SoundError` for a
/// sound file, `FileError` for a file of our own.
enum OpenRefusal: Error, Equatable {
    /// No such file (`ENOENT`), or a directory on the path is not one (`ENOTDIR`).
    case notFound(Errno)
    /// The file may not be opened (`EACCES`, `EPERM`).
    case permissionDenied(Errno)
    /// The path names a directory.
    case isDirectory
    /// The path names a FIFO, a device or a socket.
    case notARegularFile
    /// `open` or `fstat` failed otherwise.
    case failed(Errno)

    /// The refusal for `open`'s error.
    init(_ error: Errno) {
        switch error.rawValue {
        // A symlink loop leads to no file (sysexits' "cannot open input").
        case ENOENT, ENOTDIR, ELOOP: self = .notFound(error)
        case EACCES, EPERM: self = .permissionDenied(error)
        case EISDIR: self = .isDirectory
        default: self = .failed(error)
        }
    }
}

/// Opens `path` read-only and non-blocking, and checks with `fstat` that it is a regular file, so
/// a FIFO with no writer, a device such as `/dev/zero` or a directory is refused before anything
/// reads it.
/// - Returns: the descriptor (the caller closes it; `O_NONBLOCK` is still set) and the file's size.
/// - Throws: why the path was refused; nothing stays open then.
func openRegularFile(_ path: String) throws(OpenRefusal) -> (fd: Int32, size: Int64) {
    guard let opened = try openRegularFileIfPresent(path) else { throw .notFound(.noSuchFile) }
    return opened
}

/// `openRegularFile`, except that no file at `path` (`ENOENT`) gives nil instead of an error.
func openRegularFileIfPresent(_ path: String) throws(OpenRefusal) -> (fd: Int32, size: Int64)? {
    let fd: Int32
    do {
        fd = try System.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    } catch {
        if error == .noSuchFile { return nil }
        throw OpenRefusal(error)
    }
    var status = stat()
    guard fstat(fd, &status) == 0 else {
        let error = Errno.current
        close(fd)
        throw .failed(error)
    }
    if fbs_s_isdir(status.st_mode) != 0 {
        close(fd)
        throw .isDirectory
    }
    guard fbs_s_isreg(status.st_mode) != 0 else {
        close(fd)
        throw .notARegularFile
    }
    return (fd, Int64(status.st_size))
}
