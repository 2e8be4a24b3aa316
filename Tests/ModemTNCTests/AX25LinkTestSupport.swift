import ModemCodecs
import ModemRuntime
@testable import ModemTNC

/// Two link stations on a simulated half-duplex channel in virtual time: frames take their airtime at
/// 1200 bit/s (plus 20 ms key-up), one at a time, in the order they were sent; each frame is lost with
/// probability `loss` (a seeded generator). Both stations hear the channel busy while anything is on it.
/// No clock, no sleeps: time jumps to the next frame's end or the next timer deadline.
struct AX25SimulatedChannel {
    var stations: [AX25LinkStation]
    var now: Double = 0
    var loss: Double
    var rng: SplitMix64
    /// Frames on the air: sender, bytes, time the last bit ends.
    var air: [(from: Int, bytes: [UInt8], end: Double)] = []
    var channelFreeAt: Double = 0
    var busy = false
    /// Everything but transmissions, per station, in order.
    var events: [[AX25LinkAction]] = [[], []]
    /// Every frame sent, per station (for counting kinds).
    var sent: [[AX25LinkFrame.Header]] = [[], []]
    /// Rewrites what station `index` would send (a v2.0 peer's answers): `nil` passes the frame on, an
    /// empty array drops it.
    var rewrite: (@Sendable (_ index: Int, _ bytes: [UInt8]) -> [[UInt8]]?)?
    /// Frames a station receives that are not answered by it (a vanished peer).
    var deaf: Set<Int> = []
    /// Frames and events, for a failing test's output.
    var trace: [String] = []

    static let bitRate = 1200.0

    init(_ a: AX25LinkStation, _ b: AX25LinkStation, loss: Double = 0, seed: UInt64 = 1) {
        stations = [a, b]
        self.loss = loss
        rng = SplitMix64(seed: seed)
    }

    /// Performs one station's actions.
    mutating func perform(_ index: Int, _ actions: [AX25LinkAction]) {
        for action in actions {
            if case .transmit(let bytes) = action {
                if let rewritten = rewrite?(index, bytes) {
                    for b in rewritten { put(index, b) }
                } else {
                    put(index, bytes)
                }
            } else {
                if case .data = action {} else { trace.append("\(now) \(index) \(action)") }
                events[index].append(action)
            }
        }
    }

    mutating func put(_ index: Int, _ bytes: [UInt8]) {
        if let header = try? AX25LinkFrame.header(bytes) { sent[index].append(header) }
        let start = max(now, channelFreeAt)
        let end = start + 0.02 + Double(bytes.count + 4) * 8 / Self.bitRate
        channelFreeAt = end
        air.append((index, bytes, end))
        if !busy {
            busy = true
            for i in 0..<2 { perform(i, stations[i].channelBusy(true, now: now)) }
        }
    }

    /// Station `index` does something now.
    mutating func act(_ index: Int, _ body: (inout AX25LinkStation, Double) -> [AX25LinkAction]) {
        let actions = body(&stations[index], now)
        perform(index, actions)
    }

    /// Moves to the next event; `false` when nothing more can happen before `limit` (time then moves to `limit`).
    mutating func step(limit: Double = .infinity) -> Bool {
        let deadlines = [air.first?.end, stations[0].nextDeadline, stations[1].nextDeadline].compactMap { $0 }
        guard let next = deadlines.min(), next <= limit else {
            now = max(now, limit == .infinity ? now : limit)
            return false
        }
        now = max(now, next)
        if let first = air.first, first.end <= now {
            air.removeFirst()
            let to = 1 - first.from
            let lost = rng.uniform() < loss
            let summary = (try? AX25LinkFrame(decoding: first.bytes, modulo: stations[to].links.values.first?.modulo ?? .eight).summary) ?? "?"
            trace.append("\(now) \(first.from)->\(to) \(summary)\(lost ? " LOST" : "")")
            if !lost && !deaf.contains(to) {
                perform(to, stations[to].received(first.bytes, now: now))
            }
            if air.isEmpty {
                // The channel clears: each station in turn (the order by the generator) may take it; once
                // one transmits, the other keeps hearing it busy.
                busy = false
                let first = Int(rng.next() & 1)
                for i in [first, 1 - first] where !busy { perform(i, stations[i].channelBusy(false, now: now)) }
            }
            return true
        }
        for i in 0..<2 where (stations[i].nextDeadline.map { $0 <= now } ?? false) {
            perform(i, stations[i].advance(to: now))
        }
        return true
    }

    /// Steps until `done` holds or virtual time passes `limit`; returns whether `done` held.
    @discardableResult
    mutating func run(until limit: Double, _ done: (AX25SimulatedChannel) -> Bool = { _ in false }) -> Bool {
        while !done(self) {
            guard step(limit: limit) else { return done(self) }
        }
        return true
    }

    /// The bytes station `index` received as data, concatenated.
    func data(_ index: Int) -> [UInt8] {
        var out: [UInt8] = []
        for case .data(_, _, _, let b) in events[index] { out += b }
        return out
    }

    func connected(_ index: Int) -> Bool {
        events[index].contains { if case .connected = $0 { true } else { false } }
    }

    func disconnectReason(_ index: Int) -> AX25DisconnectReason? {
        events[index].lazy.compactMap { if case .disconnected(_, _, let r) = $0 { r } else { nil } }.first
    }

    /// How many frames of this control byte (P/F masked, low two bits 11) or S type station `index` sent.
    func count(_ index: Int, where body: (AX25LinkFrame.Header) -> Bool) -> Int { sent[index].filter(body).count }
}

enum AX25LinkFixtures {
    static func call(_ text: String) -> AX25Address {
        do { return try AX25Address(parsing: text) } catch { preconditionFailure("\(error)") }
    }
    static let a = call("N0CALL")
    static let b = call("W1AW-7")

    /// Two stations, B registered.
    static func pair(_ pa: AX25LinkParameters = AX25LinkParameters(), _ pb: AX25LinkParameters = AX25LinkParameters(),
                     loss: Double = 0, seed: UInt64 = 1) -> AX25SimulatedChannel {
        var sa = AX25LinkStation(parameters: pa)
        sa.register(a)
        var sb = AX25LinkStation(parameters: pb)
        sb.register(b)
        return AX25SimulatedChannel(sa, sb, loss: loss, seed: seed)
    }

    static func payload(_ count: Int, seed: UInt64) -> [UInt8] {
        var g = SplitMix64(seed: seed)
        return g.bytes(count)
    }
}
