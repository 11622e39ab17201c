/// The harness's log-linear latency histogram (bench.c): exact below 128 ns, then 64 sub-buckets per power of two,
/// about 1.6 % resolution. Percentiles are bucket midpoints, as bench.c reports them.
struct LatencyHistogram: Sendable {
    static let bucketCount = 3776

    private(set) var counts: [UInt64]
    private(set) var minimum = UInt64.max
    private(set) var maximum: UInt64 = 0

    init() {
        counts = [UInt64](repeating: 0, count: Self.bucketCount)
    }

    /// Records one latency in nanoseconds.
    mutating func record(_ nanoseconds: UInt64) {
        counts[Self.bucket(nanoseconds)] &+= 1
        minimum = min(minimum, nanoseconds)
        maximum = max(maximum, nanoseconds)
    }

    /// Adds another histogram's samples.
    mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] &+= other.counts[index] }
        minimum = min(minimum, other.minimum)
        maximum = max(maximum, other.maximum)
    }

    /// The `quantile` (0...1) in nanoseconds, 0 when empty.
    func percentile(_ quantile: Double) -> Double {
        let total = counts.reduce(0, +)
        guard total > 0 else { return 0 }
        let wanted = max(1, UInt64(quantile * Double(total) + 0.5))
        var accumulated: UInt64 = 0
        for (index, count) in counts.enumerated() {
            accumulated += count
            if accumulated >= wanted { return Self.midpoint(index) }
        }
        return 0
    }

    static func bucket(_ value: UInt64) -> Int {
        if value < 128 { return Int(value) }
        let shift = 63 - value.leadingZeroBitCount - 6
        return (shift + 1) * 64 + Int(value >> UInt64(shift)) - 64
    }

    static func midpoint(_ bucket: Int) -> Double {
        if bucket < 128 { return Double(bucket) }
        let shift = bucket / 64 - 1
        return Double(UInt64(bucket % 64 + 64) << UInt64(shift)) + Double(UInt64(1) << UInt64(shift)) / 2
    }
}
