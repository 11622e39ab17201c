public import Testing

extension Trait where Self == TimeLimitTrait {
    /// The time limit of a test that may hang: ten minutes, to end a hung test, not to bound a slow one.
    ///
    /// Swift Testing counts a test's time from its start, and a whole parallel `swift test` runs a thousand tests on
    /// this project's two cores in about 150 s: an end-to-end test spends most of that waiting for the cores, and
    /// took 142 of its 180 s in a quiet run. A limit near the length of the whole run fails under load, not on a
    /// fault; the bounds a test means are its own waits (`eventually`), each with its timeout.
    public static var hangGuard: Self { .timeLimit(.minutes(10)) }
}
