import HeraldChatServer

// herald-chat-server: the server lives in the HeraldChatServer library, so `herald demo` can run the same code.
ChatServerMain.run(arguments: Array(CommandLine.arguments.dropFirst()))
