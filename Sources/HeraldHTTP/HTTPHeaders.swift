/// Header fields in the order they came or will be sent; names compare case-insensitively.
public struct HTTPHeaders: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    private var fields: [(name: String, value: String)] = []

    /// No fields.
    public init() {}

    /// The fields in order, e.g. `["Content-Type": "text/plain"]`.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements {
            add(name: name, value: value)
        }
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append((name, value))
    }

    /// Replaces every field named `name` with one holding `value`.
    public mutating func replaceOrAdd(name: String, value: String) {
        fields.removeAll { $0.name.lowercased() == name.lowercased() }
        fields.append((name, value))
    }

    /// The values of every field named `name`, in order.
    public subscript(name: String) -> [String] {
        let wanted = name.lowercased()
        return fields.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The first value of the field named `name`.
    public func first(_ name: String) -> String? {
        self[name].first
    }

    /// The number of fields.
    public var count: Int {
        fields.count
    }

    public func makeIterator() -> some IteratorProtocol<(name: String, value: String)> {
        fields.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for field in fields {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }
}
