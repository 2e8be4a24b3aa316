#if canImport(Glibc)
import Glibc
import Foundation

/// The Serial Port service's RFCOMM channel, found with our own ``SDPClient`` over the kernel's
/// L2CAP: a sequenced-packet socket to PSM 1 carries one SDP PDU per send and receive, so the
/// client value runs on it unchanged (no bluetoothd, no libbluetooth).
public enum BlueZSDP {
    /// SDP's PSM.
    public static let psm: UInt16 = 0x0001

    /// Connects to `address`'s SDP server through the kernel and asks for its Serial Port channel.
    /// - Throws: ``BluetoothError/noBluetooth(_:)`` without kernel Bluetooth;
    ///   ``BluetoothError/connectionFailed(_:)`` when the device cannot be reached, has no Serial
    ///   Port service, or answers badly or not within `timeout` seconds.
    public static func serialPortChannel(of address: BDAddress, timeout: Double = 10) throws(BluetoothError) -> UInt8 {
        let socket = try BlueZSocket.l2cap(connectingTo: address, psm: psm, timeout: timeout)
        defer { socket.shutdown() }
        return try serialPortChannel(over: socket, device: address.description, timeout: timeout)
    }

    /// Runs the look-up on an open packet socket (one SDP PDU per packet), `timeout` seconds per answer.
    static func serialPortChannel(over socket: BlueZSocket, device: String, timeout: Double) throws(BluetoothError) -> UInt8 {
        var client = SDPClient()
        var step = SDPClientStep.send(client.start())
        while true {
            switch step {
            case .send(let pdu):
                let answer: [UInt8]
                do {
                    try socket.send(pdu)
                    answer = try socket.receive(maxCount: 65536, timeout: timeout)
                } catch {
                    switch error {
                    case .unknown(let message), .disconnected(let message):
                        throw .connectionFailed("SDP with \(device) failed: \(message)")
                    default:
                        throw error
                    }
                }
                if answer.isEmpty {
                    throw .connectionFailed(socket.isAtEnd ? "SDP with \(device) failed: the device closed the SDP channel"
                                                           : "SDP with \(device) failed: no answer within \(Int(timeout)) s")
                }
                step = client.received(answer)
            case .found(let channel):
                return channel
            case .notFound:
                throw .connectionFailed("\(device) has no Serial Port service (SDP)")
            case .failed(let reason):
                throw .connectionFailed("SDP with \(device) failed: \(reason)")
            }
        }
    }
}
#endif
