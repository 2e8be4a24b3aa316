import HubCore
import Testing

@Test func realmIsTheHubsName() {
    #expect(HubCore.realm == "modem-hub")
}
