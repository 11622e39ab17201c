import HeraldDBusBridge

// herald-dbus-bridge: the bridge lives in the HeraldDBusBridge library, where its parts are tested. Synchronous on
// purpose: see DBusBridgeMain.start.
DBusBridgeMain.start(arguments: Array(CommandLine.arguments.dropFirst()))
