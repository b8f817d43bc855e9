#if FEEDBACKSERVICES_TSAN
import FeedbackServices

/// In a ThreadSanitizer build (`scripts/tsan`), every `Mutex` of this module is the annotated one
/// (see `TSanMutex`).
typealias Mutex = TSanMutex
#endif
