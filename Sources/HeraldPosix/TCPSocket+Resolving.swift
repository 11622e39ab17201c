#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TCPSocket {
    /// Connects to `host` and `port`, where `host` may be a name: it is resolved (`getaddrinfo`, which may wait on
    /// DNS, so call it from a thread that may block) and each of its addresses is tried in the resolver's order
    /// until one connects ("localhost" too, which may be ::1 before 127.0.0.1). An IPv4 or IPv6 literal connects as
    /// ``connect(host:port:)`` does.
    ///
    /// - Returns: a connected socket, BLOCKING and close-on-exec, with `TCP_NODELAY` set.
    /// - Throws: ``SystemError``: the last address's failure, or ENOENT naming the resolver's error for a name that
    ///   does not resolve.
    public static func connect(resolving host: String, port: UInt16) throws(SystemError) -> FileDescriptor {
        if isLiteral(host) { return try connect(host: host, port: port) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            let reason = String(cString: gai_strerror(status))
            throw SystemError(operation: "resolve the host name \(host) (\(reason))", errno: .noEntry)
        }
        defer { freeaddrinfo(first) }
        var literals: [String] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            if let literal = numericAddress(entry.pointee), !literals.contains(literal) { literals.append(literal) }
            next = entry.pointee.ai_next
        }
        var lastError = SystemError(operation: "connect to \(host) (it has no IPv4 or IPv6 address)", errno: .noEntry)
        for literal in literals {
            do {
                return try connect(host: literal, port: port)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Whether `host` is an IPv4 or IPv6 literal.
    private static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// The text of an IPv4 or IPv6 address the resolver returned.
    private static func numericAddress(_ entry: addrinfo) -> String? {
        guard let address = entry.ai_addr else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch entry.ai_family {
        case AF_INET:
            var ip = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &ip, &text, socklen_t(text.count)) != nil else { return nil }
        case AF_INET6:
            var ip = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            guard inet_ntop(AF_INET6, &ip, &text, socklen_t(text.count)) != nil else { return nil }
        default:
            return nil
        }
        // inet_ntop wrote a NUL-terminated ASCII address: decode the bytes before it.
        let length = text.firstIndex(of: 0) ?? text.count
        return String(decoding: text[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
