import FoundationEssentials
import Glibc

/// The shared objects a run of a program mapped, from the dynamic loader's own report
/// (`LD_DEBUG=files`), by file name (`libpulse.so.0`).
package struct LoadedObjects: Sendable {
    /// Every object mapped: linked, needed by another, or opened with `dlopen`.
    package var all: Set<String> = []
    /// Those the program itself opened with `dlopen` (the loader's "dynamically loaded by" it),
    /// not another library.
    package var openedByProgram: Set<String> = []
}

/// The libraries FeedbackServices loads on their first call (COptionalLibraries), by soname.
package let optionalLibraries: Set = [
    "libcanberra.so.0", "libevdev.so.2", "libebur128.so.1", "libsoxr.so.0", "libasound.so.2", "libpulse.so.0",
    "libsndfile.so.1", "libsystemd.so.0", "libpipewire-0.3.so.0",
]

/// Runs `path` as `runProcess` does, with `LD_DEBUG=files`, and reads what the loader mapped from
/// its lines on standard error ("file=libpulse.so.0 [0];  needed by /usr/lib/…/libfoo.so [0]",
/// "file=libsndfile.so.1 [0];  dynamically loaded by /…/feedbackctl [0]").
package func runReportingLoadedObjects(
    _ path: String, _ arguments: [String], environment: [String] = []
) -> (result: ProcessResult, objects: LoadedObjects) {
    let result = runProcess(path, arguments, environment: ["LD_DEBUG=files"] + environment)
    var objects = LoadedObjects()
    for line in result.errors.split(separator: "\n") {
        guard let start = line.firstRange(of: "file=") else { continue }
        let file = line[start.upperBound...].prefix { $0 != " " && $0 != "\t" }
        let name = String(file.split(separator: "/").last ?? file)
        objects.all.insert(name)
        if line.contains("dynamically loaded by \(path) ") { objects.openedByProgram.insert(name) }
    }
    return (result, objects)
}

/// A directory for `LD_LIBRARY_PATH` in which each of `sonames` is an empty file: the loader finds
/// it first and `dlopen` fails ("file too short"), as for a library that is missing or damaged.
package func brokenLibraries(_ sonames: [String], in directory: TemporaryDirectory) -> String {
    let libraries = directory.file("broken-libraries")
    mkdir(libraries, 0o755)
    for soname in sonames {
        precondition(FileManager.default.createFile(atPath: "\(libraries)/\(soname)", contents: Data()))
    }
    return libraries
}
