import Foundation
import ModemCodecs
#if canImport(Glibc)
import Glibc
#endif

/// A test's failure outside an expectation (a socket call that failed), with what went wrong.
public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A KISS client for the tests: a TCP connection to 127.0.0.1 (``LoopbackConnection``), which
/// keeps every byte received and decodes them as KISS frames.
public final class KISSTestClient {
    private let connection: LoopbackConnection
    private var decoder = KISSDecoder()
    /// Every byte received so far.
    public private(set) var receivedBytes: [UInt8] = []
    /// KISS frames received so far.
    public private(set) var frames: [KISSFrame] = []
    /// Whether the server closed the connection.
    public var closedByServer: Bool { connection.closedByServer }

    /// Connects to 127.0.0.1:`port`; `receiveBufferBytes` shrinks the kernel's receive buffer
    /// (before connecting).
    public init(port: Int, receiveBufferBytes: Int? = nil) throws {
        connection = try LoopbackConnection(port: port, receiveBufferBytes: receiveBufferBytes)
    }

    /// Sends all of `bytes` (waiting for room; 60 s without it is a hang guard and throws).
    public func send(_ bytes: [UInt8]) throws { try connection.send(bytes) }

    /// Reads what has arrived (without waiting); returns the number of bytes.
    @discardableResult
    public func receive() -> Int {
        let bytes = connection.read()
        receivedBytes += bytes
        frames += decoder.decode(bytes)
        return bytes.count
    }

    /// The payloads of the data frames received.
    public var dataPayloads: [[UInt8]] { frames.filter { $0.command == .dataFrame }.map(\.payload) }

    /// Closes the connection; `reset` makes it abortive (RST, as a crashed client).
    public func close(reset: Bool = false) { connection.close(reset: reset) }
}
