import Testing
@testable import ModemCodecs

/// Every valid framing: 5...8 data bits × N/E/O/M/S × 1/1.5/2 stop bits.
let allFramings: [UARTFraming] = (5...8).flatMap { dataBits in
    UARTParity.allCases.flatMap { parity in
        [1.0, 1.5, 2.0].map { try! UARTFraming(dataBits: dataBits, parity: parity, stopBits: $0) }
    }
}

@Suite("UART encoder and decoder")
struct UARTCodecTests {
    @Test("every byte round trips under every framing", arguments: allFramings)
    func roundTrip(framing: UARTFraming) {
        let encoder = UARTEncoder(framing: framing)
        let decoder = UARTDecoder(framing: framing)
        let mask = UInt8(truncatingIfNeeded: (1 << framing.dataBits) - 1)
        for value in 0...255 {
            let byte = UInt8(value)
            let bits = encoder.encode(byte)
            #expect(bits & 1 == 0, "start bit must be space")
            #expect(bits >> UInt32(framing.bitsBeforeStop) == 0, "no bits beyond bitsBeforeStop")
            // Data LSB first right after the start bit.
            for index in 0..<framing.dataBits {
                #expect((bits >> UInt32(1 + index)) & 1 == UInt32((byte >> UInt8(index)) & 1))
            }
            let character = decoder.decode(dataAndParity: bits >> 1, stopBit: true)
            #expect(character == UARTCharacter(byte: byte & mask, parityOK: true, stopBitOK: true))
            #expect(character.isValid)
        }
    }

    @Test("bit-by-bit reassembly matches the whole character", arguments: allFramings)
    func bitwise(framing: UARTFraming) {
        // The way a demodulator feeds the decoder: one sampled bit at a time.
        let encoder = UARTEncoder(framing: framing)
        let decoder = UARTDecoder(framing: framing)
        for value in stride(from: 0, through: 255, by: 7) {
            let bits = encoder.encode(UInt8(value))
            var assembled: UInt32 = 0
            for index in 1..<framing.bitsBeforeStop {
                assembled |= ((bits >> UInt32(index)) & 1) << UInt32(index - 1)
            }
            #expect(decoder.decode(dataAndParity: assembled, stopBit: true)
                    == decoder.decode(dataAndParity: bits >> 1, stopBit: true))
        }
    }

    @Test("parity known answers")
    func parityKnownAnswers() throws {
        let a: UInt8 = 0x41  // 'A' = 1000001: two ones
        let e71 = UARTEncoder(framing: try UARTFraming(parsing: "7E1"))
        let o71 = UARTEncoder(framing: try UARTFraming(parsing: "7O1"))
        let m71 = UARTEncoder(framing: try UARTFraming(parsing: "7M1"))
        let s71 = UARTEncoder(framing: try UARTFraming(parsing: "7S1"))
        #expect(e71.encode(a) == 0b0_1000001_0)
        #expect(o71.encode(a) == 0b1_1000001_0)
        #expect(m71.encode(a) == 0b1_1000001_0)
        #expect(s71.encode(a) == 0b0_1000001_0)
        #expect(UARTDecoder(framing: e71.framing).parityBit(for: 0x41) == 0)
        #expect(UARTDecoder(framing: o71.framing).parityBit(for: 0x41) == 1)
        // 'C' = 1000011: three ones.
        #expect(UARTDecoder(framing: e71.framing).parityBit(for: 0x43) == 1)
        #expect(UARTDecoder(framing: o71.framing).parityBit(for: 0x43) == 0)
        // Bits above dataBits do not count: 0xC1 under 7 bits is 0x41.
        #expect(UARTDecoder(framing: e71.framing).parityBit(for: 0xC1) == 0)
        #expect(e71.encode(0xC1) == e71.encode(0x41))
        // No parity: nothing is added.
        let n81 = UARTEncoder(framing: .default8N1)
        #expect(n81.encode(0x41) == 0x82)
        #expect(n81.encode(0xFF) == 0x1FE)
        #expect(UARTDecoder(framing: .default8N1).parityBit(for: 0xFF) == 0)
        // 8E1 of 0xFF: eight ones, parity 0; 8O1: parity 1.
        #expect(UARTEncoder(framing: try UARTFraming(parsing: "8E1")).encode(0xFF) == 0x1FE)
        #expect(UARTEncoder(framing: try UARTFraming(parsing: "8O1")).encode(0xFF) == 0x3FE)
        // 5N1.5 masks to 5 bits.
        #expect(UARTEncoder(framing: try UARTFraming(parsing: "5N1.5")).encode(0xFF) == 0x3E)
    }

    @Test("any single flipped data or parity bit is a parity error for even and odd parity",
          arguments: allFramings.filter { $0.parity == .even || $0.parity == .odd })
    func parityErrors(framing: UARTFraming) {
        let encoder = UARTEncoder(framing: framing)
        let decoder = UARTDecoder(framing: framing)
        let width = framing.bitsBeforeStop - 1
        for value in 0...255 {
            let good = encoder.encode(UInt8(value)) >> 1
            for index in 0..<width {
                let character = decoder.decode(dataAndParity: good ^ (1 << UInt32(index)), stopBit: true)
                #expect(!character.parityOK)
                #expect(character.stopBitOK)
                #expect(!character.isValid)
            }
        }
    }

    @Test("mark and space parity check only the parity bit")
    func markSpaceParity() throws {
        for (text, expected) in [("8M1", UInt32(1)), ("8S1", UInt32(0))] {
            let decoder = UARTDecoder(framing: try UARTFraming(parsing: text))
            for value in UInt32(0)...255 {
                #expect(decoder.parityBit(for: value) == expected)
                #expect(decoder.decode(dataAndParity: value | expected << 8, stopBit: true).parityOK)
                #expect(!decoder.decode(dataAndParity: value | (expected ^ 1) << 8, stopBit: true).parityOK)
            }
        }
    }

    @Test("stop bit errors are reported, not thrown")
    func stopBitErrors() throws {
        let decoder = UARTDecoder(framing: .default8N1)
        #expect(decoder.decode(dataAndParity: 0x41, stopBit: false)
                == UARTCharacter(byte: 0x41, parityOK: true, stopBitOK: false))
        let e71 = UARTDecoder(framing: try UARTFraming(parsing: "7E1"))
        #expect(e71.decode(dataAndParity: 0x41 | 1 << 7, stopBit: false)
                == UARTCharacter(byte: 0x41, parityOK: false, stopBitOK: false))
    }

    @Test("junk above the character is ignored")
    func junkAbove() throws {
        let decoder = UARTDecoder(framing: try UARTFraming(parsing: "7E1"))
        let clean = decoder.decode(dataAndParity: 0x41, stopBit: true)
        #expect(decoder.decode(dataAndParity: 0x41 | 0xFFFF_FF00, stopBit: true) == clean)
        #expect(clean == UARTCharacter(byte: 0x41, parityOK: true, stopBitOK: true))
    }
}
