internal import CFeedbackShims

/// What C libraries print on their own while FeedbackServices reads or writes sound files.
///
/// libsndfile `printf`s to standard output on some damaged files (an SDS file's blocks give
/// `Error A : 00`, its ALAC encoder "compressed frame too big"), and libmpg123, which libsndfile
/// drives with its default settings, writes `Warning:`/`Note:`/`error:` lines to standard error
/// about MP3 files it then decodes fine. Neither can be switched off through libsndfile's API
/// (its log is separate: `SFC_GET_LOG_INFO`), and in a command they break the output (`info --json`
/// stops being JSON) or alarm for nothing. What a failed decode means reaches the caller anyway,
/// as the `SoundError` libsndfile reports.
///
/// Every libsndfile call runs in a quiet section of its thread (`quietly`); a program that wants
/// those prints gone calls `dropDuringSoundFileWork()` once, first thing. A library user that
/// does not keeps C stdio exactly as it was.
package enum CLibraryOutput {
    /// Drops what C code prints through C stdio's `stdout` and `stderr` on a thread while that
    /// thread is in a libsndfile call; every other print (a Swift runtime error among them) still
    /// reaches descriptors 1 and 2, unbuffered. Call once, before other threads start.
    package static func dropDuringSoundFileWork() {
        _ = fbs_filter_c_stdio()
    }
}

/// Runs `body` (libsndfile calls) in a quiet section of this thread; see `CLibraryOutput`.
@inline(__always)
func quietly<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
    fbs_quiet_begin()
    defer { fbs_quiet_end() }
    return try body()
}
