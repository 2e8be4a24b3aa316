import ModemCodecs
import ModemLink
import Testing

@Suite("Shared-line frame line (pairing by sound)")
struct PairingLineTests {
    @Test("the line's frame carries a payload and is told apart from link-station frames")
    func framing() throws {
        let payload: [UInt8] = Array("P1 hello".utf8)
        let f = SharedLineFrameLine.frame(carrying: payload)
        let decoded = try LinkFrame(decoding: f.encode())
        #expect(SharedLineFrameLine.payload(of: decoded) == payload)
        #expect(SharedLineFrameLine.payload(of: LinkFrame(kind: .cancelAck, flags: .fromDevice, session: 0, message: 0x5041)) == nil)
        #expect(SharedLineFrameLine.payload(of: LinkFrame(kind: .data, session: 0, message: 0x5041, payload: payload)) == nil)
        #expect(SharedLineFrameLine.payload(of: LinkFrame(kind: .cancelAck, session: 0, message: 7)) == nil)
    }

    @Test("three ends on one in-memory line: a call and two answers; everyone hears everyone, itself included, nothing collides")
    func callAndAnswers() throws {
        let rate = 9600
        let config = LinkConfiguration(mode: .duplex, baudRate: 1200, framePayload: 256)
        var heard: [[[UInt8]]] = [[], [], []]
        var transmitted = [0, 0, 0]
        let call: [UInt8] = Array("call".utf8)
        var ends: [InMemorySharedLine.End] = []
        for i in 0..<3 {
            let line = try SharedLineFrameLine(configuration: config, sampleRate: rate, seed: UInt64(10 + i), slotSeconds: 0.1, maximumSlots: 0)
            var first = true
            var answerAt: Double?
            ends.append(.init(line: line) { input, now in
                switch input {
                case .tick:
                    if first && i == 0 { first = false; return [.send(call)] }
                    first = false
                    // End 2 queues its answer while end 1's is on the air: it must wait for a quiet line.
                    if let t = answerAt, now >= t { answerAt = nil; return [.send(Array("answer \(i)".utf8))] }
                case .heard(let m):
                    heard[i].append(m)
                    // The callees answer the call once; everyone stops after hearing three messages.
                    if m == call && i != 0 { answerAt = now + (i == 1 ? 0 : 0.15) }
                case .transmitted:
                    transmitted[i] += 1
                }
                return heard[i].count >= 3 ? [.stop] : []
            })
        }
        let line = InMemorySharedLine(ends: ends, sampleRate: rate, noiseRMS: 0.02, seed: 3)
        let t = line.run(seconds: 6)
        for i in 0..<3 {
            #expect(Set(heard[i]) == [call, Array("answer 1".utf8), Array("answer 2".utf8)], "end \(i) heard \(heard[i].map { String(decoding: $0, as: UTF8.self) })")
            #expect(transmitted[i] == 1)
            #expect(line.isFinished(i))
        }
        #expect(t < 6)
    }

    @Test("queued messages can be cancelled before they play")
    func cancel() throws {
        let rate = 9600
        let config = LinkConfiguration(mode: .duplex, baudRate: 1200, framePayload: 256)
        let a = try SharedLineFrameLine(configuration: config, sampleRate: rate, seed: 1, slotSeconds: 0.1, maximumSlots: 0)
        a.send([1, 2, 3])
        #expect(a.isBusy)
        a.cancelQueued()
        #expect(!a.isBusy)
        let o = a.output(count: 960, now: 0.1)
        #expect(o.samples.allSatisfy { $0 == 0 })
        a.send([4])
        _ = a.output(count: 96, now: 0.2)   // draws the backoff (0 slots)
        let o2 = a.output(count: 96, now: 0.21)
        #expect(o2.samples.contains { $0 != 0 })
    }
}
