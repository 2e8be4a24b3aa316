/// A way to the controller that carries HCI packets: H4 over TCP or a serial port, or the Linux
/// kernel's HCI user channel. A driver polls ``fileDescriptor`` for readability, then calls
/// ``receive()``; everything happens on the driver's thread, but the transports are safe anywhere.
public protocol HCITransport: AnyObject, Sendable {
    /// The descriptor to `poll(2)` for readability (-1 once closed).
    var fileDescriptor: Int32 { get }
    /// Sends one packet whole (blocking briefly if the kernel's buffer is full).
    func send(_ packet: HCIPacket) throws(BluetoothError)
    /// The packets readable now; `[]` if nothing is. End of stream throws
    /// ``BluetoothError/transportClosed(_:)``, as does lost H4 framing.
    func receive() throws(BluetoothError) -> [HCIPacket]
    /// Closes the transport; later calls fail with ``BluetoothError/transportClosed(_:)``.
    func close()
}
