import Foundation
@testable import ModemMessaging
import Testing

/// A fresh temporary folder for a test.
func dataTestFolder(_ tag: String) -> String {
    let path = NSTemporaryDirectory() + "modem-data-\(tag)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Writes a test file, recording an issue if it cannot.
func writeTestFile(atPath path: String, contents: Data) {
    #expect(FileManager.default.createFile(atPath: path, contents: contents), "cannot write \(path)")
}

@Suite("Data connections: name cleaning and the receive folder")
struct DataNameCleanerTests {
    static let table: [(String, String?)] = [
        ("report.pdf", "report.pdf"),
        ("..", nil),
        (".", nil),
        ("", nil),
        ("\\", nil),
        ("/", nil),
        ("/etc/passwd", "passwd"),
        ("a/../../x", "x"),
        ("..\\..\\windows\\system.ini", "system.ini"),
        ("evil\u{0}.txt", "evil.txt"),
        ("bell\u{7}tab\tnew\nline\u{9B}.txt", "belltabnewline.txt"),
        ("CON.txt", "_CON.txt"),
        ("con", "_con"),
        ("LPT1.tar.gz", "_LPT1.tar.gz"),
        ("CONSOLE.txt", "CONSOLE.txt"),
        (".hidden", "hidden"),
        ("...", nil),
        ("name. . ", "name"),
        ("ünïcödé.txt", "ünïcödé.txt"),
    ]

    @Test("the table of hostile and ordinary names", arguments: 0..<table.count)
    func cleaning(_ row: Int) {
        let (input, expected) = Self.table[row]
        if let expected {
            #expect((try? NameCleaner.clean(input)) == expected, "input \(input.debugDescription)")
        } else {
            #expect(throws: NameError.self) { try NameCleaner.clean(input) }
        }
    }

    @Test("300-byte UTF-8 names are cut at a character boundary to 255 bytes, keeping the extension")
    func longNames() throws {
        let stem = String(repeating: "é", count: 150)   // 300 bytes
        let cleaned = try NameCleaner.clean(stem + ".txt")
        #expect(cleaned.utf8.count <= 255)
        #expect(cleaned.utf8.count >= 253)
        #expect(cleaned.hasSuffix(".txt"))
        #expect(cleaned.dropLast(4).allSatisfy { $0 == "é" })
        let second = NameCleaner.candidate(cleaned, attempt: 2)
        #expect(second.utf8.count <= 255)
        #expect(second.hasSuffix(" (2).txt"))
        let ascii = try NameCleaner.clean(String(repeating: "a", count: 300))
        #expect(ascii.utf8.count == 255)
    }

    @Test("collisions get (2), (3); a symlink in the folder is never followed")
    func folder() throws {
        let dir = dataTestFolder("folder")
        let outside = dataTestFolder("outside")
        defer { try? FileManager.default.removeItem(atPath: dir); try? FileManager.default.removeItem(atPath: outside) }
        let folder = try ReceiveFolder(path: dir)
        let a = try folder.createNew(cleanedName: "x.bin")
        let b = try folder.createNew(cleanedName: "x.bin")
        let c = try folder.createNew(cleanedName: "x.bin")
        close(a.fd); close(b.fd); close(c.fd)
        #expect([a.name, b.name, c.name] == ["x.bin", "x (2).bin", "x (3).bin"])
        // A link planted in the folder pointing outside: creating that name must not touch the target.
        try FileManager.default.createSymbolicLink(atPath: dir + "/evil.txt", withDestinationPath: outside + "/target.txt")
        let d = try folder.createNew(cleanedName: "evil.txt")
        _ = "written".withCString { write(d.fd, $0, 7) }
        close(d.fd)
        #expect(d.name == "evil (2).txt")
        #expect(!FileManager.default.fileExists(atPath: outside + "/target.txt"))
        #expect(try folder.freeBytes() > 0)
    }
}

@Suite("Data connections: records and the connection machine")
struct DataStateMachineTests {
    @Test("every record round-trips; junk never decodes into a crash")
    func codec() {
        let messages: [DataMessage] = [
            .offer(conn: 1, metadata: Array("hi".utf8)),
            .answer(conn: 0x8000_0001, accept: true, reason: .none),
            .end(conn: 3, reason: .userEnded),
            .channelOpen(conn: 1, channel: 2, kind: .file, size: 1 << 40, blockSize: 1 << 20,
                         fileKey: Array(repeating: 7, count: 16), description: "d", name: "../n"),
            .channelHave(conn: 1, channel: 0x8002, blocks: 9, aggregate: Array(repeating: 1, count: 32), bitmap: [0xFF, 0x80]),
            .data(conn: 1, channel: 2, block: 5, offset: 64_000, last: true, hash: Array(repeating: 9, count: 32), bytes: [1, 2, 3]),
            .data(conn: 1, channel: 2, block: 5, offset: 0, last: false, hash: nil, bytes: []),
            .channelDone(conn: 1, channel: 2, root: Array(repeating: 4, count: 32)),
            .channelResult(conn: 1, channel: 0x8002, ok: false, reason: .hashMismatch, badBlocks: [3, 4]),
            .channelClose(conn: 1, channel: 2, reason: .cancelled),
            .progress(conn: 1, channel: 0x8002, bytes: 12_345),
        ]
        for m in messages {
            let (kind, body) = m.encoded()
            #expect(DataMessage.decode(kind: kind, body: body) == m)
            // Every truncation decodes to nil or to something, never traps.
            for cut in 0..<body.count { _ = DataMessage.decode(kind: kind, body: Array(body[0..<cut])) }
        }
        var seed: UInt64 = 42
        for _ in 0..<2000 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let n = Int(seed >> 56) % 80
            let body = (0..<n).map { UInt8(truncatingIfNeeded: (seed >> UInt64($0 % 56)) &+ UInt64($0)) }
            _ = DataMessage.decode(kind: 0x20 + UInt8(seed >> 60), body: body)
        }
    }

    @Test("a channel open whose description or name is not UTF-8 is malformed (found by the data-connection fuzz target)")
    func channelOpenTextIsUTF8() {
        func open(description: [UInt8], name: [UInt8]) -> [UInt8] {
            var body: [UInt8] = [0, 0, 0, 1, 0, 2, ChannelKind.file.rawValue] + [UInt8](repeating: 0, count: 7) + [10]
            body += [0, 0, 16, 0] + [UInt8](repeating: 7, count: 16)
            body += [UInt8(description.count >> 8), UInt8(description.count & 0xFF)] + description + name
            return body
        }
        // 1,000 bytes of 0xFF: repaired, each would be U+FFFD (3 bytes), past the 1,024-byte limit.
        #expect(DataMessage.decode(kind: DataRecordKind.channelOpen, body: open(description: [UInt8](repeating: 0xFF, count: 1000), name: [])) == nil)
        #expect(DataMessage.decode(kind: DataRecordKind.channelOpen, body: open(description: Array("d".utf8), name: [0x6E, 0xC3, 0x28])) == nil)
        let fine = DataMessage.decode(kind: DataRecordKind.channelOpen, body: open(description: Array("café".utf8), name: Array("n.txt".utf8)))
        #expect(fine == .channelOpen(conn: 1, channel: 2, kind: .file, size: 10, blockSize: 4096, fileKey: [UInt8](repeating: 7, count: 16),
                                     description: "café", name: "n.txt"))
    }

    /// Runs two machines against each other: delivers every `.send` of one to the other.
    func deliver(_ actions: [DataAction], to machine: inout ConnectionStateMachine) -> [DataAction] {
        var out: [DataAction] = []
        for case .send(let kind, let body) in actions { out += machine.input(kind: kind, body: body) }
        return out
    }

    @Test("offer, accept, decline, end; several connections; metadata 4096 fine and 4097 refused both ways")
    func lifecycle() throws {
        var a = ConnectionStateMachine()
        var b = ConnectionStateMachine()
        let (c1, o1) = try a.offer(metadata: Array(repeating: 0x41, count: 4096))
        let seen = deliver(o1, to: &b)
        guard case .event(.offered(let inB, let metadata)) = seen.first else { Issue.record("no offer: \(seen)"); return }
        #expect(metadata.count == 4096)
        #expect(b.state(of: inB) == .offered)
        let back = deliver(try b.accept(inB), to: &a)
        #expect(back == [.event(.accepted(c1)), .event(.connected(c1))])
        #expect(a.state(of: c1) == .connected)

        let (c2, o2) = try a.offer(metadata: [])
        guard case .event(.offered(let in2, _)) = deliver(o2, to: &b).first else { Issue.record("no second offer"); return }
        let declined = deliver(try b.decline(in2), to: &a)
        #expect(declined == [.event(.declined(c2, .declined)), .event(.ended(c2, .declined))])
        #expect(a.state(of: c1) == .connected)

        #expect(throws: DataError.metadataTooLarge(4097, 4096)) { try a.offer(metadata: Array(repeating: 0, count: 4097)) }
        // A peer that sends 4097 bytes anyway is refused by the receiver.
        let raw = DataMessage.offer(conn: 77, metadata: Array(repeating: 0, count: 4097)).encoded()
        let refused = b.input(kind: raw.kind, body: raw.body)
        #expect(refused.contains(.event(.refused(ConnectionID(local: false, number: 77), .metadataTooLarge))))
        #expect(refused.contains { if case .send(DataRecordKind.answer, _) = $0 { true } else { false } })

        // Channels only on connected connections; data on a channel nobody opened is ignored.
        let (ch, open) = try a.openChannel(c1, kind: .stream, description: "s")
        let opened = deliver(open, to: &b)
        guard case .channel(.opened(let bc, let bch, .stream, _, _, _, "s", _)) = opened.first else { Issue.record("\(opened)"); return }
        #expect(bc == inB && !bch.local && bch.number == ch.number)
        #expect(throws: DataError.self) { try a.openChannel(c2, kind: .stream) }
        // A name the peer would drop (over 4096 bytes) is refused before anything is sent; 4096 goes.
        #expect(throws: DataError.invalidState("a name of 4097 bytes is over the limit of 4096 bytes")) {
            try a.openChannel(c1, kind: .file, blockSize: 4096, fileKey: Array(repeating: 7, count: 16), name: String(repeating: "n", count: 4097))
        }
        let (_, longest) = try a.openChannel(c1, kind: .file, blockSize: 4096, fileKey: Array(repeating: 7, count: 16),
                                             name: String(repeating: "n", count: 4096))
        let arrived = deliver(longest, to: &b)
        guard case .channel(.opened(_, _, .file, _, _, _, _, let name)) = arrived.first else {
            Issue.record("the 4096-byte name did not arrive: \(arrived)"); return
        }
        #expect(name.utf8.count == 4096)
        let stray = DataMessage.data(conn: 1, channel: 99, block: 0, offset: 0, last: false, hash: nil, bytes: [1]).encoded()
        #expect(b.input(kind: stray.kind, body: stray.body).isEmpty)

        let ended = deliver(a.end(c1), to: &b)
        #expect(ended.contains(.event(.ended(inB, .userEnded))))
        #expect(b.state(of: inB) == .ended(.userEnded))
    }
}
