/// A violation of the D-Bus Specification met while decoding or encoding a message, a signature or a name.
///
/// `code` says which rule was broken, `reason` says for people what was wrong and where. After the decoder throws
/// one, the connection is unusable: the specification asks a peer that receives an invalid message to disconnect.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which rule of the specification was broken.
    public enum Code: Hashable, Sendable {
        /// The input ended before the value or message did.
        case truncated
        /// A padding byte before an aligned value was not zero.
        case badPadding
        /// A boolean was neither 0 nor 1.
        case badBoolean
        /// A string, object path or signature was not valid UTF-8, had a NUL inside or lacked its terminating NUL.
        case badString
        /// An object path broke the specification's rules.
        case invalidObjectPath
        /// A signature broke the grammar, or was longer than 255 bytes.
        case invalidSignature
        /// Arrays, structs or variants were nested deeper than the specification allows.
        case nestingTooDeep
        /// An array was longer than 64 MiB, or its elements did not end exactly at its length.
        case badArrayLength
        /// A message was larger than the bound (128 MiB by the specification, lower if configured).
        case messageTooLarge
        /// The fixed header was wrong: endianness, message type, protocol version or serial.
        case badHeader
        /// A header field was missing, of the wrong type, or not allowed.
        case badHeaderField
        /// The body did not match its signature: values left over, values missing, or a value of another type.
        case bodyMismatch
        /// A `h` value pointed past the descriptors the message carries.
        case badUnixFD
        /// An interface, member, error or bus name broke the specification's rules.
        case invalidName
        /// A match rule was not well formed.
        case invalidMatchRule
        /// A JSON value could not be converted to the D-Bus type asked for.
        case jsonMismatch
    }

    /// Which rule was broken.
    public var code: Code
    /// What was wrong, naming the value and, when decoding, the byte offset.
    public var reason: String

    /// Creates an error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }
}
