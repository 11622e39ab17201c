import HeraldPosix
import Testing

@Suite struct ProcessEnvironmentTests {
    /// Each variable holds what `getenv` finds for its name, including a value that itself contains `=`.
    @Test func variablesAreWhatGetenvFinds() {
        let variables = ProcessEnvironment.variables()
        #expect(!variables.isEmpty)
        for (name, value) in variables {
            #expect(ProcessEnvironment.value(name) == value, "\(name)")
        }
        let names = Set(ProcessEnvironment.entries().compactMap { entry in entry.split(separator: "=").first })
        #expect(Set(variables.keys) == Set(names.map(String.init)))
    }
}
