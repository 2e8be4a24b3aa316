import ModemBluetooth
import ModemTransport
import Synchronization
import Testing

/// A controller that is never there: the device end is driven by hand, its host driver never started.
private final class AbsentController: HCITransport {
    var fileDescriptor: Int32 { -1 }
    func send(_ packet: HCIPacket) throws(BluetoothError) {}
    func receive() throws(BluetoothError) -> [HCIPacket] { [] }
    func close() {}
}

/// What `modem receive --listen bt:ADDR` learns from the device end: typed events (the controller's
/// address comes as a value, never read back out of a log line), each with the line a log shows.
struct BluetoothLinkDeviceEventTests {
    private let own = BDAddress("00:1B:DC:00:00:0B")!

    private func stack(channel: UInt8) -> HostStack {
        HostStack(configuration: HostConfiguration(gap: GAPConfiguration(role: .central), serverChannel: channel, serviceName: "test end"))
    }

    @Test("ready is an event carrying the controller's own address and channel; its line is the log's")
    func readyCarriesTheAddress() {
        let seen = Mutex<[BluetoothLinkDevice.Event]>([])
        let device = BluetoothLinkDevice(transport: AbsentController(), name: "test end", channel: 3,
                                         events: { e in seen.withLock { $0.append(e) } })
        var stack = stack(channel: 3)
        _ = device.host(&stack, did: .ready(address: own), now: 0)
        let events = seen.withLock { $0 }
        #expect(events == [.ready(name: "test end", address: own, channel: 3)])
        #expect(device.address == own)
        #expect(events.first?.description == "test end at 00:1B:DC:00:00:0B: discoverable, Serial Port on RFCOMM channel 3")
    }

    @Test("a controller with another address than the expected one fails naming both; accept ends with that reason")
    func wrongAddressFails() async {
        let seen = Mutex<[BluetoothLinkDevice.Event]>([])
        let expected = BDAddress("00:1B:DC:00:00:99")!
        let device = BluetoothLinkDevice(transport: AbsentController(), expectedAddress: expected,
                                         events: { e in seen.withLock { $0.append(e) } })
        var stack = stack(channel: 1)
        _ = device.host(&stack, did: .ready(address: own), now: 0)
        let reason = "the controller's address is 00:1B:DC:00:00:0B, not 00:1B:DC:00:00:99"
        #expect(seen.withLock { $0 } == [.failed(reason)])
        await #expect(throws: TransportError.stopped(.localFailure(reason))) { _ = try await device.accept() }
    }

    @Test("each event's line names what happened")
    func eventLines() {
        #expect(BluetoothLinkDevice.Event.connected(own).description == "connected: 00:1B:DC:00:00:0B")
        #expect(BluetoothLinkDevice.Event.disconnected(reason: "link lost").description == "disconnected: link lost")
        #expect(BluetoothLinkDevice.Event.failed("the controller cannot be used: no answer").description
                == "the controller cannot be used: no answer")
    }
}
