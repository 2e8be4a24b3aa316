/// The first line a client sends a magic-wormhole transit relay: `please relay TOKEN for side SIDE\n`
/// (TOKEN: 64 lowercase hex digits, the transit key's relay token; SIDE: 16 hex digits, the client's side),
/// or the older `please relay TOKEN\n` without a side. Two connections with the same token and different
/// sides (or no sides) are joined; the relay answers each `ok\n` and then copies bytes between them.
public struct TransitHandshake: Sendable, Hashable {
    /// The relay token (64 lowercase hex digits).
    public var token: String
    /// The client's side (16 hex digits), or nil for the older form.
    public var side: String?

    /// Creates a handshake (the parser checks the digits; this does not).
    public init(token: String, side: String?) {
        self.token = token
        self.side = side
    }

    /// The longest first line accepted, newline included.
    public static let maximumLength = 128
    /// The relay's answer when two connections are joined.
    public static let ok: [UInt8] = Array("ok\n".utf8)
    /// The relay's answer to a first line that is not a handshake, before it closes the connection.
    public static let bad: [UInt8] = Array("bad handshake\n".utf8)

    /// Parses a first line (with its newline).
    /// - Returns: the handshake, or nil when the line is not one.
    public static func parse<C: BidirectionalCollection<UInt8>>(_ line: C) -> TransitHandshake? {
        guard line.count <= maximumLength, line.last == UInt8(ascii: "\n"),
              let text = String(validating: line.dropLast(), as: UTF8.self) else { return nil }
        let words = text.split(separator: " ", omittingEmptySubsequences: false)
        func isHexDigits(_ s: Substring, _ count: Int) -> Bool {
            s.utf8.count == count && s.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }
        guard words.count == 3 || words.count == 6, words[0] == "please", words[1] == "relay", isHexDigits(words[2], 64) else { return nil }
        if words.count == 3 { return TransitHandshake(token: String(words[2]), side: nil) }
        guard words[3] == "for", words[4] == "side", isHexDigits(words[5], 16) else { return nil }
        return TransitHandshake(token: String(words[2]), side: String(words[5]))
    }

    /// Whether two waiting connections belong together: the same token, and different sides (a client's
    /// own second connection, same side, never meets itself). Older clients, without sides, pair on
    /// the token alone.
    public func pairs(with other: TransitHandshake) -> Bool {
        guard token == other.token else { return false }
        if let a = side, let b = other.side { return a != b }
        return true
    }
}

/// Who waits for whom: the relay's pending connections by token, as a value (the relay holds it under a
/// lock). Bounded: at most `maximumPending` connections wait at once, at most `maximumPerAddress` of them
/// from one address.
public struct TransitMatcher<Connection: Hashable & Sendable>: Sendable {
    /// What happened to an arrival.
    public enum Arrival: Sendable, Equatable {
        /// Joined with a waiting connection (now no longer waiting).
        case paired(Connection)
        /// Waiting for its peer.
        case waiting
        /// Refused: too many waiting connections (from its address, or in all).
        case refused(String)
    }

    /// Connections that may wait at once.
    public let maximumPending: Int
    /// Connections that may wait at once from one address.
    public let maximumPerAddress: Int
    private var waiting: [String: [(handshake: TransitHandshake, connection: Connection, address: String)]] = [:]
    private var perAddress: [String: Int] = [:]
    /// Connections waiting now.
    public private(set) var pendingCount = 0

    /// Creates an empty matcher.
    public init(maximumPending: Int, maximumPerAddress: Int) {
        self.maximumPending = maximumPending
        self.maximumPerAddress = maximumPerAddress
    }

    /// A connection that sent its handshake.
    public mutating func arrive(_ handshake: TransitHandshake, connection: Connection, address: String) -> Arrival {
        if var list = waiting[handshake.token], let i = list.firstIndex(where: { $0.handshake.pairs(with: handshake) }) {
            let other = list.remove(at: i)
            waiting[handshake.token] = list.isEmpty ? nil : list
            release(other.address)
            return .paired(other.connection)
        }
        guard pendingCount < maximumPending else { return .refused("the relay has \(maximumPending) connections waiting") }
        guard perAddress[address, default: 0] < maximumPerAddress else {
            return .refused("\(maximumPerAddress) connections from \(address) are waiting")
        }
        waiting[handshake.token, default: []].append((handshake, connection, address))
        perAddress[address, default: 0] += 1
        pendingCount += 1
        return .waiting
    }

    /// A waiting connection that went away or waited too long.
    /// - Returns: whether it was waiting.
    @discardableResult
    public mutating func leave(_ connection: Connection, token: String) -> Bool {
        guard var list = waiting[token], let i = list.firstIndex(where: { $0.connection == connection }) else { return false }
        let gone = list.remove(at: i)
        waiting[token] = list.isEmpty ? nil : list
        release(gone.address)
        return true
    }

    private mutating func release(_ address: String) {
        pendingCount -= 1
        let n = perAddress[address, default: 1] - 1
        perAddress[address] = n == 0 ? nil : n
    }
}

/// The relay's joined pairs, counted in all and per address, as a value (the relay holds it under a
/// lock). A pair counts once against each distinct address of its two ends (so one address making pairs
/// of its own uses a place per pair); an end of a trusted proxy (nil) is not counted per address.
public struct TransitPairCounts: Sendable {
    /// Pairs at once in all.
    public let maximumPairs: Int
    /// Pairs at once that one address takes part in.
    public let maximumPerAddress: Int
    /// Pairs joined now.
    public private(set) var active = 0
    private var perAddress: [String: Int] = [:]

    /// No pairs yet.
    public init(maximumPairs: Int, maximumPerAddress: Int) {
        self.maximumPairs = maximumPairs
        self.maximumPerAddress = maximumPerAddress
    }

    /// Pairs that `address` takes part in now.
    public func pairs(of address: String) -> Int { perAddress[address, default: 0] }

    /// Counts a pair of ends from `a` and `b` in.
    /// - Returns: nil when joined, else why it was refused (nothing is counted then).
    public mutating func join(_ a: String?, _ b: String?) -> String? {
        guard active < maximumPairs else { return "the relay carries \(maximumPairs) pairs" }
        let addresses = Self.distinct(a, b)
        for x in addresses where perAddress[x, default: 0] >= maximumPerAddress {
            return "\(x) takes part in \(maximumPerAddress) pairs already"
        }
        for x in addresses { perAddress[x, default: 0] += 1 }
        active += 1
        return nil
    }

    /// A pair joined by ``join(_:_:)`` with the same addresses ended.
    public mutating func end(_ a: String?, _ b: String?) {
        active = max(0, active - 1)
        for x in Self.distinct(a, b) {
            let n = perAddress[x, default: 1] - 1
            perAddress[x] = n > 0 ? n : nil
        }
    }

    private static func distinct(_ a: String?, _ b: String?) -> [String] {
        switch (a, b) {
        case let (x?, y?): return x == y ? [x] : [x, y]
        case let (x?, nil), let (nil, x?): return [x]
        case (nil, nil): return []
        }
    }
}
