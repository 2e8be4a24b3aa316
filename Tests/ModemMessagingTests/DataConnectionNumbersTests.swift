import Foundation
import ModemMessaging
import Testing

/// Numbers a peer sends (a file offer's size and block size) are bounded before any arithmetic on
/// them: a size near `UInt64.max` or `Int.max` is refused as too large, never a trap (issue 32, defect 7).
@Suite("Data connections: a peer's numbers")
struct DataConnectionNumbersTests {
    @Test("file offers with sizes near UInt64.max and Int.max are refused as too large; the receiver goes on")
    func hugeSizesAreRefused() async throws {
        let root = dataTestFolder("numbers")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (raw, sb) = InMemorySessionLine.pair()
        let b = DataConnections(session: sb, configuration: DataConfiguration(folder: try ReceiveFolder(path: root + "/in"),
                                                                              autoAcceptConnections: true, freeSpaceMargin: 0))
        let events = collect(b) { _ in false }
        func send(_ m: DataMessage) async throws { let (k, body) = m.encoded(); try await raw.send(kind: k, body: body) }
        try await send(.offer(conn: 1, metadata: []))
        guard case .record(DataRecordKind.answer, _) = await raw.receive() else { Issue.record("no answer"); return }
        // At da86752, the first of these trapped on `size + blockSize - 1` and took the process with it.
        let offers: [(UInt64, UInt32)] = [(.max, 16 << 20), (.max - 1, 1), (UInt64(Int.max), 16 << 20), (UInt64(Int.max) + 1, 4096),
                                          (1 << 62, 1)]
        for (i, (size, blockSize)) in offers.enumerated() {
            let ch = UInt16(i + 1)
            try await send(.channelOpen(conn: 1, channel: ch, kind: .file, size: size, blockSize: blockSize,
                                        fileKey: [UInt8](repeating: UInt8(i), count: 16), description: "", name: "big\(i).bin"))
            guard case .record(DataRecordKind.channelResult, let body) = await raw.receive() else { Issue.record("no result for \(size)"); return }
            #expect(DataMessage.decode(kind: DataRecordKind.channelResult, body: body)
                    == .channelResult(conn: 0x8000_0001, channel: 0x8000 | ch, ok: false, reason: .tooLarge, badBlocks: []),
                    "size \(size), block size \(blockSize)")
        }
        // The receiver still works: a small offer is answered with CH-HAVE.
        try await send(.channelOpen(conn: 1, channel: 9, kind: .file, size: 10, blockSize: 4096,
                                    fileKey: [UInt8](repeating: 9, count: 16), description: "", name: "small.bin"))
        guard case .record(DataRecordKind.channelHave, let have) = await raw.receive() else { Issue.record("no CH-HAVE"); return }
        guard case .channelHave(_, _, let blocks, _, _)? = DataMessage.decode(kind: DataRecordKind.channelHave, body: have) else {
            Issue.record("not a CH-HAVE"); return
        }
        #expect(blocks == 1)
        await raw.close()
        _ = await b.ended()
        _ = await events.value
    }

    @Test("the block count of any size and block size: an answer, never a trap")
    func blockCounts() {
        #expect(DataConnections.incomingFileBlocks(size: .max, blockSize: 16 << 20, maximumBlocks: .max) == nil)
        #expect(DataConnections.incomingFileBlocks(size: .max, blockSize: .max, maximumBlocks: .max) == nil)
        #expect(DataConnections.incomingFileBlocks(size: 10, blockSize: 0, maximumBlocks: .max) == nil)
        #expect(DataConnections.incomingFileBlocks(size: 0, blockSize: 4096, maximumBlocks: 0) == 0)
        #expect(DataConnections.incomingFileBlocks(size: 4096, blockSize: 4096, maximumBlocks: 1) == 1)
        #expect(DataConnections.incomingFileBlocks(size: 4097, blockSize: 4096, maximumBlocks: 1) == nil)
        #expect(DataConnections.incomingFileBlocks(size: 4097, blockSize: 4096, maximumBlocks: 2) == 2)
        #expect(DataConnections.incomingFileBlocks(size: (1 << 62) - 1, blockSize: 1, maximumBlocks: .max) == (1 << 62) - 1)
        #expect(DataConnections.incomingFileBlocks(size: 1 << 62, blockSize: 1, maximumBlocks: .max) == nil)
    }
}
