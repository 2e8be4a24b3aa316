import ModemCrypto
import ModemMessaging
import Testing

@Suite("Pairing token and messages")
struct PairingTokenTests {
    @Test("a token is 15 bytes, starts with PK and decodes to what was encoded")
    func roundTrip() throws {
        let c = PairingToken.commitment(session: 0xBEEF, publicKey: Array(repeating: 7, count: 32), opening: Array(repeating: 9, count: 16),
                                        name: Array("alice".utf8))
        #expect(c.count == 8)
        let t = PairingToken(session: 0xBEEF, commitment: c, flags: 0x3)
        let bytes = t.encode()
        #expect(bytes.count == 15)
        #expect(Array(bytes.prefix(2)) == Array("PK".utf8))
        #expect(bytes[2] == 0x23)
        #expect(Array(bytes[3...4]) == [0xBE, 0xEF])
        #expect(try PairingToken(decoding: bytes) == t)
    }

    @Test("every single-bit error and every truncation of a token is refused")
    func corrupt() throws {
        let t = PairingToken(session: 42, commitment: [1, 2, 3, 4, 5, 6, 7, 8]).encode()
        for i in 0..<t.count * 8 {
            var b = t
            b[i / 8] ^= 1 << UInt8(i % 8)
            #expect(throws: PairingTokenError.self) { try PairingToken(decoding: b) }
        }
        for n in 0..<t.count { #expect(throws: PairingTokenError.self) { try PairingToken(decoding: t.prefix(n)) } }
        #expect(throws: PairingTokenError.badLength(16)) { try PairingToken(decoding: t + [0]) }
        // A token of another version with a good check is refused by version: version 1 (whose
        // commitment left the name free) as much as a later one.
        for version: UInt8 in [1, 3] {
            var other = t
            other[2] = version << 4
            let crc = crc16x25(Array(other[0..<13]))
            other[13] = UInt8(crc & 0xFF); other[14] = UInt8(crc >> 8)
            #expect(throws: PairingTokenError.unsupportedVersion(version)) { try PairingToken(decoding: other) }
        }
    }

    @Test("the commitment binds every field P2 reveals: key, opening, name and session; a length prefix keeps name bytes from moving")
    func commitment() {
        let pk = Array(repeating: UInt8(1), count: 32), r = Array(repeating: UInt8(2), count: 16), name = Array("alice".utf8)
        var pk2 = pk; pk2[31] = 0
        var r2 = r; r2[0] = 0
        let c = PairingToken.commitment(session: 7, publicKey: pk, opening: r, name: name)
        #expect(c == PairingToken.commitment(session: 7, publicKey: pk, opening: r, name: name))
        #expect(c != PairingToken.commitment(session: 7, publicKey: pk2, opening: r, name: name))
        #expect(c != PairingToken.commitment(session: 7, publicKey: pk, opening: r2, name: name))
        #expect(c != PairingToken.commitment(session: 7, publicKey: pk, opening: r, name: Array("alicf".utf8)))
        #expect(c != PairingToken.commitment(session: 7, publicKey: pk, opening: r, name: []))
        #expect(c != PairingToken.commitment(session: 8, publicKey: pk, opening: r, name: name))
        // The name's length is hashed before it: an empty name differs from a name of one zero byte.
        #expect(PairingToken.commitment(session: 7, publicKey: pk, opening: r, name: [])
                != PairingToken.commitment(session: 7, publicKey: pk, opening: r, name: [0]))
    }

    @Test("messages round-trip; truncated, padded, unknown and over-long ones are refused")
    func messages() throws {
        let pk = (0..<32).map { UInt8($0) }, n = (0..<16).map { UInt8(100 + $0) }, mac = (0..<16).map { UInt8(200 + $0) }
        let all: [PairingMessage] = [
            .token(PairingToken(session: 1, commitment: Array(repeating: 3, count: 8))),
            .answer(session: 2, publicKey: pk, nonce: n, name: Array("bob".utf8)),
            .answer(session: 2, publicKey: pk, nonce: n, name: []),
            .reveal(session: 3, publicKey: pk, opening: n, name: Array("alice".utf8), mac: mac),
            .confirm(session: 4, mac: mac),
            .abort(session: 5),
        ]
        for m in all {
            let b = m.encode()
            #expect(try PairingMessage(decoding: b) == m)
            if case .token = m { continue }
            #expect(throws: PairingMessageError.self) { try PairingMessage(decoding: b + [0]) }
            if b.count > 4 { #expect(throws: PairingMessageError.self) { try PairingMessage(decoding: b.dropLast()) } }
        }
        #expect(throws: PairingMessageError.unknownType(0x51)) { try PairingMessage(decoding: [0x50, 0x51, 0, 0]) }
        #expect(throws: PairingMessageError.notPairing) { try PairingMessage(decoding: [0x41, 0x31, 0, 0]) }
        let long = [0x50, 0x31, 0, 1] + pk + n + [65] + Array(repeating: 0x61, count: 65)
        #expect(throws: PairingMessageError.nameTooLong(65)) { try PairingMessage(decoding: long) }
    }

    @Test("the code is 6 digits and a function of the transcript")
    func code() {
        let a = PairingCrypto.code(transcript: Array("one".utf8))
        #expect(a.count == 6 && a.allSatisfy(\.isNumber))
        #expect(a == PairingCrypto.code(transcript: Array("one".utf8)))
        #expect(a != PairingCrypto.code(transcript: Array("two".utf8)))
    }
}

/// CRC-16/X.25 written out here (not the codec's), for the test that forges a good check.
private func crc16x25(_ bytes: [UInt8]) -> UInt16 {
    var r: UInt16 = 0xFFFF
    for b in bytes {
        r ^= UInt16(b)
        for _ in 0..<8 { r = r & 1 != 0 ? (r >> 1) ^ 0x8408 : r >> 1 }
    }
    return ~r
}
