import HeraldDBusClient
import Testing

@Suite struct BusAddressTests {
    @Test func sessionAddressWithPathAndGUID() throws {
        let address = try BusAddress.session(environment: [
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus,guid=0123456789abcdef0123456789abcdef"
        ])
        #expect(address.entries.count == 1)
        #expect(address.entries[0].transport == .path("/run/user/1000/bus"))
        #expect(address.entries[0].guid == "0123456789abcdef0123456789abcdef")
    }

    @Test func abstractAddressIsUnescaped() throws {
        let address = try BusAddress(parsing: "unix:abstract=/tmp/dbus-%41b%2c,guid=ff")
        #expect(address.entries[0].transport == .abstract(Array("/tmp/dbus-Ab,".utf8)))
    }

    @Test func entriesThisClientCannotUseAreSkipped() throws {
        let address = try BusAddress(parsing: "tcp:host=localhost,port=1;unix:path=/x;launchd:env=Y")
        #expect(address.entries.map(\.transport) == [.path("/x")])
    }

    @Test func systemBusDefaultsToTheWellKnownSocket() throws {
        #expect(try BusAddress.system(environment: [:]).entries[0].transport == .path("/run/dbus/system_bus_socket"))
        #expect(
            try BusAddress.system(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/sys"]).entries[0].transport
                == .path("/tmp/sys")
        )
    }

    @Test func unusableAddressesAreRefused() {
        for bad in ["", "tcp:host=x,port=1", "unix:path", "unix:path=/a%zz", "nonsense"] {
            #expect(throws: DBusClientError.self, "\(bad)") { try BusAddress(parsing: bad) }
        }
        #expect(throws: DBusClientError.self) { try BusAddress.session(environment: [:]) }
    }
}
