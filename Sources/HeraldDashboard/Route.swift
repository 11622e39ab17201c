public import Herald
public import HeraldHTTP

/// What a request to the dashboard asks for, decided with no I/O: the access checks, the routes, and the checks of a
/// post's name and payload and of a plugin request, so that whatever is refused is refused before anything happens.
public enum Route: Sendable, Equatable {
    /// The page, plotting `selected` besides all posts.
    case page(selected: String?)
    /// The event stream, catching up from post `after`, with `selected`'s rate in its ticks.
    case events(after: UInt64, selected: String?)
    /// Post `payload` to `name`.
    case post(name: String, payload: [UInt8], retain: Bool, wantsJSON: Bool)
    /// Send `PLUGIN` `action` for `name`.
    case plugin(Herald.PluginAction, name: String, wantsJSON: Bool)
    /// Answer with this and do nothing else.
    case refuse(HTTPResponse)

    /// Decides on `request` under `policy`.
    public init(_ request: HTTPRequest, policy: AccessPolicy) {
        if case .forbidden(let reason) = policy.decide(request) {
            self = .refuse(.error(.forbidden, reason: reason))
            return
        }
        let query = FormFields(query: request.query ?? "")
        let selected = query["name"].flatMap { $0.isEmpty ? nil : $0 }
        let routes = ["/": "GET", "/events": "GET", "/post": "POST", "/plugin": "POST"]
        guard let method = routes[request.path] else {
            self = .refuse(.error(.notFound, reason: "there is no \(request.path) here"))
            return
        }
        guard request.method == method || (method == "GET" && request.method == "HEAD") else {
            self = .refuse(
                .error(.methodNotAllowed, reason: "\(request.path) takes \(method)", headers: ["Allow": method])
            )
            return
        }
        let wantsJSON = request.headers["Accept"].contains { $0.contains("application/json") }
        switch request.path {
        case "/":
            self = .page(selected: selected)
        case "/events":
            self = .events(after: query["after"].flatMap { UInt64($0) } ?? 0, selected: selected)
        case "/post":
            let form = FormFields(body: request.body)
            let name = form["name"] ?? ""
            do throws(HeraldError) {
                try Herald.validate(name: name, forPosting: true)
            } catch {
                self = .refuse(.error(.badRequest, reason: error.message))
                return
            }
            let text = form["payload"].flatMap { $0.isEmpty ? nil : $0 } ?? "{}"
            guard case .object(let object)? = JSONValue.decode(Array(text.utf8)) else {
                self = .refuse(.error(.badRequest, reason: "the payload must be a JSON object, such as {\"key\":1}"))
                return
            }
            self = .post(
                name: name,
                payload: JSONValue.encodeObject(object),
                retain: form["retain"].map { ["on", "true", "1"].contains($0) } ?? false,
                wantsJSON: wantsJSON
            )
        default:
            let form = FormFields(body: request.body)
            let name = form["name"] ?? ""
            guard let action = form["action"].flatMap(Herald.PluginAction.init(rawValue:)), action != .reload else {
                self = .refuse(.error(.badRequest, reason: "the action must be start, stop or restart"))
                return
            }
            guard !name.isEmpty, !name.contains("."), (try? Herald.validate(name: name)) != nil else {
                self = .refuse(.error(.badRequest, reason: "\"\(name)\" is not a plugin's name"))
                return
            }
            self = .plugin(action, name: name, wantsJSON: wantsJSON)
        }
    }
}
