extension DBusMessage {
    /// The size of the fixed header plus the header fields' array length: what a reader needs to know a message's
    /// total size.
    public static let fixedHeaderLength = 16
    /// The specification's bound on a whole message.
    public static let maximumLength = 128 * 1024 * 1024

    /// The message's bytes.
    ///
    /// - Throws: ``DBusError`` for a value that cannot be sent (see ``Marshaller/write(_:)``), a serial of 0, or a
    ///   signature field that does not match the body.
    public func encoded() throws(DBusError) -> [UInt8] {
        guard serial != 0 else {
            throw DBusError(.badHeader, "a message needs a serial other than 0")
        }
        let bodySignature = DBusType.signature(of: body.map(\.type))
        guard bodySignature == signature else {
            throw DBusError(.bodyMismatch, "the body is '\(bodySignature)' but the signature field says '\(signature)'")
        }
        var writer = Marshaller(bigEndian: bigEndian)
        writer.writeInteger(UInt8(ascii: bigEndian ? "B" : "l"))
        writer.writeInteger(type.rawValue)
        writer.writeInteger(flags)
        writer.writeInteger(UInt8(1))
        writer.writeInteger(UInt32(0))  // the body's length, patched below
        writer.writeInteger(serial)
        var headerFields: [DBusValue] = []
        headerFields.reserveCapacity(fields.count)
        for field in fields {
            headerFields.append(.structure([.byte(field.code), .variant(field.value)]))
        }
        try writer.write(.array(.structure([.byte, .variant]), headerFields))
        writer.pad(to: 8)
        let bodyStart = writer.bytes.count
        for value in body { try writer.write(value) }
        let bodyLength = writer.bytes.count - bodyStart
        guard writer.bytes.count <= Self.maximumLength else {
            throw DBusError(.messageTooLarge, "a message of \(writer.bytes.count) bytes (at most 128 MiB)")
        }
        writer.patchUInt32(UInt32(bodyLength), at: 4)
        return writer.bytes
    }

    /// The total length of the message whose first 16 bytes are `header`, read before the rest is.
    ///
    /// - Parameters:
    ///   - header: at least the first 16 bytes of a message.
    ///   - maximumLength: the bound; at most ``maximumLength``.
    /// - Returns: the message's length in bytes, header, padding and body.
    /// - Throws: ``DBusError`` with ``DBusError/Code/badHeader`` for a bad endianness byte or protocol version, and
    ///   ``DBusError/Code/messageTooLarge`` when the length is over the bound: the body need not be read to know.
    public static func length(
        ofHeader header: UnsafeRawBufferPointer,
        maximumLength: Int = DBusMessage.maximumLength
    ) throws(DBusError) -> Int {
        precondition(header.count >= fixedHeaderLength, "length(ofHeader:) needs 16 bytes")
        let bigEndian: Bool
        switch header[0] {
        case UInt8(ascii: "l"): bigEndian = false
        case UInt8(ascii: "B"): bigEndian = true
        default: throw DBusError(.badHeader, "endianness byte \(header[0]) is neither 'l' nor 'B'")
        }
        guard header[3] == 1 else {
            throw DBusError(.badHeader, "protocol version \(header[3]), not 1")
        }
        func word(_ offset: Int) -> Int {
            let raw = header.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            return Int(bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw))
        }
        let bodyLength = word(4)
        let fieldsLength = word(12)
        let total = fixedHeaderLength + ((fieldsLength + 7) & ~7) + bodyLength
        guard total <= maximumLength else {
            throw DBusError(.messageTooLarge, "a message of \(total) bytes (the bound is \(maximumLength))")
        }
        return total
    }

    /// Decodes one whole message.
    ///
    /// - Parameter bytes: exactly one message, as ``length(ofHeader:maximumLength:)`` measures it.
    /// - Throws: ``DBusError`` for anything the specification forbids in the header, its fields or the body.
    public init(decoding bytes: UnsafeRawBufferPointer) throws(DBusError) {
        guard bytes.count >= Self.fixedHeaderLength else {
            throw DBusError(.truncated, "a message of \(bytes.count) bytes is shorter than its fixed header")
        }
        let length = try Self.length(ofHeader: bytes)
        guard bytes.count >= length else {
            throw DBusError(.truncated, "a message of \(length) bytes is cut at \(bytes.count)")
        }
        guard bytes.count == length else {
            throw DBusError(.bodyMismatch, "\(bytes.count - length) bytes follow the message's end")
        }
        let bigEndian = bytes[0] == UInt8(ascii: "B")
        guard let type = MessageType(rawValue: bytes[1]) else {
            throw DBusError(.badHeader, "message type 0 is invalid")
        }
        var reader = Unmarshaller(bytes: bytes, position: 4, end: length, bigEndian: bigEndian)
        let bodyLength = Int(try reader.readInteger(UInt32.self))
        let serial = try reader.readInteger(UInt32.self)
        guard serial != 0 else {
            throw DBusError(.badHeader, "a message with serial 0")
        }
        let bodyStart = length - bodyLength
        var headerReader = Unmarshaller(bytes: bytes, position: 12, end: bodyStart, bigEndian: bigEndian)
        // The fields are an a(yv), read here without building the array and struct values around them.
        let fieldsLength = Int(try headerReader.readInteger(UInt32.self))
        guard fieldsLength <= Marshaller.maximumArrayLength else {
            throw DBusError(.badArrayLength, "header fields of \(fieldsLength) bytes (at most 64 MiB)")
        }
        try headerReader.align(8)
        let fieldsEnd = headerReader.position + fieldsLength
        guard fieldsEnd <= bodyStart else {
            throw DBusError(.truncated, "header fields of \(fieldsLength) bytes run past the header")
        }
        var fields: [(code: UInt8, value: DBusValue)] = []
        fields.reserveCapacity(8)
        while headerReader.position < fieldsEnd {
            try headerReader.align(8)
            let code = try headerReader.readByte()
            guard case .variant(let value) = try headerReader.read(.variant) else { continue }
            fields.append((code, value))
        }
        guard headerReader.position == fieldsEnd else {
            throw DBusError(.badArrayLength, "the last header field ends past the fields' length, at \(fieldsEnd)")
        }
        try headerReader.align(8)
        guard headerReader.position == bodyStart else {
            throw DBusError(.badHeader, "the header fields end at \(headerReader.position), not at \(bodyStart)")
        }
        self.init(type: type, flags: bytes[2], serial: serial, fields: fields, bigEndian: bigEndian)
        try validateFields()

        let types = try DBusType.parse(signature: signature)
        var bodyReader = Unmarshaller(
            bytes: bytes,
            position: bodyStart,
            end: length,
            bigEndian: bigEndian,
            unixFDs: unixFDs
        )
        var values: [DBusValue] = []
        values.reserveCapacity(types.count)
        for valueType in types {
            do throws(DBusError) {
                values.append(try bodyReader.read(valueType))
            } catch  where error.code == .truncated {
                throw DBusError(
                    .bodyMismatch,
                    "the body ends before its signature '\(signature)' does: \(error.reason)"
                )
            }
        }
        guard bodyReader.isAtEnd else {
            throw DBusError(
                .bodyMismatch,
                "\(length - bodyReader.position) bytes of the body are left after its signature '\(signature)'"
            )
        }
        body = values
    }

    /// Decodes one whole message from an array; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding bytes: [UInt8]) throws(DBusError) {
        self = try bytes.withUnsafeBytes { raw in Result { () throws(DBusError) in try DBusMessage(decoding: raw) } }
            .get()
    }

    /// Checks each known field's type and value, and that the type's required fields are there.
    private func validateFields() throws(DBusError) {
        var seen: UInt16 = 0
        for field in fields {
            guard let code = FieldCode(rawValue: field.code) else {
                guard field.code != 0 else {
                    throw DBusError(.badHeaderField, "header field code 0 is invalid")
                }
                continue  // unknown fields are ignored, as the specification says
            }
            let bit = UInt16(1) << code.rawValue
            guard seen & bit == 0 else {
                throw DBusError(.badHeaderField, "header field \(code) appears twice")
            }
            seen |= bit
            let expected: DBusType
            switch code {
            case .path: expected = .objectPath
            case .interface, .member, .errorName, .destination, .sender: expected = .string
            case .replySerial, .unixFDs: expected = .uint32
            case .signature: expected = .signature
            }
            guard field.value.type == expected else {
                throw DBusError(
                    .badHeaderField,
                    "header field \(code) has type '\(field.value.type)', not '\(expected)'"
                )
            }
            let text = field.value.stringValue ?? ""
            switch code {
            case .interface: try DBusNames.validateInterface(text)
            case .member: try DBusNames.validateMember(text)
            case .errorName: try DBusNames.validateErrorName(text)
            case .destination, .sender: try DBusNames.validateBusName(text)
            case .replySerial:
                guard replySerial != 0 else {
                    throw DBusError(.badHeaderField, "REPLY_SERIAL is 0")
                }
            default: break
            }
        }
        func require(_ codes: [FieldCode]) throws(DBusError) {
            for code in codes where seen & (UInt16(1) << code.rawValue) == 0 {
                throw DBusError(.badHeaderField, "a \(type) message lacks its \(code) field")
            }
        }
        switch type {
        case .methodCall: try require([.path, .member])
        case .methodReturn: try require([.replySerial])
        case .error: try require([.errorName, .replySerial])
        case .signal: try require([.path, .interface, .member])
        case .unknown: break
        }
    }
}
