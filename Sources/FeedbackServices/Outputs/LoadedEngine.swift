extension Result where Failure == PlaybackError {
    /// What an engine output holds when its library is loaded on first use (`OptionalLibrary`):
    /// the engine `make` returns when `library` loads, else `.libraryUnavailable` with the reason,
    /// which every `prepare` and `play` of the output then reports.
    init(loading library: OptionalLibrary, _ make: () -> Success) {
        if let reason = library.unavailableReason {
            self = .failure(PlaybackError(.libraryUnavailable, detail: reason))
        } else {
            self = .success(make())
        }
    }

    /// `start(engine)`; without an engine, a play whose completion reports the error at once.
    func play(
        delivery: Delivery, completion: (@Sendable (PlaybackEnd) -> Void)?, _ start: (Success) -> PlaybackHandle
    ) -> PlaybackHandle {
        switch self {
        case .success(let engine): start(engine)
        case .failure(let error): PlaybackHandle.failed(error, delivery: delivery, completion: completion)
        }
    }
}
