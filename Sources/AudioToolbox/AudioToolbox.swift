// Apple's module name for System Sound Services, so that code written for Apple platforms
// (`import AudioToolbox`, `AudioServicesCreateSystemSoundID(url as CFURL, &soundID)`, …) compiles
// unchanged. The functions, types and constants are FeedbackServices' own, declared once in its
// AudioServices layer (Sources/FeedbackServices/AudioServices); this module re-exports that module
// whole, so there is one implementation and one place for Apple's names, and a ported program can
// reach FeedbackServices' additions (`AudioServicesStopSystemSound`, `FeedbackManager`) without a
// second import.
@_exported public import FeedbackServices
