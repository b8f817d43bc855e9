public import FoundationEssentials

extension ShippedTheme {
    /// Writes the theme into `root/feedbackservices/`: `index.theme` and every sound, removing files
    /// of ours that are no longer part of it. The same code always writes the same bytes.
    /// - Returns: the paths written, relative to `root`, sorted.
    @discardableResult
    public static func write(to root: String) throws -> [String] {
        let fileManager = FileManager.default
        let themeDirectory = root + "/" + name
        let soundDirectory = themeDirectory + "/" + directory
        try fileManager.createDirectory(atPath: soundDirectory, withIntermediateDirectories: true)
        let expected = Set(sounds.map { "\($0.event).wav" })
        for stale in try fileManager.contentsOfDirectory(atPath: soundDirectory) where !expected.contains(stale) {
            try fileManager.removeItem(atPath: soundDirectory + "/" + stale)
        }
        var written = [name + "/index.theme"]
        try Data(indexTheme.utf8).write(to: URL(filePath: themeDirectory + "/index.theme"))
        for sound in sounds {
            let bytes = WAVEncoder.encode(sound.render())
            try Data(bytes).write(to: URL(filePath: themeDirectory + "/" + sound.file))
            written.append(name + "/" + sound.file)
        }
        return written.sorted()
    }
}
