/// "subject: summary (detail)": the sentence the errors that name a file or a source read as, the
/// detail (the system's or a library's own words) left out when there is none.
func errorSentence(_ subject: String, _ summary: String, detail: String?) -> String {
    guard let detail, !detail.isEmpty else { return "\(subject): \(summary)" }
    return "\(subject): \(summary) (\(detail))"
}
