#if canImport(Glibc)
import Glibc
import Foundation

/// The kernel's Bluetooth (BlueZ sockets), the way down when no `--hci` is given: the kernel owns
/// the adapter (bluetoothd may be using it too), does HCI, L2CAP and RFCOMM itself, and we use its
/// sockets. Everything here fails at once, naming the problem, on a kernel without `AF_BLUETOOTH`.
public enum BlueZ {
    /// Checks at once, without waiting on any device, that this machine has kernel Bluetooth and
    /// adapter `hci<device>`: opens a raw HCI socket and binds it to the adapter. Throws
    /// `.noBluetooth(BlueZSocket.noKernelSupportMessage)` on a kernel without `AF_BLUETOOTH`
    /// (EAFNOSUPPORT) and `.noBluetooth("no Bluetooth adapter")` when the adapter does not exist (ENODEV).
    public static func probe(device: UInt16 = 0) throws(BluetoothError) {
        _ = try BlueZSocket.rawHCI(device: device)
    }

    /// The adapter `hci<device>`, which must exist and be up: ``BluetoothError/noBluetooth(_:)``
    /// without kernel Bluetooth (EAFNOSUPPORT) or without the adapter (ENODEV),
    /// ``BluetoothError/notPowered(_:)`` when it is down (`HCI_UP` clear in `HCIGETDEVINFO`'s flags).
    @discardableResult
    public static func adapter(device: UInt16 = 0) throws(BluetoothError) -> BlueZAdapterInfo {
        let control = try BlueZSocket.hciControl()
        let info = try control.deviceInfo(device: device)
        guard info.isUp else {
            throw .notPowered("hci\(device) is down (power it on: bluetoothctl power on, or hciconfig hci\(device) up)")
        }
        return info
    }

    /// Scans through the kernel (blocking the calling thread): the kernel's inquiry (`HCIINQUIRY`)
    /// for `seconds`, then a Remote_Name_Request on a raw HCI socket for each device, 5 s at most
    /// each. The same list ``BluetoothScan`` gives on our own stack.
    /// - Parameters:
    ///   - device: the adapter (hci0 = 0).
    ///   - seconds: how long the inquiry runs (1.28 s steps, at most 60 s).
    ///   - onFound: called when a device, then its name, is first heard.
    ///   - isInterrupted: polled while names are asked; true ends the scan with what was found.
    /// - Throws: ``BluetoothError`` when there is no kernel Bluetooth or adapter, it is down, or the inquiry failed.
    public static func scan(device: UInt16 = 0, seconds: Double,
                            onFound: @escaping @Sendable (DiscoveredDevice) -> Void = { _ in },
                            isInterrupted: @escaping @Sendable () -> Bool = { false }) throws(BluetoothError) -> [DiscoveredDevice] {
        try adapter(device: device)
        let responses: [HCIInquiryResponse]
        do {
            responses = try BlueZSocket.hciControl().inquiry(device: device, seconds: seconds)
        } catch {
            if isInterrupted() { return [] }
            throw error
        }
        var devices = responses.map { DiscoveredDevice(address: $0.address, name: nil) }
        devices.forEach(onFound)
        guard !devices.isEmpty, !isInterrupted() else { return devices }
        let socket = try BlueZSocket.rawHCI(device: device)
        var names = BlueZNameRequests(devices: responses)
        var decoder = H4Decoder()
        let clock = Stopwatch()
        func now() -> Double { clock.seconds }
        var actions = names.start(now: now())
        while true {
            for action in actions {
                switch action {
                case .send(let packet):
                    try socket.send(packet.h4)
                case .named(let address, let name):
                    if let i = devices.firstIndex(where: { $0.address == address }), devices[i].name == nil {
                        devices[i].name = name
                        onFound(devices[i])
                    }
                case .finished:
                    return devices
                }
            }
            if isInterrupted() { return devices }
            let bytes = try socket.receive(timeout: 0.05)
            actions = []
            if !bytes.isEmpty {
                do {
                    for packet in try decoder.push(bytes) { actions += names.received(packet, now: now()) }
                } catch {
                    decoder = H4Decoder()   // damage on the shared socket: skip it
                }
            }
            actions += names.tick(now: now())
        }
    }
}
#endif
import ModemRuntime
