import FeedbackDaemon
import FoundationEssentials
import Glibc

exit(Daemon.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
