import HeraldDaemon

// heraldd: the daemon lives in the HeraldDaemon library, so `herald demo` can run the very same code.
DaemonMain.run(arguments: Array(CommandLine.arguments.dropFirst()))
