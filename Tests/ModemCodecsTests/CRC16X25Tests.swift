import Testing
import ModemTestSupport
import ModemCodecs

@Suite("CRC-16/X.25")
struct CRC16X25Tests {
    // A frame made by Dire Wolf 1.6's gen_packets ("N0CALL>APRS:hello world\n") and read back from its
    // audio bit by bit: the last two bytes are the FCS it sent.
    static let direWolfFrame = hdlcHex("82 a0 a4 a6 40 40 e0 9c 60 86 82 98 98 e1 03 f0 68 65 6c 6c 6f 20 77 6f 72 6c 64 0a 54 c7")

    @Test("check value: \"123456789\" gives 0x906E")
    func checkValue() {
        #expect(CRC16X25.checksum(Array("123456789".utf8)) == 0x906E)
        #expect(CRC16X25.checksum([UInt8]()) == 0x0000)
        #expect(CRC16X25.fcsBytes(of: Array("123456789".utf8)) == [0x6E, 0x90])
    }

    @Test("incremental: any split gives the same value; bit-wise update equals byte-wise")
    func incremental() {
        let data = Array("123456789".utf8)
        for split in 0...data.count {
            var crc = CRC16X25()
            crc.update(data[..<split])
            crc.update(data[split...])
            #expect(crc.value == 0x906E)
        }
        var byteWise = CRC16X25()
        var bitWise = CRC16X25()
        for byte in data {
            byteWise.update(byte)
            for bit in RawBits.bits(of: [byte]) {
                bitWise.update(bit: bit)
            }
            #expect(bitWise == byteWise)
        }
        #expect(bitWise.value == 0x906E)
        bitWise.reset()
        #expect(bitWise == CRC16X25())
        #expect(bitWise.register == 0xFFFF)
    }

    @Test("a frame from Dire Wolf: its FCS matches, the residue is 0xF0B8, any flipped bit is caught")
    func direWolfFrame() {
        let frame = Self.direWolfFrame
        let payload = Array(frame.dropLast(2))
        #expect(CRC16X25.checksum(payload) == 0xC754)
        #expect(CRC16X25.fcsBytes(of: payload) == [0x54, 0xC7])
        #expect(CRC16X25.isValidFrame(frame))
        var crc = CRC16X25()
        crc.update(frame)
        #expect(crc.register == CRC16X25.goodResidue)
        for bit in 0..<(frame.count * 8) {
            var damaged = frame
            damaged[bit / 8] ^= 1 << (bit % 8)
            #expect(!CRC16X25.isValidFrame(damaged))
        }
        #expect(!CRC16X25.isValidFrame([0xFF]))
        #expect(!CRC16X25.isValidFrame([UInt8]()))
    }

    @Test("random frames with their FCS appended are valid")
    func randomFrames() {
        var random = TestRandom(seed: 1)
        for length in 0..<64 {
            let payload = random.bytes(length)
            #expect(CRC16X25.isValidFrame(payload + CRC16X25.fcsBytes(of: payload)))
        }
    }
}
