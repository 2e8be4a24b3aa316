import ModemCrypto
import ModemRuntime
import Synchronization

/// The records of magic-wormhole's transit on a connection that passed its handshake: each one a
/// 4-byte big-endian length, then a 24-byte nonce (a counter from 0, big-endian, one per record and
/// direction, checked on receipt) and the secretbox of the record under the direction's key.
public final class TransitRecords: Sendable {
    /// The largest record accepted (the stock sender's are 16 KiB; anything over this ends the transfer).
    public static let maximumRecord = 4 << 20
    private let stream: ByteStream
    private let sendKey: [UInt8]
    private let receiveKey: [UInt8]
    private let counters = Mutex<(send: UInt64, receive: UInt64)>((0, 0))

    /// Records over `connection` for `role`.
    public init(_ connection: TransitConnection, keys: TransitKeys, role: TransitConnector.Role) {
        stream = connection.stream
        sendKey = role == .sender ? keys.senderRecordKey : keys.receiverRecordKey
        receiveKey = role == .sender ? keys.receiverRecordKey : keys.senderRecordKey
    }

    static func nonce(_ n: UInt64) -> [UInt8] {
        [UInt8](repeating: 0, count: 16) + (0..<8).map { UInt8(truncatingIfNeeded: n >> (8 * UInt64(7 - $0))) }
    }

    /// Seals and sends one record.
    /// - Throws: ``WormholeError`` (`.network`).
    public func send(_ record: [UInt8]) async throws(WormholeError) {
        let n = counters.withLock { c in defer { c.send += 1 }; return c.send }
        let nonce = Self.nonce(n)
        let sealed = (try? SecretBox.seal(record, key: sendKey, nonce: nonce)) ?? []
        let length = UInt32(nonce.count + sealed.count)
        try await stream.write([UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)], nonce, sealed)
    }

    /// The next record, opened; nil when the peer closed the connection between records.
    /// - Throws: ``WormholeError``: `.peer` for a record out of order, too large or that does not
    ///   open; `.network` for a connection cut inside a record.
    public func receive(deadline: Deadline? = nil) async throws(WormholeError) -> [UInt8]? {
        let first = try await stream.read(maximum: 4, deadline: deadline)
        if first.isEmpty { return nil }
        let header = first + (first.count < 4 ? try await stream.read(exactly: 4 - first.count, deadline: deadline) : [])
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length >= SecretBox.nonceLength + SecretBox.tagLength, length <= Self.maximumRecord + 40 else {
            throw WormholeError(.peer, "the peer sent a transit record of \(length) bytes")
        }
        let body = try await stream.read(exactly: length, deadline: deadline)
        let expected = counters.withLock { $0.receive }
        guard Array(body[..<SecretBox.nonceLength]) == Self.nonce(expected) else {
            throw WormholeError(.peer, "the peer's transit record is out of order (expected number \(expected))")
        }
        guard let plain = try? SecretBox.open(body[SecretBox.nonceLength...], key: receiveKey, nonce: Self.nonce(expected)) else {
            throw WormholeError(.peer, "a transit record does not open (changed on the way)")
        }
        counters.withLock { $0.receive += 1 }
        return plain
    }

    /// Closes the connection.
    public func close() { stream.close() }
}
