import Glibc

/// Runs a measurement recorded at a sound server's monitor again, up to `attempts` times in all,
/// while the server ran out of the engine's queued audio during it; returns the last run's result.
///
/// On a loaded machine (a whole test run on two cores: the daemon suite's floods beside the sound
/// suites) an engine's stream can run dry; the server then plays a gap, which the recording shows
/// and no engine can prevent, so such a run says nothing about the sound's shape, level or seams.
/// `underflows` reads the engine's own counter (`PulseAudioOutput.Statistics.underflows`,
/// PipeWire's xruns), which tells which runs those are. A mismatch without an underflow fails at
/// once.
public func measuredAgainAfterUnderflows<Result>(
    attempts: Int = 4, underflows: () -> Int, _ body: () throws -> Result
) rethrows -> Result {
    var attempt = 1
    while true {
        let before = underflows()
        let result = try body()
        if underflows() == before || attempt == attempts { return result }
        print("the server under-ran during attempt \(attempt) of \(attempts) (machine load); measuring again")
        attempt += 1
        usleep(200_000)
    }
}
