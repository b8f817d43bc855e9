import FeedbackCLI
import Glibc

exit(FeedbackCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
