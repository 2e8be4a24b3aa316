import Testing
import ModemCodecs

@Suite("RawBits")
struct RawBitsTests {
    @Test("bits are LSB first")
    func knownAnswer() {
        #expect(RawBits.bits(of: [0x01]) == [true, false, false, false, false, false, false, false])
        #expect(RawBits.bits(of: [0xA0]) == [false, false, false, false, false, true, false, true])
        #expect(RawBits.bits(of: []) == [])
        #expect(RawBits.bytes(from: [true, true, false, false, false, false, false, false]) == [0x03])
    }

    @Test("every byte round trips, all at once and one bit at a time")
    func roundTrip() {
        let bytes = (0...255).map(UInt8.init)
        let bits = RawBits.bits(of: bytes)
        #expect(bits.count == 256 * 8)
        #expect(RawBits.bytes(from: bits) == bytes)
        // Works on any sequence, e.g. a lazy one with no count.
        #expect(RawBits.bytes(from: bits.lazy.filter { _ in true }) == bytes)
        #expect(RawBits.bits(of: bytes.lazy.map { $0 }) == bits)
        // Pieces of 8 bits give the same bytes as the whole.
        var pieced: [UInt8] = []
        for start in stride(from: 0, to: bits.count, by: 8) {
            pieced += RawBits.bytes(from: bits[start..<start + 8])
        }
        #expect(pieced == bytes)
    }

    @Test("an incomplete tail is dropped")
    func incompleteTail() {
        let bits = RawBits.bits(of: [0x5A, 0xC3])
        for extra in 0..<8 {
            let withTail = bits + Array(repeating: true, count: extra)
            #expect(RawBits.bytes(from: withTail) == [0x5A, 0xC3])
        }
        #expect(RawBits.bytes(from: bits.dropLast()) == [0x5A])
        #expect(RawBits.bytes(from: [true, true, true]) == [])
    }
}
