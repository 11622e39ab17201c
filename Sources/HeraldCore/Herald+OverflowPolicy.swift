import HeraldWire

extension Herald {
    /// What the daemon does with a subscriber's connection that reads too slowly, once its queue is full.
    ///
    /// A connection uses the strictest policy among its subscriptions: ``disconnect`` over ``coalesce`` over
    /// ``dropOldest``.
    public enum OverflowPolicy: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Drop the oldest queued notifications; the stream gets a `herald.dropped` notice with the exact count.
        case dropOldest
        /// Keep the newest notification per name, then drop the oldest, with a `herald.dropped` notice.
        case coalesce
        /// Close the connection (`SLOW_CONSUMER`): for a consumer that would rather fail than miss anything.
        case disconnect

        /// The policy's name as the CLI spells it: `drop-oldest`, `coalesce`, `disconnect`.
        public var description: String {
            wire.description
        }

        /// Parses the CLI's spelling, the inverse of ``description``.
        ///
        /// - Returns: nil for any other text.
        public init?(parsing text: String) {
            guard let policy = Self.allCases.first(where: { $0.description == text }) else { return nil }
            self = policy
        }

        /// The policy as `SUBSCRIBE` carries it: the one place the library's policy becomes the wire's.
        var wire: HeraldWire.OverflowPolicy {
            switch self {
            case .dropOldest: .dropOldest
            case .coalesce: .coalesce
            case .disconnect: .disconnect
            }
        }
    }
}
