#if canImport(Glibc)
import Glibc

/// A byte stream to a device's RFCOMM server channel through the kernel (an RFCOMM stream socket):
/// the BlueZ counterpart of our own stack's RFCOMM byte stream, for `modem bt connect` without `--hci`.
public final class BlueZRFCOMMStream: Sendable {
    private let socket: BlueZSocket
    /// The device.
    public let address: BDAddress
    /// The server channel (1-30).
    public let channel: UInt8

    /// Connects to `channel` of `address`, waiting up to `timeout` seconds (the kernel pages the
    /// device and opens the RFCOMM session). Throws `.noBluetooth` on a kernel without Bluetooth,
    /// `.connectionFailed` when the device refuses, is unreachable or does not answer in time.
    public init(connectingTo address: BDAddress, channel: UInt8, timeout: Double = 10) throws(BluetoothError) {
        socket = try BlueZSocket.rfcomm(connectingTo: address, channel: channel, timeout: timeout)
        self.address = address
        self.channel = channel
    }

    /// A stream on an open socket (tests run it on a Unix socket pair standing in for RFCOMM).
    init(socket: BlueZSocket, address: BDAddress, channel: UInt8) {
        self.socket = socket
        self.address = address
        self.channel = channel
    }

    /// The descriptor, to `poll` for readability.
    public var fileDescriptor: Int32 { socket.fileDescriptor }

    /// Bytes from the device: up to `maxCount`, waiting up to `timeout` seconds (nil: until some
    /// arrive). [] when the time ran out, or at the end of the stream (then ``isClosed`` is true).
    public func read(maxCount: Int = 65536, timeout: Double? = nil) throws(BluetoothError) -> [UInt8] {
        do {
            return try socket.receive(maxCount: maxCount, timeout: timeout)
        } catch {
            throw closedIfReset(error)
        }
    }

    /// Whether the device closed the stream (a read returned its end).
    public var isClosed: Bool { socket.isAtEnd }

    /// Writes all of `bytes` (blocking while the kernel's buffer is full).
    public func write(_ bytes: [UInt8]) throws(BluetoothError) {
        do {
            try socket.send(bytes)
        } catch {
            throw closedIfReset(error)
        }
    }

    /// Closes the stream (the kernel sends DISC); a blocked reader wakes with the end of the stream.
    public func close() { socket.shutdown() }

    /// Closes the stream after what the kernel still holds has left, waiting up to `seconds` for
    /// the device to confirm (`SO_LINGER`, then shutdown).
    public func closeInOrder(waitingUpTo seconds: Int32) {
        socket.setLinger(seconds: seconds)
        socket.shutdown()
    }

    /// A reset or broken connection (``BlueZSocket/error(errno:doing:)`` makes it
    /// ``BluetoothError/disconnected(_:)``) is the device going away: the error names the device and channel.
    private func closedIfReset(_ error: BluetoothError) -> BluetoothError {
        if case .disconnected(let message) = error {
            return .disconnected("\(address) channel \(channel): \(message)")
        }
        return error
    }
}
#endif
