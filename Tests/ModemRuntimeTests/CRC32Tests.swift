import ModemRuntime
import Testing

/// A bit-at-a-time CRC-32 (ISO-HDLC) written from its definition, independent of the table-driven one.
private func referenceCRC32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        crc ^= UInt32(b)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

@Suite("CRC-32 (ISO-HDLC)")
struct CRC32Tests {
    @Test("check value of \"123456789\" is 0xCBF43926")
    func checkValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        var c = CRC32()
        c.update(Array("123456789".utf8))
        #expect(c.value == 0xCBF4_3926)
        #expect(c.value == ~c.register)
    }

    @Test("known answers: empty input, the quick brown fox")
    func knownAnswers() {
        #expect(CRC32.checksum([UInt8]()) == 0)
        #expect(CRC32().register == 0xFFFF_FFFF)
        #expect(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x414F_A339)
    }

    @Test("matches a bit-at-a-time reference on random data of many lengths")
    func matchesReference() {
        var random = SplitMix64(seed: 0xC3C3)
        for length in [1, 2, 3, 4, 7, 8, 31, 64, 255, 1000, 4097] {
            let data = random.bytes(length)
            #expect(CRC32.checksum(data) == referenceCRC32(data), "length \(length)")
        }
    }

    @Test("incremental update in any pieces equals the one-shot checksum")
    func incremental() {
        var random = SplitMix64(seed: 42)
        let data = random.bytes(300)
        let oneShot = CRC32.checksum(data)
        // Every split point into two pieces.
        for split in 0...data.count {
            var c = CRC32()
            c.update(data[..<split])
            c.update(data[split...])
            #expect(c.value == oneShot, "split at \(split)")
        }
        // Byte by byte, and random piece sizes (empty pieces included).
        var byByte = CRC32()
        for b in data { byByte.update(CollectionOfOne(b)) }
        #expect(byByte.value == oneShot)
        for _ in 0..<20 {
            var c = CRC32()
            var i = 0
            while i < data.count {
                let n = Int.random(in: 0...40, using: &random)
                let end = min(data.count, i + n)
                c.update(data[i..<end])
                i = end
            }
            #expect(c.value == oneShot)
        }
        // A different input gives a different CRC (the value depends on the data).
        var other = data
        other[150] ^= 0x01
        #expect(CRC32.checksum(other) != oneShot)
    }
}
