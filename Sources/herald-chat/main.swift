import HeraldChatClient

// herald-chat: the client lives in the HeraldChatClient library, so `herald demo` can run the same code.
await ChatClientMain.run(arguments: Array(CommandLine.arguments.dropFirst()))
