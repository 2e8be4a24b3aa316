import XCTest
@testable import ModemBluetooth

final class SupportTests: XCTestCase {
    func testAddressParsesPrintsAndReversesOnTheWire() throws {
        let address = try XCTUnwrap(BDAddress("00:1b:DC:00:00:0B"))
        XCTAssertEqual(address.description, "00:1B:DC:00:00:0B")
        XCTAssertEqual(address.wire, [0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00])
        XCTAssertEqual(BDAddress(wire: address.wire), address)
        XCTAssertEqual(BDAddress("00-1B-DC-00-00-0B"), address)
        for bad in ["", "00:1B:DC:00:00", "00:1B:DC:00:00:0B:01", "00:1B:DC:00:00:0G", "001:B:DC:00:00:0B", "0:1B:DC:00:00:0B"] {
            XCTAssertNil(BDAddress(bad), bad)
        }
    }

    func testReaderChecksEveryLength() throws {
        var reader = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05], context: "test")
        XCTAssertEqual(try reader.u16le(), 0x0201)
        XCTAssertEqual(try reader.u16be(), 0x0304)
        XCTAssertThrowsError(try reader.u16le()) { error in
            XCTAssertTrue("\(error)".contains("test"))
        }
        XCTAssertEqual(try reader.u8(), 0x05)
        XCTAssertTrue(reader.isAtEnd)
        var out: [UInt8] = []
        out.appendLE(UInt16(0x1234)); out.appendBE(UInt16(0x1234)); out.appendLE(UInt32(0x01020304)); out.appendBE(UInt32(0x01020304))
        XCTAssertEqual(out, [0x34, 0x12, 0x12, 0x34, 4, 3, 2, 1, 1, 2, 3, 4])
        var again = ByteReader(out)
        XCTAssertEqual(try again.u16le(), 0x1234); XCTAssertEqual(try again.u16be(), 0x1234)
        XCTAssertEqual(try again.u32le(), 0x01020304); XCTAssertEqual(try again.u32be(), 0x01020304)
    }
}
