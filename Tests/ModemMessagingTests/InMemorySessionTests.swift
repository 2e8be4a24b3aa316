import ModemMessaging
import Testing

@Suite("In-memory session line")
struct InMemorySessionTests {
    @Test("records arrive in order; a close from one side ends both with the seed's reasons")
    func orderAndClose() async throws {
        let (a, b) = InMemorySessionLine.pair(capacity: 4)
        let sender = Task {
            for i in 0..<100 { try await a.send(kind: 0x10, body: [UInt8(i)]) }
            await a.close()
        }
        var got: [UInt8] = []
        var sawClosing = false
        loop: while true {
            switch await b.receive() {
            case .record(_, let body): got += body
            case .peerClosing:
                sawClosing = true
                await b.close()
            case .ended(let end):
                #expect(end == .otherUserQuit)
                break loop
            }
        }
        try await sender.value
        #expect(got == (0..<100).map { UInt8($0) })
        #expect(sawClosing)
        #expect(await a.receive() == .ended(.userQuit(nil)))
    }

    @Test("a cut ends both sides with END_LOST_NET and wakes a blocked sender")
    func cut() async throws {
        let (a, b) = InMemorySessionLine.pair(capacity: 1)
        try await a.send(kind: 0x10, body: [1])
        let blocked = Task { () -> SessionSendError? in
            do throws(SessionSendError) { try await a.send(kind: 0x10, body: [2]); return nil } catch { return error }
        }
        await a.line.cut()
        let error = await blocked.value
        #expect(error != nil)
        #expect(await b.receive() == .ended(.lostNet("the line was cut")))
        #expect(await a.receive() == .ended(.lostNet("the line was cut")))
    }

    @Test("the session's own record kinds are refused")
    func ownKinds() async {
        let (a, _) = InMemorySessionLine.pair()
        await #expect(throws: SessionSendError.self) { try await a.send(kind: 0x03, body: []) }
    }
}
