// startup-floor: a Swift program that prints one line and exits, linked as feedbackctl is (Swift's
// libraries statically, `--no-export-dynamic`). `feedbackbench --only startup` times it beside
// `feedbackctl version` and C programs: what any such Swift executable pays to start on this
// machine, before feedbackctl does anything of its own.
print("startup-floor")
