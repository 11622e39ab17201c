import HeraldMQTTBridge

// herald-mqtt-bridge: the bridge lives in the HeraldMQTTBridge library, where its parts are tested.
await BridgeMain.run(arguments: Array(CommandLine.arguments.dropFirst()))
