import Testing
import ModemCodecs
import ModemRuntime
import ModemTNC

/// Two terminal sessions (`modem ax25 connect` and `listen`) on a simulated half-duplex 1200 bit/s channel in
/// virtual time: frames take their airtime one after another and each is lost with a seeded probability.
/// Input is offered only while a session ``AX25TerminalSession/wantsInput``, in chunks, as the CLI reads it.
private struct TerminalPair {
    var sessions: [AX25TerminalSession]
    var now = 0.0
    var air: [(to: Int, bytes: [UInt8], end: Double)] = []
    var channelFreeAt = 0.0
    var rng: SplitMix64
    let loss: Double
    var input: [[UInt8]]
    var inputOffset = [0, 0]
    var inputEnded = [false, false]
    var shown: [[UInt8]] = [[], []]
    var status: [[String]] = [[], []]
    var ends: [AX25TerminalSession.End?] = [nil, nil]
    let chunk = 700

    init(_ caller: AX25TerminalSession, _ listener: AX25TerminalSession, input: [[UInt8]], loss: Double, seed: UInt64) {
        sessions = [caller, listener]
        // Each session counts its own frames' airtime as the channel does (below): as over a KISS TNC.
        for i in 0..<2 {
            sessions[i].airtimeBitRate = 1200
            sessions[i].keyUpSeconds = 0.02
        }
        self.input = input
        self.loss = loss
        rng = SplitMix64(seed: seed)
    }

    mutating func perform(_ i: Int, _ outputs: [AX25TerminalSession.Output]) {
        for output in outputs {
            switch output {
            case .transmit(let bytes):
                let start = max(now, channelFreeAt)
                let end = start + 0.02 + Double(bytes.count + 4) * 8 / 1200
                channelFreeAt = end
                if Double(rng.next() % 1_000_000) / 1_000_000 >= loss { air.append((1 - i, bytes, end)) }
            case .display(let bytes): shown[i] += bytes
            case .status(let line): status[i].append(line)
            case .finished(let end): ends[i] = end
            }
        }
    }

    /// Runs until both sessions ended or `limit` seconds of channel time passed.
    mutating func run(limit: Double) {
        perform(1, sessions[1].start(now: now))
        perform(0, sessions[0].start(now: now))
        while ends.contains(where: { $0 == nil }), now < limit {
            var progressed = false
            for i in 0..<2 where ends[i] == nil && sessions[i].wantsInput && !inputEnded[i] {
                let left = input[i].count - inputOffset[i]
                if left > 0 {
                    let n = min(chunk, left)
                    perform(i, sessions[i].input(Array(input[i][inputOffset[i]..<inputOffset[i] + n]), now: now))
                    inputOffset[i] += n
                } else {
                    inputEnded[i] = true
                    perform(i, sessions[i].inputDidEnd(now: now))
                }
                progressed = true
            }
            if progressed { continue }
            let next = ([air.first?.end] + sessions.map(\.nextDeadline)).compactMap { $0 }.min()
            guard let next else { break }
            now = max(now, next)
            while let first = air.first, first.end <= now {
                air.removeFirst()
                perform(first.to, sessions[first.to].received(frame: first.bytes, now: now))
            }
            for i in 0..<2 { perform(i, sessions[i].advance(to: now)) }
        }
    }
}

@Suite("AX.25 terminal sessions")
struct AX25TerminalSessionTests {
    static let caller = try! AX25Address(parsing: "N0CALL")
    static let listener = try! AX25Address(parsing: "N0CALL-2")

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    @Test("binary both ways through loss: the caller's input ends, it waits for the acknowledgements and closes; the listener stays until then",
          arguments: [(0.0, UInt64(1)), (0.1, 2), (0.2, 3)])
    func bothWays(loss: Double, seed: UInt64) {
        let a = Self.random(6000, seed: seed), b = Self.random(4000, seed: seed + 100)
        let callerSession = AX25TerminalSession(local: Self.caller, mode: .connect(remote: Self.listener, via: []), translatesLineEndings: false)
        let listenerSession = AX25TerminalSession(local: Self.listener, mode: .listen, translatesLineEndings: false, closesWhenInputEnds: false)
        var pair = TerminalPair(callerSession, listenerSession, input: [a, b], loss: loss, seed: seed)
        pair.run(limit: 3600)
        #expect(pair.ends[0] == .completed, "\(pair.status[0])")
        #expect(pair.ends[1] == .peerDisconnected, "\(pair.status[1])")
        #expect(pair.shown[1] == a)
        // The listener's input reaches the caller as far as it was sent before the caller closed: in order,
        // nothing invented.
        #expect(!pair.shown[0].isEmpty && b.starts(with: pair.shown[0]))
        #expect(pair.sessions[0].bytesSent == a.count && pair.sessions[1].bytesReceived == a.count)
    }

    @Test("text: LF typed goes out as CR (CR LF as one CR), CR received is shown as LF")
    func lineEndings() {
        let typed = Array("hello\nworld\r\nend\n".utf8)
        let callerSession = AX25TerminalSession(local: Self.caller, mode: .connect(remote: Self.listener, via: []))
        let listenerSession = AX25TerminalSession(local: Self.listener, mode: .listen, closesWhenInputEnds: false)
        var pair = TerminalPair(callerSession, listenerSession, input: [typed, []], loss: 0, seed: 9)
        pair.run(limit: 600)
        #expect(pair.ends[0] == .completed)
        #expect(String(decoding: pair.shown[1], as: UTF8.self) == "hello\nworld\nend\n")
    }

    @Test("nobody answers: the caller gives up after its retries with connectFailed")
    func nobodyAnswers() {
        var p = AX25LinkParameters()
        p.retries = 3
        let callerSession = AX25TerminalSession(local: Self.caller, mode: .connect(remote: try! AX25Address(parsing: "NOBODY"), via: []), parameters: p)
        let listenerSession = AX25TerminalSession(local: Self.listener, mode: .listen)
        var pair = TerminalPair(callerSession, listenerSession, input: [[1, 2, 3], []], loss: 0, seed: 4)
        pair.run(limit: 600)
        guard case .connectFailed = pair.ends[0] else {
            Issue.record("expected connectFailed, got \(String(describing: pair.ends[0]))")
            return
        }
        #expect(pair.ends[1] == nil)
        #expect(pair.shown[1].isEmpty)
    }

    @Test("listening, a second caller is disconnected while the first is served")
    func secondCallerSentAway() {
        var listener = AX25TerminalSession(local: Self.listener, mode: .listen, closesWhenInputEnds: false)
        var first = AX25LinkStation(), second = AX25LinkStation()
        let other = try! AX25Address(parsing: "OTHER")
        _ = listener.start(now: 0)
        // Deliver frames between the listener and one station until quiet (no loss, instant).
        func exchange(_ station: inout AX25LinkStation, _ initial: [AX25LinkAction], now: Double) -> [String] {
            var toListener = initial.compactMap { if case .transmit(let b) = $0 { b } else { nil } }
            var statuses: [String] = []
            for _ in 0..<20 where !toListener.isEmpty {
                var toStation: [[UInt8]] = []
                for f in toListener {
                    for o in listener.received(frame: f, now: now) {
                        if case .transmit(let b) = o { toStation.append(b) }
                        if case .status(let s) = o { statuses.append(s) }
                    }
                }
                toListener = toStation.flatMap { station.received($0, now: now) }.compactMap { if case .transmit(let b) = $0 { b } else { nil } }
            }
            return statuses
        }
        _ = exchange(&first, first.connect(from: Self.caller, to: Self.listener, now: 0), now: 0)
        #expect(listener.isConnected && listener.remote == Self.caller)
        let statuses = exchange(&second, second.connect(from: other, to: Self.listener, now: 1), now: 1)
        #expect(statuses.contains { $0.contains("while serving") })
        #expect(listener.remote == Self.caller && listener.isConnected)
        #expect(second.link(from: other, to: Self.listener)?.isConnected != true)
    }
}
