// A libFuzzer target for the D-Bus client's input handling: HeraldDBus's MessageDecoder, which reads whatever a bus
// sends, and the signature parser behind it.
//
// Built by Tests/Fuzz/run.sh together with the sources of HeraldDBus as one module (so there is no `import` here).
// The input's first byte chooses how the rest arrives (in reads of 1 to 64 bytes) and the decoder's bound; the rest
// is the byte stream. Every crash is a bug: the client must never trap on a bus's bytes. Beyond the traps of the code
// under test, this checks that:
// - every message decoded encodes without error, to bytes that decode and encode to the same bytes again (compared as
//   bytes, since a double may be NaN, which is not equal to itself);
// - how the bytes are split into reads changes nothing: the same messages, then the same error or none;
// - no message decoded is larger than the bound.

private func require(_ condition: Bool, _ message: @autoclosure () -> String, line: UInt = #line) {
    if !condition { fatalError("fuzz check failed: \(message())", line: line) }
}

/// Decodes `stream` arriving in reads of `chunk` bytes (0: all at once): the messages, and the error that ended it.
private func decodeAll(
    _ stream: UnsafeBufferPointer<UInt8>,
    chunk: Int,
    maximumLength: Int
) -> ([DBusMessage], DBusError?) {
    var decoder = MessageDecoder(maximumLength: maximumLength)
    var messages: [DBusMessage] = []
    var offset = 0
    repeat {
        let end = chunk == 0 ? stream.count : min(stream.count, offset + chunk)
        decoder.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: stream[offset..<end])))
        offset = end
        do {
            while let message = try decoder.nextMessage() { messages.append(message) }
        } catch {
            return (messages, error)
        }
    } while offset < stream.count
    return (messages, nil)
}

private func check(_ message: DBusMessage, maximumLength: Int) {
    let bytes: [UInt8]
    do {
        bytes = try message.encoded()
    } catch {
        require(false, "a decoded message does not encode: \(error)")
        return
    }
    require(bytes.count <= maximumLength, "a message of \(bytes.count) bytes passed a bound of \(maximumLength)")
    do {
        let again = try DBusMessage(decoding: bytes)
        require(
            again.fields.count == message.fields.count && again.body.count == message.body.count,
            "a message re-encoded decodes differently"
        )
        require(try again.encoded() == bytes, "a re-encoded message encodes differently the second time")
    } catch {
        require(false, "a re-encoded message does not decode: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let control = data[0]
    let stream = UnsafeBufferPointer(start: data + 1, count: size - 1)
    // Small bounds reach the "too large" path with short inputs; the largest is the specification's own.
    let maximumLength = [64, 256, 2048, DBusMessage.maximumLength][Int(control >> 6)]
    let chunk = 1 + Int(control & 0x3f)
    let (whole, wholeError) = decodeAll(stream, chunk: 0, maximumLength: maximumLength)
    let (split, splitError) = decodeAll(stream, chunk: chunk, maximumLength: maximumLength)
    // Compared by their encodings: a double may be NaN, which is not equal to itself.
    require(
        whole.map { try? $0.encoded() } == split.map { try? $0.encoded() },
        "reads of \(chunk) bytes decoded \(split.count) messages, one read \(whole.count)"
    )
    require(
        wholeError == splitError,
        "reads of \(chunk) bytes ended with \(String(describing: splitError)), one read with \(String(describing: wholeError))"
    )
    for message in whole { check(message, maximumLength: maximumLength) }
    // The signature parser on its own, with the stream as a signature.
    if stream.count <= 300 {
        _ = try? DBusType.parse(signature: stream)
    }
    return 0
}
