import HeraldMQTTBridge

// herald-mqtt-bridge: the bridge lives in the HeraldMQTTBridge library, where its parts are tested. Synchronous on
// purpose: see BridgeMain.start.
BridgeMain.start(arguments: Array(CommandLine.arguments.dropFirst()))
