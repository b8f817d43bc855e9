/// The release the package's programs (feedbackctl, feedbackservicesd) are: one version and one
/// date for both, which `--version` and the manual pages print.
package enum Release {
    /// The version.
    package static let version = "0.1.0"

    /// The day `version` was released, as a manual page's `.TH` line dates it: fixed with the version
    /// rather than the build's date, so that a generated page is the same on every build.
    package static let date = "2026-12-03"
}
