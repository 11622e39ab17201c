import HeraldLaunch
import Testing

struct ProgramTests {
    @Test(
        arguments: [
            (["--role=heraldd", "--socket", "/tmp/s"], Program.Role.heraldd, ["--socket", "/tmp/s"]),
            (["--role=herald-chat-server", "--port", "0"], .chatServer, ["--port", "0"]),
            (["--role=herald-chat"], .chatClient, []),
        ] as [([String], Program.Role, [String])]
    )
    func theFirstArgumentSelectsAHiddenRoleAndTheRestAreItsOwn(
        arguments: [String],
        role: Program.Role,
        rest: [String]
    ) throws {
        let selected = try #require(Program.Role.selected(by: arguments))
        #expect(selected.role == role)
        #expect(selected.arguments == rest)
    }

    @Test(arguments: [[], ["post", "--role=heraldd"], ["--role=sshd"], ["--role"], ["--role=", "x"]])
    func anythingElseSelectsNoRole(arguments: [String]) {
        #expect(Program.Role.selected(by: arguments) == nil)
    }

    @Test func aRoleRunsTheHeraldBinaryWithTheSelectorFirst() {
        let program = Program(role: .heraldd, of: "/opt/bin/herald")
        #expect(program.executable == "/opt/bin/herald")
        #expect(program.leadingArguments == ["--role=heraldd"])
        #expect(Program(executable: "/opt/bin/heraldd").leadingArguments.isEmpty)
    }
}
