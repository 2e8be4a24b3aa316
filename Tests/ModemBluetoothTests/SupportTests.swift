import Testing
@testable import ModemBluetooth

@Suite struct SupportTests {
    @Test func testAddressParsesPrintsAndReversesOnTheWire() throws {
        let address = try #require(BDAddress("00:1b:DC:00:00:0B"))
        #expect(address.description == "00:1B:DC:00:00:0B")
        #expect(address.wire == [0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00])
        #expect(BDAddress(wire: address.wire) == address)
        #expect(BDAddress("00-1B-DC-00-00-0B") == address)
        for bad in ["", "00:1B:DC:00:00", "00:1B:DC:00:00:0B:01", "00:1B:DC:00:00:0G", "001:B:DC:00:00:0B", "0:1B:DC:00:00:0B"] {
            #expect(BDAddress(bad) == nil, "\(bad)")
        }
    }

    @Test func testReaderChecksEveryLength() throws {
        var reader = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05], context: "test")
        #expect(try reader.u16le() == 0x0201)
        #expect(try reader.u16be() == 0x0304)
        do {
            _ = try reader.u16le()
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect("\(error)".contains("test"))
        }
        #expect(try reader.u8() == 0x05)
        #expect(reader.isAtEnd)
        var out: [UInt8] = []
        out.appendLE(UInt16(0x1234)); out.appendBE(UInt16(0x1234)); out.appendLE(UInt32(0x01020304)); out.appendBE(UInt32(0x01020304))
        #expect(out == [0x34, 0x12, 0x12, 0x34, 4, 3, 2, 1, 1, 2, 3, 4])
        var again = ByteReader(out)
        #expect(try again.u16le() == 0x1234); #expect(try again.u16be() == 0x1234)
        #expect(try again.u32le() == 0x01020304); #expect(try again.u32be() == 0x01020304)
    }
}
