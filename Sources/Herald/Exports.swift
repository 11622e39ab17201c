// `import Herald` is all an app needs. The client itself is HeraldCore, which imports FoundationEssentials at most,
// so that a program using only the client (herald-dbus-bridge) does not map the whole of Foundation and ICU; this
// module adds what needs Foundation proper (NotificationCenter) and re-exports the rest.
@_exported public import HeraldCore
