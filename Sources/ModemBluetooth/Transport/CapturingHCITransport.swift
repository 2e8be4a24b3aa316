/// A transport that copies every packet, both ways, to a ``PcapWriter`` (`--capture FILE.pcap`).
public final class CapturingHCITransport: HCITransport {
    /// The transport underneath.
    public let inner: any HCITransport
    /// Where packets go.
    public let writer: PcapWriter

    /// Wraps `inner`.
    public init(_ inner: any HCITransport, writer: PcapWriter) {
        self.inner = inner
        self.writer = writer
    }

    /// The inner transport's descriptor.
    public var fileDescriptor: Int32 { inner.fileDescriptor }

    /// Records, then sends.
    public func send(_ packet: HCIPacket) throws(BluetoothError) {
        writer.record(packet, sent: true)
        try inner.send(packet)
    }

    /// Receives, then records each packet.
    public func receive() throws(BluetoothError) -> [HCIPacket] {
        let packets = try inner.receive()
        for packet in packets { writer.record(packet, sent: false) }
        return packets
    }

    /// Closes the inner transport (the writer stays open: its owner closes it).
    public func close() { inner.close() }
}
