import Foundation
import ModemRuntime
#if canImport(Glibc)
import Glibc
#endif

/// One AGW message as a test reads it (its own reading of the 36-byte header, independent of
/// ModemTNC's decoder, so the tests check the server against a second implementation).
public struct AGWMessage: Sendable, Hashable, CustomStringConvertible {
    public var port: UInt8
    public var kind: Character
    public var pid: UInt8
    public var from: String
    public var to: String
    public var data: [UInt8]

    public init(port: UInt8 = 0, kind: Character, pid: UInt8 = 0, from: String = "", to: String = "", data: [UInt8] = []) {
        self.port = port
        self.kind = kind
        self.pid = pid
        self.from = from
        self.to = to
        self.data = data
    }

    /// The data as text, a trailing NUL dropped (bytes outside ASCII as Latin-1).
    public var text: String {
        let bytes = data.last == 0 ? data.dropLast() : data[...]
        return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    /// The data's first 4 bytes as a little-endian number (`y`, `Y`, `R`).
    public var u32: UInt32 { data.prefix(4).enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) } }

    /// The header and data.
    public func encode(userReserved: UInt32 = 0) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 36)
        b[0] = port
        b[4] = kind.asciiValue ?? 0
        b[6] = pid
        for (i, c) in from.utf8.prefix(9).enumerated() { b[8 + i] = c }
        for (i, c) in to.utf8.prefix(9).enumerated() { b[18 + i] = c }
        for i in 0..<4 { b[28 + i] = UInt8(truncatingIfNeeded: UInt32(data.count) >> (8 * UInt32(i))) }
        for i in 0..<4 { b[32 + i] = UInt8(truncatingIfNeeded: userReserved >> (8 * UInt32(i))) }
        return b + data
    }

    public var description: String {
        "'\(kind)' port \(port) pid \(pid) \(from)>\(to) \(data.count) bytes: \(text.debugDescription)"
    }
}

/// An AGW client for the tests: a TCP connection to 127.0.0.1 (``LoopbackConnection``), which keeps
/// every message received. In-process tests pump the server and call ``receive()``; tests of a server in
/// another process await messages with ``awaitMessages(_:hangGuard:until:)`` (the socket becoming
/// readable, on the event loop).
public final class AGWTestClient {
    private let connection: LoopbackConnection
    private var buffer: [UInt8] = []
    /// Messages received so far.
    public private(set) var messages: [AGWMessage] = []
    /// Whether the server closed the connection.
    public var closedByServer: Bool { connection.closedByServer }

    /// Connects to 127.0.0.1:`port`; `receiveBufferBytes` shrinks the kernel's receive buffer.
    public init(port: Int, receiveBufferBytes: Int? = nil) throws {
        connection = try LoopbackConnection(port: port, receiveBufferBytes: receiveBufferBytes)
    }

    /// Sends a message.
    public func send(_ message: AGWMessage) throws { try connection.send(message.encode()) }

    /// Sends bytes (all of them; a full buffer waits for room, 60 s being a hang guard).
    public func send(bytes: [UInt8]) throws { try connection.send(bytes) }

    /// Reads what has arrived (without waiting); returns the number of bytes.
    @discardableResult
    public func receive() -> Int {
        let bytes = connection.read()
        buffer += bytes
        while buffer.count >= 36 {
            let length = Int(buffer[28]) | Int(buffer[29]) << 8 | Int(buffer[30]) << 16 | Int(buffer[31]) << 24
            guard buffer.count >= 36 + length else { break }
            func call(_ at: Int) -> String { String(decoding: buffer[at..<at + 10].prefix { $0 != 0 }, as: UTF8.self) }
            messages.append(AGWMessage(port: buffer[0], kind: Character(Unicode.Scalar(buffer[4])), pid: buffer[6],
                                       from: call(8), to: call(18), data: Array(buffer[36..<36 + length])))
            buffer.removeFirst(36 + length)
        }
        return bytes.count
    }

    /// Reads until `condition` holds for the messages received so far, waiting on the event loop for
    /// the socket to become readable; `hangGuard` seconds without it holding (or the server closing
    /// the connection first) throws, naming `what`.
    @discardableResult
    public func awaitMessages(_ what: String, hangGuard: Double = 60, until condition: ([AGWMessage]) -> Bool) async throws -> [AGWMessage] {
        let deadline = Date().addingTimeInterval(hangGuard)
        while true {
            receive()
            if condition(messages) { return messages }
            let left = deadline.timeIntervalSinceNow
            guard left > 0, !closedByServer else {
                throw TestSupportError("waited \(closedByServer ? "until the server closed the connection" : "\(Int(hangGuard)) s (a hang guard)") for \(what); received:\n"
                                       + messages.map(\.description).joined(separator: "\n"))
            }
            await connection.awaitReadable(seconds: left)
        }
    }

    /// Closes the connection.
    public func close() { connection.close() }
}
