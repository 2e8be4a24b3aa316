import Testing
import Foundation
@testable import ModemBluetooth

@Suite(.serialized) struct TransportPcapTests {
    @Test func testWritesAPcapThatParsesBack() throws {
        let path = NSTemporaryDirectory() + "pcap-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pcap"
        defer { unlink(path) }
        let writer = try PcapWriter(path: path)
        let packets: [(HCIPacket, Bool, Double)] = [
            (HCICommand.reset(), true, 1_700_000_000.25),
            (.event(code: 0x0E, parameters: [1, 0x03, 0x0C, 0]), false, 1_700_000_000.5),
            (.acl(handle: 1, boundary: 2, broadcast: 0, data: Array(repeating: 0xAB, count: 1021)), true, 1_700_000_001.0),
        ]
        var expectedSize = 24
        for (packet, sent, time) in packets {
            writer.record(packet, sent: sent, time: time)
            // Flushed per record: the file already holds it.
            expectedSize += 16 + 4 + packet.h4.count
            let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            #expect(size == expectedSize)
        }
        writer.close()
        writer.record(HCICommand.reset(), sent: true)  // dropped after close

        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var r = ByteReader(data, context: "pcap")
        #expect(try r.u32le() == 0xA1B2C3D4)
        #expect(try r.u16le() == 2)
        #expect(try r.u16le() == 4)
        #expect(try r.u32le() == 0)
        #expect(try r.u32le() == 0)
        #expect(try r.u32le() == 65535)
        #expect(try r.u32le() == 201)
        for (packet, sent, time) in packets {
            #expect(Double(try r.u32le()) == time.rounded(.down))
            #expect(try abs(Double(r.u32le()) - ((time - time.rounded(.down)) * 1e6).rounded()) <= 1)
            let included = try r.u32le()
            #expect(try r.u32le() == included)
            #expect(Int(included) == (4 + packet.h4.count))
            #expect(try r.u32be() == (sent ? 0 : 1))
            #expect(try HCIPacket(h4: try r.bytes(Int(included) - 4)) == packet)
        }
        #expect(r.isAtEnd)
    }

    @Test func testUnwritablePathNamesTheFile() throws {
        do {
            _ = try PcapWriter(path: "/nonexistent-dir/x.pcap")
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect("\(error)".contains("/nonexistent-dir/x.pcap"), "\(error)")
        }
    }
}
