internal import CALSA
import Glibc

/// The ALSA sound cards and playback PCMs of this machine, for `feedbackctl devices` and for
/// choosing `ALSAOutput.Configuration.device`.
package struct ALSADeviceList: Sendable, Equatable {
    /// A sound card the kernel has (`snd_card_next`).
    package struct Card: Sendable, Equatable {
        /// Its number: `hw:INDEX,0` is its first PCM.
        package var index: Int
        /// Its short and long names (`snd_card_get_name`, `snd_card_get_longname`).
        package var name: String
        package var longName: String
    }

    /// A PCM that plays, from the configuration and the cards (`snd_device_name_hint`).
    package struct PCM: Sendable, Equatable {
        /// What to pass as the device: `default`, `hw:CARD=Loopback,DEV=0`, `dmix:…`.
        package var name: String
        /// Its description, lines joined with " — ".
        package var description: String
    }

    /// The cards, in the kernel's order.
    package var cards: [Card]
    /// The PCMs that can play (the ones ALSA's hints mark as capture only are left out).
    package var pcms: [PCM]

    /// What the kernel and ALSA's configuration offer now. Nothing is opened; a machine with no
    /// card has no cards and only the configuration's PCMs.
    package static func current() -> ALSADeviceList {
        ALSAPCM.silenceLibraryMessages
        return ALSADeviceList(cards: cardList(), pcms: pcmList())
    }

    private static func cardList() -> [Card] {
        var cards: [Card] = []
        var index: Int32 = -1
        while snd_card_next(&index) == 0 && index >= 0 {
            cards.append(Card(index: Int(index), name: take { snd_card_get_name(index, &$0) }, longName: take { snd_card_get_longname(index, &$0) }))
        }
        return cards
    }

    private static func pcmList() -> [PCM] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var pcms: [PCM] = []
        var cursor = hints
        while let hint = cursor.pointee {
            defer { cursor += 1 }
            let direction = hintValue(hint, "IOID")
            guard direction == nil || direction == "Output", let name = hintValue(hint, "NAME") else { continue }
            let description = (hintValue(hint, "DESC") ?? "").split(separator: "\n").joined(separator: " — ")
            pcms.append(PCM(name: name, description: description))
        }
        return pcms
    }

    /// A hint's field, which libasound returns in memory the caller frees.
    private static func hintValue(_ hint: UnsafeMutableRawPointer, _ field: String) -> String? {
        guard let value = snd_device_name_get_hint(hint, field) else { return nil }
        defer { free(value) }
        return String(cString: value)
    }

    /// A string a libasound call allocates for the caller; empty when the call fails.
    private static func take(_ call: (inout UnsafeMutablePointer<CChar>?) -> Int32) -> String {
        var value: UnsafeMutablePointer<CChar>?
        guard call(&value) == 0, let value else { return "" }
        defer { free(value) }
        return String(cString: value)
    }
}
