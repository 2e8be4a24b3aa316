import XCTest
@testable import ModemBluetooth

final class GAPEIRTests: XCTestCase {
    func testBuildsAndParsesNamesAndUUIDs() {
        let bytes = EIRData.build(name: "Bumble Echo", uuid16s: [0x1101, 0x1200])
        XCTAssertEqual(bytes, [12, 0x09] + Array("Bumble Echo".utf8) + [5, 0x03, 0x01, 0x11, 0x00, 0x12])
        let eir = EIRData(parsing: bytes + [0, 0, 0])
        XCTAssertEqual(eir.name?.text, "Bumble Echo")
        XCTAssertEqual(eir.name?.complete, true)
        XCTAssertEqual(eir.uuid16s, [0x1101, 0x1200])
        // A shortened name only.
        let short = EIRData(parsing: [4, 0x08, 0x41, 0x42, 0x43])
        XCTAssertEqual(short.name?.text, "ABC")
        XCTAssertEqual(short.name?.complete, false)
        // A name too long for 240 bytes is shortened and marked so.
        let long = EIRData.build(name: String(repeating: "x", count: 300))
        XCTAssertEqual(long.count, 240)
        XCTAssertEqual(long[1], 0x08)
        XCTAssertEqual(EIRData(parsing: long).name?.text.count, 238)
    }

    func testTruncatedAndJunkEIRNeverCrash() {
        let bytes = EIRData.build(name: "Echo 2", uuid16s: [0x1101])
        for cut in 0...bytes.count {
            let eir = EIRData(parsing: Array(bytes.prefix(cut)))
            if cut >= 8 { XCTAssertEqual(eir.name?.text, "Echo 2") } else { XCTAssertNil(eir.name, "cut \(cut)") }
        }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let junk = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let eir = EIRData(parsing: junk)
            XCTAssertLessThanOrEqual(eir.structures.reduce(0) { $0 + 2 + $1.data.count }, junk.count)
            _ = eir.name
            _ = eir.uuid16s
        }
    }
}
