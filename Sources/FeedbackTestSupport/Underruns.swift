import Glibc

/// Runs a measurement recorded at a sound server's monitor again, up to `attempts` times in all,
/// while the server ran out of the engine's queued audio during it, or while `acceptable` (when
/// given) rejects its result; returns the last run's result.
///
/// On a loaded machine (a whole test run on two cores: the daemon suite's floods beside the sound
/// suites) an engine's stream can run dry; the server then plays a gap, which the recording shows
/// and no engine can prevent, so such a run says nothing about the sound's shape, level or seams.
/// `underflows` reads the engine's own counter (`EngineStatistics.underflows`:
/// PulseAudio's underflows, PipeWire's xruns, ALSA's underruns), which tells which runs those are.
///
/// PipeWire's graph can glitch with no underflow of any client's: its null sink is driven by a
/// timer, and on this two-core VM (with the hypervisor's steal time) a cycle sometimes starts
/// before a follower finished the last one ("client too slow!" in PipeWire's log), and one quantum
/// (5.3 ms through pipewire-pulse) is lost or repeated at the sink. Measured with a private PipeWire
/// as the tests run it: 15 s of sine played by `pw-play`, recorded by `parec` through
/// pipewire-pulse, had 0 discontinuities idle and 0, 6, 8, 0, 2, 0 in six runs beside two busy
/// loops and two fork loops; with a native `pw-record` recording beside `parec`, both recorded the
/// same discontinuities (the playback reached the sink with them, not one recorder's loss). So on
/// those routes a result that `acceptable` rejects is measured again too; a fault of
/// ours fails every attempt. Without `acceptable`, a mismatch with no underflow fails at once.
package func measuredAgainAfterUnderflows<Result>(
    attempts: Int = 4, underflows: () -> Int, acceptable: ((Result) -> Bool)? = nil, _ body: () throws -> Result
) rethrows -> Result {
    var attempt = 1
    while true {
        let before = underflows()
        let result = try body()
        let underRan = underflows() != before
        let rejected = !underRan && acceptable.map { !$0(result) } == true
        if (!underRan && !rejected) || attempt == attempts { return result }
        print(
            underRan
                ? "the server under-ran during attempt \(attempt) of \(attempts) (machine load); measuring again"
                : "attempt \(attempt) of \(attempts) mismatched with no underflow (the server's graph can drop a cycle under load); measuring again")
        attempt += 1
        usleep(200_000)
    }
}

/// `measuredAgainAfterUnderflows` for a recording from a server of `kind`: a result `acceptable`
/// rejects is measured again on PipeWire only, whose graph drops a cycle under load (above); on
/// PulseAudio a mismatch with no underflow fails at once, so a fault of ours always shows there.
package func measuredAgainAfterUnderflows<Result>(
    on kind: SoundServerKind, attempts: Int = 4, underflows: () -> Int, acceptable: @escaping (Result) -> Bool,
    _ body: () throws -> Result
) rethrows -> Result {
    try measuredAgainAfterUnderflows(
        attempts: attempts, underflows: underflows, acceptable: kind == .pipeWire ? acceptable : nil, body)
}
