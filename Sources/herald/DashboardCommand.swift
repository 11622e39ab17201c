import Herald
import HeraldCommandLine
import HeraldDashboard

/// `herald dashboard [--port N] [--posts N]`: a live web view of the session on 127.0.0.1.
struct DashboardCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald dashboard",
        abstract: "Serve a live web view of the session on 127.0.0.1: names, rates, plugins, status, a post form.",
        discussion: """
            Prints the URL to open, with a random token, as Jupyter does; without the token nothing is served \
            (403), and a request that changes something must name 127.0.0.1 or localhost as its Host and come from \
            the page itself (its Origin). The page shows the tree of names with their retained values, last post \
            times and posts per second, a plot of the last 5 minutes, the plugins with start, stop and restart \
            buttons, heraldd's status, the bridges' states and a form to post. Only the session's owner may run it \
            (it monitors). Runs until interrupted or until heraldd goes away (exit 69).
            """,
        options: [
            OptionSpec(
                long: "port",
                valueName: "N",
                help: "The port on 127.0.0.1.",
                defaultDescription: "one the kernel chooses"
            ),
            OptionSpec(
                long: "posts",
                valueName: "N",
                help: "How many of the last posts the page lists.",
                defaultDescription: "100"
            ),
            CommonOptions.socket,
        ]
    )

    var options: Dashboard.Options

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = Dashboard.Options()
        options.socketPath = arguments.value("socket")
        if let port = try arguments.int("port", range: 0...65_535) {
            options.port = UInt16(port)
        }
        if let posts = try arguments.int("posts", range: 1...10_000) {
            options.recentPosts = posts
        }
        options.logNoticesToStandardError()
    }

    func run() async throws(CommandFailure) {
        let dashboard: Dashboard
        do {
            dashboard = try await Dashboard(options: options)
        } catch let error as HeraldError {
            throw CommandFailure(error)
        } catch {
            throw .failure("\(error)")
        }
        Terminal.writeStdout("herald dashboard: open \(dashboard.url)\n")
        do throws(HeraldError) {
            try await dashboard.run()
        } catch {
            throw CommandFailure(error)
        }
    }
}
