import HubServer
import Testing

@Test func serverNameIsModemHub() {
    #expect(HubServerInfo.name == "modem-hub")
}
