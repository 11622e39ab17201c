import HeraldDBus
import Testing

@Suite struct NameTests {
    @Test(arguments: ["/", "/a", "/org/freedesktop/DBus", "/a_b/C9"])
    func validObjectPathIsAccepted(path: String) throws {
        try DBusNames.validateObjectPath(path)
    }

    @Test(arguments: ["", "a", "//", "/a/", "/a//b", "/a-b", "/é"])
    func invalidObjectPathIsRefused(path: String) {
        #expect(throws: DBusError.self) { try DBusNames.validateObjectPath(path) }
    }

    @Test func interfaceNamesFollowTheRules() throws {
        try DBusNames.validateInterface("org.freedesktop.DBus")
        try DBusNames.validateInterface("a._b.C1")
        for bad in ["org", "org.", ".org", "org..a", "org.1a", "org.a-b", String(repeating: "a.", count: 128) + "a"] {
            #expect(throws: DBusError.self, "\(bad)") { try DBusNames.validateInterface(bad) }
        }
    }

    @Test func memberNamesFollowTheRules() throws {
        try DBusNames.validateMember("GetAll")
        try DBusNames.validateMember("_x1")
        for bad in ["", "1a", "a.b", "a-b"] {
            #expect(throws: DBusError.self, "\(bad)") { try DBusNames.validateMember(bad) }
        }
    }

    @Test func busNamesFollowTheRules() throws {
        try DBusNames.validateBusName(":1.42")
        try DBusNames.validateBusName("org.freedesktop.login1")
        try DBusNames.validateBusName("com.example-1.x")
        for bad in [":1", "org", "1org.a", "org..a", "org.a b", ":"] {
            #expect(throws: DBusError.self, "\(bad)") { try DBusNames.validateBusName(bad) }
        }
    }

    @Test func errorNamesFollowTheInterfaceRules() throws {
        try DBusNames.validateErrorName("org.freedesktop.DBus.Error.ServiceUnknown")
        #expect(throws: DBusError.self) { try DBusNames.validateErrorName("Error") }
    }
}

@Suite struct MatchRuleTests {
    @Test func ruleRendersItsKeysInOrder() throws {
        let rule = try MatchRule(
            interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged",
            path: "/org/freedesktop/UPower/devices/DisplayDevice",
            arguments: [0: "org.freedesktop.UPower.Device"]
        )
        #expect(
            rule.description
                == "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                + "path='/org/freedesktop/UPower/devices/DisplayDevice',arg0='org.freedesktop.UPower.Device'"
        )
    }

    @Test func invalidRulesAreRefused() {
        #expect(throws: DBusError.self) { try MatchRule(interface: "nodots") }
        #expect(throws: DBusError.self) { try MatchRule(path: "/a", pathNamespace: "/b") }
        #expect(throws: DBusError.self) { try MatchRule(arguments: [64: "x"]) }
        #expect(throws: DBusError.self) { try MatchRule(arguments: [0: "it's"]) }
        #expect(throws: DBusError.self) { try MatchRule(member: "a.b") }
        #expect(throws: DBusError.self) { try MatchRule(sender: "x") }
    }

    @Test func ruleMatchesTheMessagesItDescribes() throws {
        let message = try DBusMessage(decoding: Vectors.propertiesChanged)
        #expect(try MatchRule(interface: "org.freedesktop.DBus.Properties").matches(message))
        #expect(try MatchRule(pathNamespace: "/org/freedesktop/UPower").matches(message))
        #expect(try MatchRule(arguments: [0: "org.freedesktop.UPower.Device"]).matches(message))
        #expect(try !MatchRule(arguments: [0: "org.other"]).matches(message))
        #expect(try !MatchRule(member: "NameAcquired").matches(message))
        #expect(try !MatchRule(pathNamespace: "/org/freedesktop/UPow").matches(message))
        #expect(try !MatchRule(type: .methodCall).matches(message))
    }
}

@Suite struct JSONTests {
    @Test func propertiesBecomeAJSONObject() throws {
        let message = try DBusMessage(decoding: Vectors.propertiesChanged)
        #expect(
            message.body[1].json
                == .object([
                    "Percentage": .number(42.5), "State": .number(2), "TimeToEmpty": .number(3600),
                    "IconName": .string("battery-good-symbolic"), "IsPresent": .bool(true),
                ])
        )
    }

    @Test func jsonConvertsToTheTypeAskedFor() throws {
        let structType = try DBusType.parseSingle(signature: "(uasa{sv})")
        let value = try DBusValue(
            json: .array([.number(7), .array([.string("a")]), .object(["k": .bool(true), "n": .number(1.5)])]),
            as: structType
        )
        #expect(
            value
                == .structure([
                    .uint32(7), .array(.string, [.string("a")]),
                    .dictionary(
                        key: .string,
                        value: .variant,
                        [(.string("k"), .variant(.boolean(true))), (.string("n"), .variant(.double(1.5)))]
                    ),
                ])
        )
        #expect(
            value.json == .array([.number(7), .array([.string("a")]), .object(["k": .bool(true), "n": .number(1.5)])])
        )
    }

    @Test func jsonThatDoesNotFitIsRefused() {
        #expect(throws: DBusError.self) { try DBusValue(json: .number(1.5), as: .int32) }
        #expect(throws: DBusError.self) { try DBusValue(json: .number(-1), as: .uint32) }
        #expect(throws: DBusError.self) { try DBusValue(json: .string("x"), as: .boolean) }
        #expect(throws: DBusError.self) { try DBusValue(json: .string("bad path"), as: .objectPath) }
        #expect(throws: DBusError.self) { try DBusValue(json: .array([]), as: .structure([.byte])) }
    }
}
