/// FeedbackServices' own sound theme: every sound, how it is made, and how the theme is laid out.
///
/// All sounds are synthesised here; nothing is recorded or copied. Files are 16-bit PCM mono WAV at
/// 48 kHz (stereo would double the size and add nothing to these sounds) in the theme's one
/// directory, `stereo/`, named `<event>.wav` after a Sound Naming spec or feedbackd event name.
///
/// Telephony tones follow the ETSI/CEPT recommendations (ETSI TR 101 041, ITU-T E.180): 425 Hz busy
/// 0.5 s on / 0.5 s off, congestion 0.25 s / 0.25 s, call waiting two 0.2 s bursts 0.2 s apart; the
/// failure tone is ITU-T's special information tone (950, 1400, 1800 Hz, 330 ms each); DTMF uses
/// the ITU-T Q.23 pairs; the cell-broadcast alert uses the 853 + 960 Hz attention-signal pair.
public enum ShippedTheme {
    /// The theme's directory name.
    public static let name = "feedbackservices"
    /// The one sound directory.
    public static let directory = "stereo"

    /// One sound of the theme.
    public struct Sound: Sendable {
        /// The event name, which is also the file name without `.wav`.
        public let event: String
        /// What it sounds like, for the theme's documentation.
        public let summary: String
        /// Makes the samples: mono, 48 kHz.
        public let render: @Sendable () -> [Double]

        /// The file's path below the theme directory.
        public var file: String { "\(ShippedTheme.directory)/\(event).wav" }
    }

    /// The DTMF pairs (ITU-T Q.23), in Hz: row (low group) and column (high group).
    public static let dtmfPairs: [(key: String, low: Double, high: Double)] = [
        ("1", 697, 1209), ("2", 697, 1336), ("3", 697, 1477),
        ("4", 770, 1209), ("5", 770, 1336), ("6", 770, 1477),
        ("7", 852, 1209), ("8", 852, 1336), ("9", 852, 1477),
        ("star", 941, 1209), ("0", 941, 1336), ("pound", 941, 1477),
    ]

    /// The tri-tone's three notes in Hz (E6, G6, C7).
    public static let triToneNotes: [Double] = [pitch(88), pitch(91), pitch(96)]

    /// The `index.theme` text.
    public static let indexTheme = """
        [Sound Theme]
        Name=FeedbackServices
        Comment=Synthesised system sounds of FeedbackServices, made by scripts/generate-sound-theme
        Directories=\(directory)

        [\(directory)]
        OutputProfile=stereo

        """

    /// Every sound, sorted by event name.
    public static let sounds: [Sound] = (dtmf + telephony + messages + alertTones + interface)
        .sorted { $0.event < $1.event }

    /// The frequency of MIDI note `number` in Hz (69 = A4 = 440 Hz).
    public static func pitch(_ number: Int) -> Double {
        440 * DeterministicMath.exp(0.6931471805599453 * Double(number - 69) / 12)
    }

    // MARK: - Groups

    static let dtmf: [Sound] = dtmfPairs.map { pair in
        Sound(event: "dtmf-\(pair.key)", summary: "DTMF \(pair.key): \(Int(pair.low)) + \(Int(pair.high)) Hz, 200 ms") {
            Synth.finish(
                Synth.tone([.init(pair.low, 1), .init(pair.high, 1)], 0.2, attack: 0.005, release: 0.005),
                peakDecibels: -6)
        }
    }

    static let telephony: [Sound] = [
        Sound(event: "phone-outgoing-busy", summary: "busy: 425 Hz, 0.5 s on / 0.5 s off, two cycles") {
            Synth.finish(Synth.cadence(Synth.note(425, 0.5), period: 1, count: 2), peakDecibels: -6, tail: 0.5)
        },
        Sound(event: "phone-outgoing-congestion", summary: "congestion: 425 Hz, 0.25 s on / 0.25 s off, four cycles") {
            Synth.finish(Synth.cadence(Synth.note(425, 0.25), period: 0.5, count: 4), peakDecibels: -6, tail: 0.25)
        },
        Sound(event: "phone-call-waiting", summary: "call waiting: 425 Hz, two 0.2 s bursts 0.2 s apart") {
            Synth.finish(Synth.cadence(Synth.note(425, 0.2), period: 0.4, count: 2), peakDecibels: -6)
        },
        Sound(event: "phone-failure", summary: "special information tone: 950, 1400, 1800 Hz, 330 ms each") {
            Synth.finish(
                Synth.sequence([950.0, 1400, 1800].enumerated().map { (at: Double($0.offset) * 0.33, sound: Synth.note($0.element, 0.33)) }),
                peakDecibels: -6)
        },
        Sound(event: "phone-path-acknowledge", summary: "two short 950 Hz beeps") {
            beeps(950, length: 0.08, gap: 0.06, count: 2)
        },
        Sound(event: "phone-key-tone", summary: "a 100 ms 1 kHz key tone") {
            Synth.finish(Synth.note(1000, 0.1), peakDecibels: -9)
        },
        Sound(event: "phone-hangup", summary: "two falling marimba notes") {
            melody([79, 72], spacing: 0.14, timbre: .marimba, decay: 0.12)
        },
        Sound(event: "phone-missed-call", summary: "two soft falling bell notes") {
            melody([84, 79], spacing: 0.2, timbre: .bell, decay: 0.15, peak: -9)
        },
        Sound(event: "phone-incoming-call", summary: "ringtone: a marimba figure played twice, about 3 s") {
            let figure = [76, 79, 84, 79, 76, 79, 84, 88]
            let bar = figure.enumerated().map { (at: Double($0.offset) * 0.15, note: $0.element) }
            let notes = bar + bar.map { (at: $0.at + 1.5, note: $0.note) }
            return Synth.finish(
                Synth.sequence(notes.map { (at: $0.at, sound: Synth.note(pitch($0.note), 0.4, timbre: .marimba, envelope: .decay(0.12))) }),
                peakDecibels: -3, tail: 0.3)
        },
        Sound(event: "video-call-ringing", summary: "two glass notes, twice") {
            melody([81, 86, 81, 86], spacing: 0.22, timbre: .glass, decay: 0.12, gaps: [0, 0.2, 0.6, 0.8])
        },
        Sound(event: "video-call-invitation-accepted", summary: "three quick rising glass notes") {
            melody([74, 78, 81], spacing: 0.09, timbre: .glass, decay: 0.1)
        },
        Sound(event: "video-call-ended", summary: "two falling glass notes") {
            melody([81, 74], spacing: 0.14, timbre: .glass, decay: 0.12)
        },
        Sound(event: "headset-start-call", summary: "long low, short high") {
            Synth.finish(Synth.sequence([(at: 0, sound: Synth.note(600, 0.4)), (at: 0.45, sound: Synth.note(1200, 0.1))]), peakDecibels: -9)
        },
        Sound(event: "headset-redial", summary: "short double high") { beeps(1200, length: 0.08, gap: 0.07, count: 2) },
        Sound(event: "headset-answer-call", summary: "short low, short high") {
            Synth.finish(Synth.sequence([(at: 0, sound: Synth.note(600, 0.08)), (at: 0.15, sound: Synth.note(1200, 0.08))]), peakDecibels: -9)
        },
        Sound(event: "headset-end-call", summary: "short double low") { beeps(600, length: 0.08, gap: 0.07, count: 2) },
        Sound(event: "headset-call-waiting", summary: "short double low, softer") {
            beeps(600, length: 0.08, gap: 0.07, count: 2, peak: -12)
        },
        Sound(event: "headset-transition-end", summary: "a middle tone, then short double low") {
            Synth.finish(
                Synth.sequence([(at: 0, sound: Synth.note(900, 0.09)), (at: 0.16, sound: Synth.note(600, 0.08)),
                                (at: 0.31, sound: Synth.note(600, 0.08))]),
                peakDecibels: -9)
        },
    ]

    static let messages: [Sound] = [
        Sound(event: "message-new-instant", summary: "the tri-tone: E6, G6, C7 in glass") {
            Synth.finish(
                Synth.sequence(triToneNotes.enumerated().map {
                    (at: Double($0.offset) * 0.16, sound: Synth.note($0.element, 0.3, timbre: .glass, envelope: .decay(0.07)))
                }),
                peakDecibels: -3)
        },
        Sound(event: "message-new-instant-chime", summary: "two bell notes") { melody([83, 88], spacing: 0.18, timbre: .bell, decay: 0.2) },
        Sound(event: "message-new-instant-glass", summary: "three falling glass notes") {
            melody([93, 88, 84], spacing: 0.1, timbre: .glass, decay: 0.12)
        },
        Sound(event: "message-new-instant-horn", summary: "two held brass notes") {
            Synth.finish(
                Synth.sequence([(at: 0, sound: Synth.note(pitch(67), 0.18, timbre: .brass)),
                                (at: 0.22, sound: Synth.note(pitch(72), 0.35, timbre: .brass))]),
                peakDecibels: -4)
        },
        Sound(event: "message-new-instant-bell", summary: "one long bell strike") { melody([84], spacing: 0, timbre: .bell, decay: 0.25, length: 0.8) },
        Sound(event: "message-new-instant-electronic", summary: "a fast square-wave arpeggio") {
            melody([72, 76, 79, 84, 79, 84], spacing: 0.06, timbre: .reed, decay: 0.05, length: 0.1, peak: -6)
        },
        Sound(event: "message-new-sms", summary: "two rising marimba notes") { melody([79, 86], spacing: 0.12, timbre: .marimba, decay: 0.12) },
        Sound(event: "message-new-email", summary: "two soft rising bell notes") {
            melody([79, 84], spacing: 0.16, timbre: .bell, decay: 0.18, peak: -6)
        },
        Sound(event: "message-new-voicemail", summary: "three falling glass notes, slow") {
            melody([88, 84, 79], spacing: 0.18, timbre: .glass, decay: 0.15)
        },
        Sound(event: "message-new-ussd", summary: "two short 1.2 kHz beeps") { beeps(1200, length: 0.07, gap: 0.05, count: 2) },
        Sound(event: "message-new-cellbroadcast", summary: "attention signal: 853 + 960 Hz, 0.5 s twice") { attentionSignal() },
        Sound(event: "cellbroadcast", summary: "attention signal, as feedbackd names the effect") { attentionSignal() },
        Sound(event: "message-sent-instant", summary: "a rising swoop") {
            Synth.finish(Synth.glide(from: 600, to: 1400, 0.16), peakDecibels: -8)
        },
        Sound(event: "message-sent-instant-chirp", summary: "three falling chirps") {
            Synth.finish(
                Synth.sequence((0..<3).map { (at: Double($0) * 0.07, sound: Synth.glide(from: 3200, to: 1900, 0.05, release: 0.008)) }),
                peakDecibels: -9)
        },
        Sound(event: "message-sent-email", summary: "a whoosh of band-passed noise") {
            Synth.finish(whoosh(seed: 11, 0.35, centre: 1400), peakDecibels: -8)
        },
        Sound(event: "message-missed-email", summary: "one soft low bell") { melody([76], spacing: 0, timbre: .bell, decay: 0.15, peak: -12) },
        Sound(event: "message-missed-instant", summary: "one soft bell") { melody([83], spacing: 0, timbre: .bell, decay: 0.15, peak: -12) },
        Sound(event: "message-missed-notification", summary: "one soft glass note") {
            melody([86], spacing: 0, timbre: .glass, decay: 0.15, peak: -12)
        },
        Sound(event: "message-missed-sms", summary: "one soft marimba note") {
            melody([81], spacing: 0, timbre: .marimba, decay: 0.15, peak: -12)
        },
        Sound(event: "notification-new-generic", summary: "two glass notes") { melody([84, 91], spacing: 0.1, timbre: .glass, decay: 0.12) },
        Sound(event: "notification-missed-generic", summary: "one soft glass note") {
            melody([91], spacing: 0, timbre: .glass, decay: 0.12, peak: -12)
        },
    ]

    /// Alternative text tones, named after AudioServices' 1020–1036 set; each is our own figure.
    static let alertTones: [Sound] = [
        alert("anticipate", "a repeated note that rises", [84, 84, 84, 91], at: [0, 0.15, 0.27, 0.37], .marimba),
        alert("bloom", "a rising glass arpeggio", [72, 76, 79, 84, 88], at: [0, 0.07, 0.14, 0.21, 0.28], .glass),
        alert("calypso", "a syncopated marimba figure", [79, 76, 79, 84], at: [0, 0.12, 0.18, 0.3], .marimba),
        alert("descent", "a falling marimba scale", [96, 95, 93, 91, 89, 88, 86, 84], step: 0.07, .marimba),
        alert("fanfare", "a brass triad", [67, 72, 76, 79], at: [0, 0.1, 0.2, 0.3], .brass, decay: 0.3),
        alert("ladder", "a rising marimba scale", [84, 86, 88, 89, 91, 93, 95, 96], step: 0.07, .marimba),
        alert("minuet", "a bell figure in three", [79, 84, 86, 88, 84], at: [0, 0.15, 0.3, 0.45, 0.6], .bell),
        alert("news-flash", "fast repeated high notes", [91, 91, 91, 96, 91, 96], step: 0.08, .reed, decay: 0.04),
        alert("noir", "a slow low minor arpeggio", [60, 63, 67, 70], at: [0, 0.16, 0.32, 0.48], .glass, decay: 0.18),
        alert("sherwood-forest", "horn fifths", [67, 74, 72, 79], at: [0, 0.16, 0.32, 0.48], .brass, decay: 0.2),
        alert("spell", "a sparkle of high glass notes", [96, 100, 98, 103, 101, 105], step: 0.05, .glass, decay: 0.08),
        alert("suspense", "a low tremolo on a minor second", [55, 56, 55, 56, 55, 56], step: 0.09, .reed, decay: 0.1),
        alert("tiptoes", "soft staccato marimba", [84, 88, 84, 91], at: [0, 0.11, 0.22, 0.44], .marimba, decay: 0.05),
        alert("update", "up, up, down", [84, 91, 88], at: [0, 0.12, 0.24], .glass),
        Sound(event: "message-new-instant-choo-choo", summary: "a two-note whistle, twice") {
            let chord = { Synth.tone([.init(pitch(76), 1), .init(pitch(80), 1), .init(pitch(83), 0.6)], 0.25, attack: 0.02, release: 0.05) }
            return Synth.finish(Synth.sequence([(at: 0, sound: chord()), (at: 0.32, sound: chord())]), peakDecibels: -4)
        },
        Sound(event: "message-new-instant-telegraph", summary: "Morse code for SMS at 880 Hz") {
            // S M S: ... -- ...; a dot lasts 60 ms, a dash three dots, gaps one dot, letters three.
            let dot = 0.06
            let symbols: [[Int]] = [[1, 1, 1], [3, 3], [1, 1, 1]]
            var parts: [(at: Double, sound: [Double])] = []
            var time = 0.0
            for letter in symbols {
                for length in letter {
                    parts.append((at: time, sound: Synth.note(880, Double(length) * dot, attack: 0.003, release: 0.005)))
                    time += Double(length + 1) * dot
                }
                time += 2 * dot
            }
            return Synth.finish(Synth.sequence(parts), peakDecibels: -6)
        },
        Sound(event: "message-new-instant-typewriters", summary: "six key clicks and a bell") {
            var parts: [(at: Double, sound: [Double])] = (0..<6).map {
                (at: Double($0) * 0.09, sound: Synth.noiseBurst(seed: UInt64(100 + $0), 0.03, centre: 2200, decay: 0.005))
            }
            parts.append((at: 0.6, sound: Synth.note(pitch(93), 0.4, timbre: .bell, envelope: .decay(0.12), level: 0.6)))
            return Synth.finish(Synth.sequence(parts), peakDecibels: -4)
        },
    ]

    static let interface: [Sound] = [
        Sound(event: "button-pressed", summary: "Tink: a tiny high bell") {
            Synth.finish(Synth.note(pitch(105), 0.06, timbre: .bell, envelope: .decay(0.015), attack: 0.001), peakDecibels: -12)
        },
        Sound(event: "button-released", summary: "a softer, lower tink") {
            Synth.finish(Synth.note(pitch(100), 0.05, timbre: .bell, envelope: .decay(0.012), attack: 0.001), peakDecibels: -15)
        },
        Sound(event: "key-pressed", summary: "Tock: the keyboard click, noise and a woody knock") { click(seed: 1, centre: 2500, knock: 700) },
        Sound(event: "key-released", summary: "a lighter key click") { click(seed: 2, centre: 3500, knock: 900, peak: -15) },
        Sound(event: "desktop-screen-lock", summary: "lock: a low latch thunk") {
            Synth.finish(
                Synth.sequence([(at: 0, sound: Synth.noiseBurst(seed: 3, 0.04, centre: 900, decay: 0.008)),
                                (at: 0.002, sound: Synth.note(180, 0.12, timbre: .marimba, envelope: .decay(0.03), attack: 0.001))]),
                peakDecibels: -6)
        },
        Sound(event: "desktop-screen-unlock", summary: "unlock: two rising latch clicks") {
            Synth.finish(
                Synth.sequence([(at: 0, sound: Synth.noiseBurst(seed: 4, 0.03, centre: 1500, decay: 0.006)),
                                (at: 0.001, sound: Synth.note(500, 0.07, timbre: .marimba, envelope: .decay(0.02), attack: 0.001)),
                                (at: 0.09, sound: Synth.noiseBurst(seed: 5, 0.03, centre: 2500, decay: 0.006)),
                                (at: 0.091, sound: Synth.note(800, 0.07, timbre: .marimba, envelope: .decay(0.02), attack: 0.001))]),
                peakDecibels: -6)
        },
        Sound(event: "camera-shutter", summary: "a shutter opening and closing") {
            Synth.finish(
                Synth.sequence([(at: 0, sound: Synth.noiseBurst(seed: 6, 0.06, centre: 3000, q: 1, decay: 0.012)),
                                (at: 0.09, sound: Synth.noiseBurst(seed: 7, 0.08, centre: 1800, q: 1, decay: 0.018))]),
                peakDecibels: -4)
        },
        Sound(event: "screen-capture", summary: "a lighter shutter") {
            Synth.finish(
                Synth.sequence([(at: 0, sound: Synth.noiseBurst(seed: 8, 0.05, centre: 4000, q: 1, decay: 0.01)),
                                (at: 0.06, sound: Synth.noiseBurst(seed: 9, 0.05, centre: 2600, q: 1, decay: 0.012))]),
                peakDecibels: -6)
        },
        Sound(event: "camera-focus", summary: "two short 2.5 kHz beeps") { beeps(2500, length: 0.04, gap: 0.04, count: 2, peak: -12) },
        Sound(event: "power-plug", summary: "beep-beep: two rising beeps") {
            Synth.finish(Synth.sequence([(at: 0, sound: Synth.note(pitch(84), 0.07)), (at: 0.12, sound: Synth.note(pitch(91), 0.07))]), peakDecibels: -9)
        },
        Sound(event: "power-unplug", summary: "two falling beeps") {
            Synth.finish(Synth.sequence([(at: 0, sound: Synth.note(pitch(91), 0.07)), (at: 0.12, sound: Synth.note(pitch(84), 0.07))]), peakDecibels: -9)
        },
        Sound(event: "battery-low", summary: "low power: three falling glass notes") {
            melody([79, 76, 72], spacing: 0.16, timbre: .glass, decay: 0.14)
        },
        Sound(event: "battery-caution", summary: "two falling glass notes") { melody([76, 72], spacing: 0.16, timbre: .glass, decay: 0.14) },
        Sound(event: "alarm-clock-elapsed", summary: "alarm: two groups of four 1760 Hz beeps") {
            let group = Synth.cadence(Synth.note(1760, 0.08, timbre: .reed), period: 0.13, count: 4)
            return Synth.finish(Synth.cadence(group, period: 0.8, count: 2), peakDecibels: -4)
        },
        Sound(event: "ringer-changed", summary: "a short glass tick") {
            Synth.finish(Synth.note(pitch(96), 0.08, timbre: .glass, envelope: .decay(0.02), attack: 0.001), peakDecibels: -12)
        },
        Sound(event: "shake", summary: "a rattle of four noise bursts") {
            Synth.finish(
                Synth.sequence((0..<4).map { (at: Double($0) * 0.05, sound: Synth.noiseBurst(seed: UInt64(20 + $0), 0.04, centre: 1800, decay: 0.01)) }),
                peakDecibels: -9)
        },
        Sound(event: "voice-control-begin", summary: "two rising notes") { melody([79, 86], spacing: 0.1, timbre: .glass, decay: 0.1) },
        Sound(event: "voice-control-confirm", summary: "two quick high rising notes") { melody([86, 91], spacing: 0.07, timbre: .glass, decay: 0.08) },
        Sound(event: "voice-control-cancel", summary: "two falling notes") { melody([86, 79], spacing: 0.1, timbre: .glass, decay: 0.1) },
        Sound(event: "voice-control-ambiguous", summary: "one note twice") { melody([84, 84], spacing: 0.12, timbre: .glass, decay: 0.08) },
        Sound(event: "voice-control-no-match", summary: "two low falling notes") { melody([72, 67], spacing: 0.12, timbre: .glass, decay: 0.1) },
        Sound(event: "audio-record-begin", summary: "a rising pair of beeps") {
            Synth.finish(Synth.sequence([(at: 0, sound: Synth.note(880, 0.06)), (at: 0.09, sound: Synth.note(1320, 0.06))]), peakDecibels: -9)
        },
        Sound(event: "audio-record-end", summary: "a falling pair of beeps") {
            Synth.finish(Synth.sequence([(at: 0, sound: Synth.note(1320, 0.06)), (at: 0.09, sound: Synth.note(880, 0.06))]), peakDecibels: -9)
        },
        Sound(event: "video-record-begin", summary: "one rising beep") { Synth.finish(Synth.glide(from: 900, to: 1300, 0.1), peakDecibels: -9) },
        Sound(event: "video-record-end", summary: "one falling beep") { Synth.finish(Synth.glide(from: 1300, to: 900, 0.1), peakDecibels: -9) },
        Sound(event: "sim-toolkit-call-dropped", summary: "three falling beeps") {
            Synth.finish(Synth.sequence([1400.0, 1100, 800].enumerated().map { (at: Double($0.offset) * 0.12, sound: Synth.note($0.element, 0.08)) }), peakDecibels: -9)
        },
        Sound(event: "sim-toolkit-general-beep", summary: "a 200 ms 1 kHz beep") { Synth.finish(Synth.note(1000, 0.2), peakDecibels: -9) },
        Sound(event: "sim-toolkit-negative-ack", summary: "two low beeps") { beeps(500, length: 0.1, gap: 0.06, count: 2) },
        Sound(event: "sim-toolkit-positive-ack", summary: "two high beeps") { beeps(1500, length: 0.06, gap: 0.05, count: 2) },
        Sound(event: "sim-toolkit-sms", summary: "three quick beeps") { beeps(1300, length: 0.05, gap: 0.04, count: 3) },
        Sound(event: "complete", summary: "two rising bell notes (feedbackd's effect for timeout-completed)") {
            melody([84, 91], spacing: 0.12, timbre: .bell, decay: 0.15)
        },
        Sound(event: "timeout-completed", summary: "two rising bell notes") { melody([84, 91], spacing: 0.12, timbre: .bell, decay: 0.15) },
        Sound(event: "theme-demo", summary: "a short marimba tune") {
            melody([72, 76, 79, 84, 79, 84, 88], spacing: 0.12, timbre: .marimba, decay: 0.12)
        },
        Sound(event: "window-close", summary: "a soft falling blip") { Synth.finish(Synth.glide(from: 900, to: 500, 0.08), peakDecibels: -14) },
        Sound(event: "bell-terminal", summary: "a bell at A5") { melody([81], spacing: 0, timbre: .bell, decay: 0.12, length: 0.35, peak: -8) },
        Sound(event: "bell-window-system", summary: "a softer bell at E5") {
            melody([76], spacing: 0, timbre: .bell, decay: 0.1, length: 0.3, peak: -10)
        },
        Sound(event: "dialog-error", summary: "two low falling reed notes") { melody([64, 60], spacing: 0.12, timbre: .reed, decay: 0.08, peak: -8) },
        Sound(event: "dialog-warning", summary: "one reed note twice") { melody([69, 69], spacing: 0.12, timbre: .reed, decay: 0.06, peak: -8) },
        Sound(event: "dialog-information", summary: "one glass note") { melody([84], spacing: 0, timbre: .glass, decay: 0.1, peak: -8) },
        Sound(event: "dialog-question", summary: "two rising glass notes") { melody([79, 83], spacing: 0.1, timbre: .glass, decay: 0.08, peak: -8) },
        Sound(event: "audio-volume-change", summary: "a short pop at 1 kHz") {
            Synth.finish(Synth.note(1000, 0.05, timbre: .marimba, envelope: .decay(0.012), attack: 0.001), peakDecibels: -10)
        },
        Sound(event: "device-added", summary: "two rising marimba notes") { melody([74, 81], spacing: 0.08, timbre: .marimba, decay: 0.06) },
        Sound(event: "device-removed", summary: "two falling marimba notes") { melody([81, 74], spacing: 0.08, timbre: .marimba, decay: 0.06) },
        Sound(event: "trash-empty", summary: "a crumple of noise") {
            Synth.finish(
                Synth.sequence((0..<3).map { (at: Double($0) * 0.06, sound: Synth.noiseBurst(seed: UInt64(30 + $0), 0.08, centre: 1200, q: 0.7, decay: 0.02)) }),
                peakDecibels: -9)
        },
        Sound(event: "desktop-login", summary: "a rising glass arpeggio") { melody([72, 79, 84, 88], spacing: 0.1, timbre: .glass, decay: 0.12) },
        Sound(event: "desktop-logout", summary: "a falling glass arpeggio") { melody([88, 84, 79, 72], spacing: 0.1, timbre: .glass, decay: 0.12) },
        Sound(event: "battery-full", summary: "two rising glass notes") { melody([79, 84], spacing: 0.14, timbre: .glass, decay: 0.12) },
    ]

    // MARK: - Recipes

    /// Notes (MIDI numbers) `spacing` s apart (or at `gaps`), each a struck `timbre` decaying with `decay`.
    static func melody(
        _ notes: [Int], spacing: Double, timbre: Synth.Timbre, decay: Double, length: Double? = nil,
        gaps: [Double]? = nil, peak: Double = -4
    ) -> [Double] {
        let noteLength = length ?? min(decay * 3.5, 0.8)
        let parts = notes.enumerated().map { item in
            (at: gaps?[item.offset] ?? Double(item.offset) * spacing,
             sound: Synth.note(pitch(item.element), noteLength, timbre: timbre, envelope: .decay(decay)))
        }
        return Synth.finish(Synth.sequence(parts), peakDecibels: peak)
    }

    static func alert(
        _ name: String, _ summary: String, _ notes: [Int], at times: [Double], _ timbre: Synth.Timbre, decay: Double = 0.12
    ) -> Sound {
        Sound(event: "message-new-instant-\(name)", summary: summary) {
            melody(notes, spacing: 0, timbre: timbre, decay: decay, gaps: times)
        }
    }

    static func alert(
        _ name: String, _ summary: String, _ notes: [Int], step: Double, _ timbre: Synth.Timbre, decay: Double = 0.08
    ) -> Sound {
        Sound(event: "message-new-instant-\(name)", summary: summary) {
            melody(notes, spacing: step, timbre: timbre, decay: decay)
        }
    }

    static func beeps(_ frequency: Double, length: Double, gap: Double, count: Int, peak: Double = -9) -> [Double] {
        Synth.finish(Synth.cadence(Synth.note(frequency, length), period: length + gap, count: count), peakDecibels: peak)
    }

    static func click(seed: UInt64, centre: Double, knock: Double, peak: Double = -10) -> [Double] {
        Synth.finish(
            Synth.sequence([(at: 0, sound: Synth.noiseBurst(seed: seed, 0.03, centre: centre, decay: 0.004)),
                            (at: 0, sound: Synth.note(knock, 0.03, timbre: .marimba, envelope: .decay(0.006), level: 0.5, attack: 0.0005, release: 0.005))]),
            peakDecibels: peak)
    }

    static func attentionSignal() -> [Double] {
        let pair = { (length: Double) in Synth.tone([.init(853, 1), .init(960, 1)], length, attack: 0.01, release: 0.01) }
        return Synth.finish(Synth.sequence([(at: 0, sound: pair(0.5)), (at: 0.75, sound: pair(0.5))]), peakDecibels: -4)
    }

    /// Band-passed noise under a raised-cosine swell: a whoosh.
    static func whoosh(seed: UInt64, _ duration: Double, centre: Double) -> [Double] {
        var noise = Synth.noiseBurst(seed: seed, duration, centre: centre, q: 0.8, decay: 1000)
        let count = noise.count
        for index in 0..<count {
            noise[index] *= 0.5 - 0.5 * DeterministicMath.cosCycles(Double(index) / Double(count - 1))
        }
        return noise
    }
}
