import Testing
@testable import ModemBluetooth

@Suite struct GAPEIRTests {
    @Test func testBuildsAndParsesNamesAndUUIDs() {
        let bytes = EIRData.build(name: "Bumble Echo", uuid16s: [0x1101, 0x1200])
        #expect(bytes == ([12, 0x09] + Array("Bumble Echo".utf8) + [5, 0x03, 0x01, 0x11, 0x00, 0x12]))
        let eir = EIRData(parsing: bytes + [0, 0, 0])
        #expect(eir.name?.text == "Bumble Echo")
        #expect(eir.name?.complete == true)
        #expect(eir.uuid16s == [0x1101, 0x1200])
        // A shortened name only.
        let short = EIRData(parsing: [4, 0x08, 0x41, 0x42, 0x43])
        #expect(short.name?.text == "ABC")
        #expect(short.name?.complete == false)
        // A name too long for 240 bytes is shortened and marked so.
        let long = EIRData.build(name: String(repeating: "x", count: 300))
        #expect(long.count == 240)
        #expect(long[1] == 0x08)
        #expect(EIRData(parsing: long).name?.text.count == 238)
    }

    @Test func testTruncatedAndJunkEIRNeverCrash() {
        let bytes = EIRData.build(name: "Echo 2", uuid16s: [0x1101])
        for cut in 0...bytes.count {
            let eir = EIRData(parsing: Array(bytes.prefix(cut)))
            if cut >= 8 { #expect(eir.name?.text == "Echo 2") } else { #expect(eir.name == nil, "cut \(cut)") }
        }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let junk = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let eir = EIRData(parsing: junk)
            #expect(eir.structures.reduce(0) { $0 + 2 + $1.data.count } <= junk.count)
            _ = eir.name
            _ = eir.uuid16s
        }
    }
}
