import HeraldDBusBridge

// herald-dbus-bridge: the bridge lives in the HeraldDBusBridge library, where its parts are tested.
await DBusBridgeMain.run(arguments: Array(CommandLine.arguments.dropFirst()))
