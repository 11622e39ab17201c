/// The supervisor's plugins by name, remembering which were written since the last ``takeChanged()``, so the end
/// of an event looks at the plugins it touched and not at every plugin.
struct PluginTable: Sendable {
    private var byName: [String: Supervisor.Plugin] = [:]
    private var changed: Set<String> = []

    /// The plugin called `name`; every write marks it changed.
    subscript(name: String) -> Supervisor.Plugin? {
        get { byName[name] }
        set {
            byName[name] = newValue
            changed.insert(name)
        }
    }

    /// Every name.
    var names: Dictionary<String, Supervisor.Plugin>.Keys { byName.keys }

    /// Every plugin with its name.
    var entries: [String: Supervisor.Plugin] { byName }

    /// The names written since the last call, sorted, and forgets them.
    mutating func takeChanged() -> [String] {
        defer { changed.removeAll(keepingCapacity: true) }
        return changed.sorted()
    }
}

/// Instants paired with plugin names, earliest first: the supervisor's restarts and SIGKILLs that are due later.
/// An entry whose plugin has since moved on is dropped when it comes to the top, so each push and pop is O(log n).
struct DeadlineHeap: Sendable {
    private var items: [(at: Instant, name: String)] = []

    var first: (at: Instant, name: String)? { items.first }

    private static func before(_ a: (at: Instant, name: String), _ b: (at: Instant, name: String)) -> Bool {
        a.at < b.at || (a.at == b.at && a.name < b.name)
    }

    mutating func push(_ at: Instant, _ name: String) {
        items.append((at, name))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    mutating func popFirst() -> (at: Instant, name: String)? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let first = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && Self.before(items[left], items[smallest]) { smallest = left }
            if right < items.count && Self.before(items[right], items[smallest]) { smallest = right }
            guard smallest != parent else { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }
}
