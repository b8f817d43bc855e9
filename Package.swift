// swift-tools-version:6.0
import PackageDescription

/// FeedbackServices: AudioServices-style system sounds, alert feedback and vibration for Linux.
///
/// C libraries stay at the edge: each one is a system-library target (module map + `shim.h`),
/// imported only by the library's internal code. None is linked: each is loaded on its first call
/// (COptionalLibraries), so a process maps only the libraries its route calls.
let package = Package(
    name: "FeedbackServices",
    products: [
        .library(name: "FeedbackServices", targets: ["FeedbackServices", "FeedbackPlayer"]),
        // Apple's module name, for code written for Apple platforms: `import AudioToolbox`.
        .library(name: "AudioToolbox", targets: ["AudioToolbox"]),
        .executable(name: "feedbackctl", targets: ["feedbackctl"]),
        .executable(name: "feedbackservicesd", targets: ["feedbackservicesd"]),
    ],
    targets: [
        // Declarations only, no `link` and no pkg-config (whose libraries SwiftPM would link):
        // COptionalLibraries defines every function of theirs the package calls and loads the
        // library on the first call, so a process that needs none of them (feedbackctl version)
        // does not map them, and what they depend on, at start-up. Their headers are in
        // /usr/include (the Debian -dev packages: libsndfile1-dev, libpulse-dev, libsoxr-dev,
        // libcanberra-dev, libevdev-dev, libpipewire-0.3-dev, libebur128-dev, libsystemd-dev,
        // libasound2-dev), PipeWire's in directories of their own (`pipeWireHeaders`).
        .systemLibrary(name: "CSndFile"),
        .systemLibrary(name: "CPulse"),
        .systemLibrary(name: "CSoxr"),
        .systemLibrary(name: "CCanberra"),
        .systemLibrary(name: "CEvdev"),
        // PipeWire's own client library: PipeWireOutput's pw_stream.
        .systemLibrary(name: "CPipeWire"),
        // EBU R128 loudness measurement, for normalising registered sounds to a target in LUFS.
        .systemLibrary(name: "CEbur128"),
        // sd-bus and sd-event: the session service's D-Bus connection and its loop.
        .systemLibrary(name: "CSystemd"),
        // ALSA: the engine's output on machines with no sound server (ALSAOutput).
        .systemLibrary(name: "CALSA"),
        .target(name: "COptionalLibraries", cSettings: [.unsafeFlags(pipeWireHeaders)]),
        .target(name: "CFeedbackShims"),
        .target(
            name: "FeedbackServices",
            dependencies: [
                "CSndFile", "CSoxr", "CPulse", "CPipeWire", "CCanberra", "CEvdev", "CEbur128", "CALSA", "COptionalLibraries",
                "CFeedbackShims",
            ],
            swiftSettings: strict + [.unsafeFlags(pipeWireHeaders + ["-Xcc", "-DFEEDBACKSERVICES_PIPEWIRE"])]),
        // Apple's System Sound Services under Apple's module name: it re-exports FeedbackServices,
        // where the functions and constants are declared, and declares nothing of its own.
        .target(
            name: "AudioToolbox",
            dependencies: ["FeedbackServices"],
            swiftSettings: strict),
        // Sound and SoundManager: the classic player API. A module of its own because its
        // notifications need Foundation's NotificationCenter, and with it ICU; feedbackctl, which
        // does not use it, then starts without loading either (see CommandBenchmark).
        .target(
            name: "FeedbackPlayer",
            dependencies: ["FeedbackServices"],
            swiftSettings: strict),
        // FeedbackDaemon: `feedback-theme check` reads feedback themes as the service reads them.
        .target(
            name: "FeedbackCLI",
            dependencies: ["FeedbackServices", "FeedbackBus", "FeedbackDaemon"],
            swiftSettings: strict),
        // Swift's own libraries linked in statically: a process that starts in about half the
        // time, which is most of a `feedbackctl fire` (CommandBenchmark). `--no-export-dynamic`:
        // the executable's dynamic symbol table keeps only what the libraries it loads need (374
        // entries, not 2,943: our modules' public symbols, which nothing looks up), so the Swift
        // runtime's start-up `dladdr` scans less and every symbol a `dlopen`ed library binds
        // searches a smaller table first: `version` 3.3–3.6 → 2.8–3.0 ms, `fire 1007`'s `dlopen`
        // of libpulse begins 0.46 ms sooner after `exec` and its first write 1.0 ms sooner
        // (medians of 40, interleaved).
        .executableTarget(
            name: "feedbackctl",
            dependencies: ["FeedbackCLI"],
            swiftSettings: strict,
            linkerSettings: [.unsafeFlags(executableLinking)]),
        // The sd-bus wrapper: the service's connection and loop, and the client calls feedbackctl
        // makes to it.
        .target(
            name: "FeedbackBus",
            dependencies: ["FeedbackServices", "CSystemd"],
            swiftSettings: strict),
        // The session service: feedbackd's theme format, org.sigxcpu.Feedback and
        // org.feedbackservices.SystemSounds1, a library so that its tests can run it in process;
        // feedbackservicesd is its main.
        .target(
            name: "FeedbackDaemon",
            dependencies: ["FeedbackServices", "FeedbackBus", "COptionalLibraries"],
            swiftSettings: strict),
        // Linked like feedbackctl, so that the installed service does not depend on the toolchain's place.
        .executableTarget(
            name: "feedbackservicesd",
            dependencies: ["FeedbackDaemon", "FeedbackCLI"],
            swiftSettings: strict,
            linkerSettings: [.unsafeFlags(executableLinking)]),
        .target(
            name: "SoundSynthesis",
            swiftSettings: strict),
        .executableTarget(
            name: "generate-sound-theme",
            dependencies: ["SoundSynthesis"],
            swiftSettings: strict),
        // The start-up floor `feedbackbench --only startup` measures feedbackctl against.
        .executableTarget(
            name: "startup-floor",
            swiftSettings: strict,
            linkerSettings: [.unsafeFlags(executableLinking)]),
        .executableTarget(
            name: "feedbackbench",
            dependencies: ["FeedbackServices", "FeedbackBus", "FeedbackTestSupport", "CSndFile", "CCanberra", "CMixReference"],
            swiftSettings: strict),
        // The mixer benchmark's reference loop in C, at -O3 whatever the build configuration.
        .target(name: "CMixReference", cSettings: [.unsafeFlags(["-O3"])]),
        .target(
            name: "FeedbackTestSupport",
            dependencies: ["FeedbackServices"],
            swiftSettings: strict),
        // The haptics cases that need a kernel with uinput: built statically and run inside a VM by
        // scripts/vm/haptics (HapticsVMTests drives it); never installed.
        .executableTarget(
            name: "haptics-vm-cases",
            dependencies: ["FeedbackServices", "FeedbackCLI", "FeedbackTestSupport", "CALSA"],
            path: "Tests/HapticsVMCases",
            swiftSettings: strict,
            // Its capture side calls libasound directly (the library loads it on first use).
            linkerSettings: [.linkedLibrary("asound")]),
        .testTarget(
            name: "FeedbackServicesTests",
            dependencies: [
                "FeedbackServices", "FeedbackPlayer", "FeedbackTestSupport", "CSndFile", "CFeedbackShims", "SoundSynthesis",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "FeedbackDaemonTests",
            dependencies: ["FeedbackDaemon", "FeedbackBus", "FeedbackServices", "FeedbackTestSupport", "FeedbackCLI"],
            swiftSettings: strict),
        .testTarget(
            name: "FeedbackCLITests",
            dependencies: ["FeedbackCLI", "FeedbackServices", "FeedbackTestSupport"],
            swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)

/// The C++ runtime the static Swift runtime needs (libstdc++ and the unwinder), linked into the
/// executables rather than loaded: the link line asks for `-lstdc++` and `-lgcc_s`, which find the
/// linker scripts in `Linking/static-c++-runtime` first, and they name GCC's `libstdc++.a` and
/// `libgcc_eh.a`. A process then maps neither libstdc++.so.6 nor libgcc_s.so.1 (their relocations,
/// constructors and CPU probing): `feedbackctl version` 2.3 → 1.9 ms on this machine (issue 14).
/// Nothing the programs load later shares C++ objects with them (libpulse, libsndfile and its
/// codecs, libpipewire, libasound, libsystemd are C).
var staticCxxRuntime: [String] { ["-L\(Context.packageDirectory)/Linking/static-c++-runtime"] }

/// How `feedbackctl` and `feedbackservicesd` are linked: Swift's libraries and the C++ runtime
/// statically, and no export of the executable's own symbols (see `feedbackctl`).
var executableLinking: [String] {
    ["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims", "-Xlinker", "--no-export-dynamic"] + staticCxxRuntime
}

/// Where libpipewire-0.3's and SPA's headers are (`pkg-config --cflags libpipewire-0.3`): given
/// by hand, as a pkg-config target would link the library too.
var pipeWireHeaders: [String] { ["-I/usr/include/pipewire-0.3", "-I/usr/include/spa-0.2"] }

/// Settings shared by every Swift target: imports are internal unless marked `public import`, so no
/// C module leaks into the public API; and a generic type's metadata is made by calling its
/// accessor with the arguments and conformances the compiler knows, not by demangling its name at
/// run time (`-disable-concrete-type-metadata-mangled-name-accessors`). Demangling looks every
/// conformance a generic requirement needs up in the executable's ~3,800 conformance records, the
/// first time each is needed: that was 20 % of `feedbackctl fire`'s main thread (perf, 20 runs;
/// 2–3 % after), and `fire --pcm` reaches `snd_pcm_open` 6.35 → 5.02 ms after `exec` (median of 40,
/// interleaved). `-prespecialize-generic-metadata` was tried beside it and crashed the tests.
var strict: [SwiftSetting] {
    [
        .enableUpcomingFeature("InternalImportsByDefault"),
        .unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"]),
    ]
}

/// libFuzzer targets, one line each: the target's name (its sources are `Tests/Fuzz/Targets/NAME`,
/// its seeds `Tests/Fuzz/corpus/NAME`) and the modules it drives. They exist only when
/// `scripts/fuzz` builds them (it sets FEEDBACKSERVICES_FUZZ and builds with
/// `-sanitize=fuzzer,address` in a scratch directory of its own): without libFuzzer they have no `main`.
let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
    ("decoder", ["FeedbackServices"]),
    ("theme", ["FeedbackServices"]),
    ("settings", ["FeedbackServices"]),
    ("arguments", ["FeedbackCLI"]),
    ("ahap", ["FeedbackServices"]),
]

if Context.environment["FEEDBACKSERVICES_FUZZ"] != nil {
    package.targets += [
        .systemLibrary(name: "CLibFuzzer", path: "Tests/Fuzz/CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", "CFeedbackShims"], path: "Tests/Fuzz/Support", swiftSettings: strict),
    ]
    for fuzz in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: "fuzz-\(fuzz.name)", dependencies: fuzz.dependencies + ["FuzzSupport"],
                path: "Tests/Fuzz/Targets/\(fuzz.name)",
                swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])]))
        package.products.append(.executable(name: "fuzz-\(fuzz.name)", targets: ["fuzz-\(fuzz.name)"]))
    }
}
