// swift-tools-version:6.0
import PackageDescription

/// Code written for iOS's System Sound Services, built against FeedbackServices' `AudioToolbox`
/// product as another package would use it: the same sources as an executable in the Swift 5 and
/// in the Swift 6 language mode. FeedbackServicesTests' `AudioToolboxPackageTests` runs both at a
/// private PulseAudio server and checks what its monitor recorded; `scripts/test` builds them:
///
///     swift build --package-path Tests/AudioToolboxPackage --scratch-path .build/audiotoolbox-package
let package = Package(
    name: "AudioToolboxPackage",
    dependencies: [.package(name: "FeedbackServices", path: "../..")],
    targets: [
        .executableTarget(
            name: "ios-sounds-swift6",
            dependencies: [.product(name: "AudioToolbox", package: "FeedbackServices")],
            path: "Sources/Swift6",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // Sources/Swift5's files are links to Sources/Swift6's: one program, two language modes.
        .executableTarget(
            name: "ios-sounds-swift5",
            dependencies: [.product(name: "AudioToolbox", package: "FeedbackServices")],
            path: "Sources/Swift5",
            swiftSettings: [.swiftLanguageMode(.v5)]),
    ]
)
