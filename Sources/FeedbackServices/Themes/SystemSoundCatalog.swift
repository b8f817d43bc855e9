/// One AudioServices system sound: its ID, its commonly documented name, and the theme event that
/// plays it.
public struct SystemSound: Sendable, Hashable, Identifiable {
    /// The AudioServices ID (1000…1351).
    public let id: SystemSoundID
    /// The name the sound is commonly documented under: the iOS file name without `.caf`
    /// (`sms-received1`, `Tink`, `photoShutter`, `dtmf-star`).
    public let name: String
    /// The category AudioServices files it under (`SMSReceived_Alert`, `KeyPressed`, `TouchTone`).
    public let category: String
    /// The Sound Naming spec or feedbackd event name it plays (`message-new-instant`, `key-pressed`).
    public let event: String

    /// The file of FeedbackServices' theme that holds the sound, relative to the theme directory.
    public var themeFile: String { "stereo/\(event).wav" }
}

/// What a system sound ID asks for.
public enum SystemSoundAction: Sendable, Hashable {
    /// Play this sound.
    case play(SystemSound)
    /// Vibrate, without sound: `kSystemSoundID_Vibrate` and the IDs AudioServices documents as
    /// vibration only (1011, 1102, 1311, 1350, 1351). The string is the documented category.
    case vibrate(category: String)
}

/// Why a system sound ID gives no sound.
public struct SystemSoundCatalogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The cause.
    public enum Reason: Sendable, Equatable {
        /// Inside 1000…1351 but not one of the IDs AudioServices assigns (e.g. 1017).
        case unassigned
        /// Outside 1000…1351 and not 4095.
        case notASystemSound
        /// An ID that vibrates and has no sound (1011, 1102, 1311, 1350, 1351, 4095).
        case vibrationOnly
    }

    /// The cause.
    public let reason: Reason
    /// The ID asked for.
    public let id: SystemSoundID

    /// Creates an error.
    public init(_ reason: Reason, id: SystemSoundID) {
        self.reason = reason
        self.id = id
    }

    /// One line for logs and the command line.
    public var description: String {
        switch reason {
        case .unassigned: "system sound \(id) is not assigned: no AudioServices sound has that ID"
        case .notASystemSound: "\(id) is not a system sound ID (1000…1351, or 4095 to vibrate)"
        case .vibrationOnly: "system sound \(id) vibrates and has no sound"
        }
    }
}

/// The AudioServices system sounds, 1000…1351, and where each one's sound comes from.
///
/// IDs, names and categories are the ones commonly documented for iOS (the lists published as
/// "iOSSystemSoundsLibrary" and on iphonedevwiki's AudioServices page); the sounds themselves are
/// FeedbackServices' own, played through the theme lookup so that a desktop theme can replace any of
/// them. Preview IDs (1300…1336) play the same events as the IDs they preview. An ID inside the
/// range that AudioServices does not assign gives `SystemSoundCatalogError.unassigned`, never silence.
public enum SystemSoundCatalog {
    /// Every ID that plays a sound, ascending.
    public static let sounds: [SystemSound] = entries.compactMap { entry in
        guard let event = entry.event else { return nil }
        return SystemSound(id: entry.id, name: entry.name, category: entry.category, event: event)
    }

    /// The IDs that vibrate without sound, with their documented category, `kSystemSoundID_Vibrate` included.
    public static let vibrationOnly: [SystemSoundID: String] = {
        var table: [SystemSoundID: String] = [kSystemSoundID_Vibrate: "Vibrate"]
        for entry in entries where entry.event == nil { table[entry.id] = entry.category }
        return table
    }()


    /// What `id` asks for.
    /// - Throws: `SystemSoundCatalogError` with `.unassigned` for an unassigned ID in 1000…1351, or
    ///   `.notASystemSound` for an ID outside it (other than 4095).
    public static func action(for id: SystemSoundID) throws(SystemSoundCatalogError) -> SystemSoundAction {
        // A binary search of `sounds` (ascending) rather than a dictionary built for the purpose:
        // `fire` asks once per process, before its first sample.
        var range = sounds.startIndex..<sounds.endIndex
        while !range.isEmpty {
            let middle = range.lowerBound + range.count / 2
            if sounds[middle].id == id { return .play(sounds[middle]) }
            range = sounds[middle].id < id ? (middle + 1)..<range.upperBound : range.lowerBound..<middle
        }
        if let category = vibrationOnly[id] { return .vibrate(category: category) }
        throw SystemSoundCatalogError(SoundRegistry.systemSoundIDs.contains(id) ? .unassigned : .notASystemSound, id: id)
    }

    /// The sound `id` plays.
    /// - Throws: `SystemSoundCatalogError`: `.vibrationOnly` for an ID that only vibrates, otherwise
    ///   as `action(for:)`.
    public static func sound(for id: SystemSoundID) throws(SystemSoundCatalogError) -> SystemSound {
        switch try action(for: id) {
        case .play(let sound): return sound
        case .vibrate: throw SystemSoundCatalogError(.vibrationOnly, id: id)
        }
    }

    /// Every distinct event the catalog plays, sorted.
    public static var events: [String] { Set(sounds.map(\.event)).sorted() }

    private struct Entry {
        let id: SystemSoundID
        let name: String
        let category: String
        let event: String?

        init(_ id: SystemSoundID, _ name: String, _ category: String, _ event: String?) {
            self.id = id
            self.name = name
            self.category = category
            self.event = event
        }
    }

    private static let textTones = [
        "Anticipate", "Bloom", "Calypso", "Choo_Choo", "Descent", "Fanfare", "Ladder", "Minuet", "News_Flash",
        "Noir", "Sherwood_Forest", "Spell", "Suspense", "Telegraph", "Tiptoes", "Typewriters", "Update",
    ]

    /// The SMS tones of 1007…1014 (and their previews 1307…1314): name and event; nil event for vibration.
    private static let smsTones: [(offset: SystemSoundID, name: String, event: String?)] = [
        (7, "sms-received1", "message-new-instant"),
        (8, "sms-received2", "message-new-instant-chime"),
        (9, "sms-received3", "message-new-instant-glass"),
        (10, "sms-received4", "message-new-instant-horn"),
        (11, "-", nil),
        (12, "sms-received1", "message-new-instant"),
        (13, "sms-received5", "message-new-instant-bell"),
        (14, "sms-received6", "message-new-instant-electronic"),
    ]

    /// Built once: `sounds` and `vibrationOnly` both read it.
    private static let entries: [Entry] = {
        var list: [Entry] = [
            Entry(1000, "new-mail", "MailReceived", "message-new-email"),
            Entry(1001, "mail-sent", "MailSent", "message-sent-email"),
            Entry(1002, "Voicemail", "VoicemailReceived", "message-new-voicemail"),
            Entry(1003, "ReceivedMessage", "SMSReceived", "message-new-sms"),
            Entry(1004, "SentMessage", "SMSSent", "message-sent-instant"),
            Entry(1005, "alarm", "CalendarAlert", "alarm-clock-elapsed"),
            Entry(1006, "low_power", "LowPower", "battery-low"),
        ]
        for tone in smsTones {
            list.append(Entry(1000 + tone.offset, tone.name, tone.event == nil ? "SMSReceived_Vibrate" : "SMSReceived_Alert", tone.event))
        }
        list += [
            Entry(1015, "Voicemail", "VoicemailReceived", "message-new-voicemail"),
            Entry(1016, "tweet_sent", "SMSSent", "message-sent-instant-chirp"),
        ]
        for (offset, tone) in textTones.enumerated() {
            list.append(Entry(1020 + SystemSoundID(offset), tone, "SMSReceived_Alert", textToneEvent(tone)))
        }
        list += [
            Entry(1050, "ussd", "USSDAlert", "message-new-ussd"),
            Entry(1051, "SIMToolkitCallDropped", "SIMToolkitTone", "sim-toolkit-call-dropped"),
            Entry(1052, "SIMToolkitGeneralBeep", "SIMToolkitTone", "sim-toolkit-general-beep"),
            Entry(1053, "SIMToolkitNegativeACK", "SIMToolkitTone", "sim-toolkit-negative-ack"),
            Entry(1054, "SIMToolkitPositiveACK", "SIMToolkitTone", "sim-toolkit-positive-ack"),
            Entry(1055, "SIMToolkitSMS", "SIMToolkitTone", "sim-toolkit-sms"),
            Entry(1057, "Tink", "PINKeyPressed", "button-pressed"),
            Entry(1070, "ct-busy", "AudioToneBusy", "phone-outgoing-busy"),
            Entry(1071, "ct-congestion", "AudioToneCongestion", "phone-outgoing-congestion"),
            Entry(1072, "ct-path-ack", "AudioTonePathAcknowledge", "phone-path-acknowledge"),
            Entry(1073, "ct-error", "AudioToneError", "phone-failure"),
            Entry(1074, "ct-call-waiting", "AudioToneCallWaiting", "phone-call-waiting"),
            Entry(1075, "ct-keytone2", "AudioToneKey2", "phone-key-tone"),
            Entry(1100, "lock", "ScreenLocked", "desktop-screen-lock"),
            Entry(1101, "unlock", "ScreenUnlocked", "desktop-screen-unlock"),
            Entry(1102, "-", "FailedUnlock", nil),
            Entry(1103, "Tink", "KeyPressed", "button-pressed"),
            Entry(1104, "Tock", "KeyPressed", "key-pressed"),
            Entry(1105, "Tock", "KeyPressed", "key-pressed"),
            Entry(1106, "beep-beep", "ConnectedToPower", "power-plug"),
            Entry(1107, "RingerChanged", "RingerSwitchIndication", "ringer-changed"),
            Entry(1108, "photoShutter", "CameraShutter", "camera-shutter"),
            Entry(1109, "shake", "ShakeToShuffle", "shake"),
            Entry(1110, "jbl_begin", "JBL_Begin", "voice-control-begin"),
            Entry(1111, "jbl_confirm", "JBL_Confirm", "voice-control-confirm"),
            Entry(1112, "jbl_cancel", "JBL_Cancel", "voice-control-cancel"),
            Entry(1113, "begin_record", "BeginRecording", "audio-record-begin"),
            Entry(1114, "end_record", "EndRecording", "audio-record-end"),
            Entry(1115, "jbl_ambiguous", "JBL_Ambiguous", "voice-control-ambiguous"),
            Entry(1116, "jbl_no_match", "JBL_NoMatch", "voice-control-no-match"),
            Entry(1117, "begin_video_record", "BeginVideoRecording", "video-record-begin"),
            Entry(1118, "end_video_record", "EndVideoRecording", "video-record-end"),
            Entry(1150, "vc~invitation-accepted", "VCInvitationAccepted", "video-call-invitation-accepted"),
            Entry(1151, "vc~ringing", "VCRinging", "video-call-ringing"),
            Entry(1152, "vc~ended", "VCEnded", "video-call-ended"),
            Entry(1153, "ct-call-waiting", "VCCallWaiting", "phone-call-waiting"),
            Entry(1154, "vc~ringing", "VCCallUpgrade", "video-call-ringing"),
        ]
        let keys = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "star", "pound"]
        for (offset, key) in keys.enumerated() {
            list.append(Entry(1200 + SystemSoundID(offset), "dtmf-\(key)", "TouchTone", "dtmf-\(key)"))
        }
        list += [
            Entry(1254, "long_low_short_high", "Headset_StartCall", "headset-start-call"),
            Entry(1255, "short_double_high", "Headset_Redial", "headset-redial"),
            Entry(1256, "short_low_high", "Headset_AnswerCall", "headset-answer-call"),
            Entry(1257, "short_double_low", "Headset_EndCall", "headset-end-call"),
            Entry(1258, "short_double_low", "Headset_CallWaitingActions", "headset-call-waiting"),
            Entry(1259, "middle_9_short_double_low", "Headset_TransitionEnd", "headset-transition-end"),
            Entry(1300, "Voicemail", "SystemSoundPreview", "message-new-voicemail"),
            Entry(1301, "ReceivedMessage", "SystemSoundPreview", "message-new-sms"),
            Entry(1302, "new-mail", "SystemSoundPreview", "message-new-email"),
            Entry(1303, "mail-sent", "SystemSoundPreview", "message-sent-email"),
            Entry(1304, "alarm", "SystemSoundPreview", "alarm-clock-elapsed"),
            Entry(1305, "lock", "SystemSoundPreview", "desktop-screen-lock"),
            Entry(1306, "Tock", "KeyPressClickPreview", "key-pressed"),
        ]
        for tone in smsTones {
            list.append(Entry(1300 + tone.offset, tone.name, tone.event == nil ? "SMSReceived_Vibrate" : "SMSReceived_Selection", tone.event))
        }
        list.append(Entry(1315, "Voicemail", "SystemSoundPreview", "message-new-voicemail"))
        for (offset, tone) in textTones.enumerated() {
            list.append(Entry(1320 + SystemSoundID(offset), tone, "SMSReceived_Selection", textToneEvent(tone)))
        }
        list += [
            Entry(1350, "-", "RingerVibeChanged", nil),
            Entry(1351, "-", "SilentVibeChanged", nil),
        ]
        return list.sorted { $0.id < $1.id }
    }()

    /// "Sherwood_Forest" → "message-new-instant-sherwood-forest": themes without the tone fall back
    /// to their `message-new-instant` through the Sound Naming rule.
    private static func textToneEvent(_ name: String) -> String {
        // The names are ASCII: bytes, not Unicode case mapping.
        "message-new-instant-" + String(decoding: name.utf8.map { $0 == UInt8(ascii: "_") ? UInt8(ascii: "-") : $0 | (0x41...0x5A ~= $0 ? 0x20 : 0) }, as: UTF8.self)
    }
}
