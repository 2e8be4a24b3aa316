import Foundation
import Synchronization

/// A message in a wormhole mailbox, as the clients sent it.
public struct WormholeMessage: Sendable, Hashable, Codable {
    /// The sending side.
    public var side: String
    /// Its phase (`pake`, `version`, `0`, `1`, ...).
    public var phase: String
    /// Its body (hex, opaque to the server).
    public var body: String
    /// When the server received it (seconds since 1970).
    public var serverRx: Double
    /// The client's id for it, if any.
    public var id: String?

    /// Creates a message.
    public init(side: String, phase: String, body: String, serverRx: Double, id: String?) {
        self.side = side
        self.phase = phase
        self.body = body
        self.serverRx = serverRx
        self.id = id
    }
}

/// The rendezvous's bounds (`HubServerSettings.wormhole`, `modem-hub serve --wormhole-*`): storage per
/// mailbox, per client address and in all, and what one address may do per window. Every refusal is
/// the protocol's `error` message.
public struct WormholeLimits: Sendable, Hashable {
    /// Nameplates at once, over all applications.
    public var maximumNameplates = 10_000
    /// Mailboxes at once, over all applications.
    public var maximumMailboxes = 20_000
    /// Messages kept per mailbox.
    public var maximumMessages = 1000
    /// Bytes of message bodies kept per mailbox.
    public var maximumMailboxBytes = 1 << 20
    /// Bytes of message bodies kept in all (`--wormhole-max-bytes`).
    public var maximumTotalBytes = 512 << 20
    /// Nameplates one address created that still exist (`--wormhole-max-nameplates-per-address`).
    public var maximumNameplatesPerAddress = 100
    /// Mailboxes one address created that still exist (`--wormhole-max-mailboxes-per-address`).
    public var maximumMailboxesPerAddress = 200
    /// Bytes of message bodies one address added that are still kept, over every mailbox
    /// (`--wormhole-max-bytes-per-address`).
    public var maximumBytesPerAddress = 8 << 20
    /// Seconds after which an untouched nameplate or mailbox is dropped.
    public var idleSeconds: Double = 3 * 24 * 3600
    /// Nameplates allocated at once by one address's open connections.
    public var maximumLiveAllocations = 64
    /// Allocations per address per window.
    public var maximumAllocationsPerWindow = 600
    /// Claims and mailbox opens per address per window.
    public var maximumClaimsPerWindow = 1200
    /// The window of the counts per address, in seconds.
    public var windowSeconds: Double = 600
    /// Addresses the rate limiter remembers at once (`--wormhole-max-tracked-addresses`); beyond, the
    /// least active are forgotten first, never one at its limit while others are below theirs.
    public var maximumTrackedAddresses = 65_536

    /// The defaults.
    public init() {}
}

/// The magic-wormhole rendezvous server's state: per application id, nameplates (the number of a
/// wormhole code) and mailboxes (where the two sides leave messages for each other), in memory, with
/// every change listed for a store (``takeChanges()``, ``restore(_:)``: `WormholePersister` keeps them in
/// the hub's database, so a restarted hub carries on). Bounded: at most ``maximumNameplates`` nameplates
/// and ``maximumMailboxes`` mailboxes in all, ``maximumMessages`` messages and ``maximumMailboxBytes`` of
/// bodies per mailbox, ``WormholeLimits/maximumTotalBytes`` of bodies in all; per client address (the
/// `address` of the calls that create and add), the nameplates and mailboxes it created and the bytes it
/// added that are still kept (``WormholeLimits``); what nobody touched for ``idleSeconds`` is dropped
/// by ``expire(now:)``, which gives the addresses their room back.
///
/// The rules are the reference server's: allocating a nameplate claims it for the allocating side;
/// a nameplate and its mailbox take at most two sides ("crowded" beyond); a side that released a
/// nameplate cannot claim it again ("reclaimed"); a nameplate is freed when every side released it, a
/// mailbox when every side that opened it closed it. Listeners of an open mailbox get every message
/// added to it, their own included, and on opening all that came before.
public final class WormholeRendezvous: Sendable {
    /// A listener of a mailbox: gets the messages (as the socket's outbox would send them).
    public typealias Listener = @Sendable (WormholeMessage) -> Void

    /// Nameplates at once, over all applications.
    public let maximumNameplates: Int
    /// Mailboxes at once, over all applications.
    public let maximumMailboxes: Int
    /// Messages kept per mailbox.
    public let maximumMessages: Int
    /// Bytes of message bodies kept per mailbox (magic-wormhole's messages are a few KiB in all).
    public let maximumMailboxBytes: Int
    /// Seconds after which an untouched nameplate or mailbox is dropped.
    public let idleSeconds: Double
    /// Every bound (the ones above included).
    public let limits: WormholeLimits

    struct Nameplate {
        var mailbox: String
        var claimed: [String: Bool] = [:]   // side: still claimed
        var touched: Double
        /// The address that created it (nil: not counted per address).
        var by: String? = nil
    }
    struct Mailbox {
        var opened: [String: Bool] = [:]    // side: closed
        var messages: [WormholeMessage] = []
        var listeners: [Int: ListenerEntry] = [:]
        var touched: Double
        /// The address that created it (nil: not counted per address).
        var by: String? = nil
        /// Bytes of bodies added per address.
        var charges: [String: Int] = [:]
        /// Bytes of all bodies.
        var bytes: Int { messages.reduce(0) { $0 + $1.body.utf8.count } }
    }
    /// What one address holds.
    struct Holding {
        var nameplates = 0
        var mailboxes = 0
        var bytes = 0
        var isEmpty: Bool { nameplates == 0 && mailboxes == 0 && bytes == 0 }
    }
    /// A listener and how many of the mailbox's messages it was given.
    struct ListenerEntry {
        var call: Listener
        var delivered: Int
    }
    struct App {
        var nameplates: [String: Nameplate] = [:]
        var mailboxes: [String: Mailbox] = [:]
    }
    struct State {
        var apps: [String: App] = [:]
        var nameplateCount = 0
        var mailboxCount = 0
        var nextListener = 0
        /// Bumped by every change; what changed since the last ``takeChanges()``.
        var generation = 0
        var dirty: Set<RecordKey> = []
        /// What each address holds (of the records in this memory), and the bytes of bodies in all.
        var held: [String: Holding] = [:]
        /// What an address holds beyond this memory (in a database several nodes share), for the checks.
        var elsewhere: [String: Holding] = [:]
        /// What the bounds see of an address: memory's holding and what it holds elsewhere.
        func holding(_ address: String) -> Holding {
            let a = held[address] ?? Holding(), b = elsewhere[address] ?? Holding()
            return Holding(nameplates: a.nameplates + b.nameplates, mailboxes: a.mailboxes + b.mailboxes, bytes: a.bytes + b.bytes)
        }
        var totalBytes = 0
        mutating func touch(_ kind: RecordKey.Kind, _ app: String, _ key: String) {
            generation += 1
            dirty.insert(RecordKey(kind: kind, app: app, key: key))
        }
        mutating func hold(_ address: String?, _ change: (inout Holding) -> Void) {
            guard let address else { return }
            var h = held[address] ?? Holding()
            change(&h)
            held[address] = h.isEmpty ? nil : h
        }
        /// A nameplate came into memory, or went (`sign` -1).
        mutating func count(_ p: Nameplate, _ sign: Int) { hold(p.by) { $0.nameplates += sign } }
        mutating func count(_ m: Mailbox, _ sign: Int) {
            hold(m.by) { $0.mailboxes += sign }
            for (address, n) in m.charges { hold(address) { $0.bytes += sign * n } }
            totalBytes += sign * m.bytes
        }
    }

    /// A nameplate or a mailbox, as stored.
    public struct RecordKey: Sendable, Hashable {
        /// Which table.
        public enum Kind: String, Sendable { case nameplate, mailbox }
        public var kind: Kind
        public var app: String
        public var key: String
    }

    /// A changed record: its JSON body, or nil when it is gone.
    public struct Change: Sendable, Hashable {
        public var record: RecordKey
        public var body: String?
    }

    // `by` and `charges` (who holds the record's room) are kept with it, so a restarted hub still counts them.
    struct NameplateRecord: Codable { var mailbox: String; var claimed: [String: Bool]; var touched: Double; var by: String? }
    struct MailboxRecord: Codable {
        var opened: [String: Bool]; var messages: [WormholeMessage]; var touched: Double; var by: String?; var charges: [String: Int]?
    }
    let state = Mutex(State())

    /// Creates an empty rendezvous with `limits`.
    public init(limits: WormholeLimits) {
        self.limits = limits
        maximumNameplates = limits.maximumNameplates
        maximumMailboxes = limits.maximumMailboxes
        maximumMessages = limits.maximumMessages
        maximumMailboxBytes = limits.maximumMailboxBytes
        idleSeconds = limits.idleSeconds
    }

    /// Creates an empty rendezvous: ``WormholeLimits``'s defaults but for the bounds given.
    public convenience init(maximumNameplates: Int = 10_000, maximumMailboxes: Int = 20_000, maximumMessages: Int = 1000,
                            maximumMailboxBytes: Int = 1 << 20,
                            idleSeconds: Double = 3 * 24 * 3600) {
        var l = WormholeLimits()
        l.maximumNameplates = maximumNameplates
        l.maximumMailboxes = maximumMailboxes
        l.maximumMessages = maximumMessages
        l.maximumMailboxBytes = maximumMailboxBytes
        l.idleSeconds = idleSeconds
        self.init(limits: l)
    }

    /// What `address` holds now: nameplates and mailboxes it created, bytes of bodies it added.
    public func holding(of address: String) -> (nameplates: Int, mailboxes: Int, bytes: Int) {
        state.withLock { s in
            let h = s.held[address] ?? Holding()
            return (h.nameplates, h.mailboxes, h.bytes)
        }
    }

    /// Bytes of message bodies kept now, in all.
    public var totalBytes: Int { state.withLock { $0.totalBytes } }

    /// Where the records live in a database several nodes share (``WormholeShared``): what `address` holds
    /// there in all (nameplates and mailboxes it created, bytes it added), of which this memory's part is
    /// taken off, so that the bounds per address count every node's records. Cleared by
    /// ``forgetHoldingElsewhere(of:)`` after the request.
    public func setHoldingInAll(of address: String, nameplates: Int, mailboxes: Int, bytes: Int) {
        state.withLock { s in
            let mine = s.held[address] ?? Holding()
            s.elsewhere[address] = Holding(nameplates: max(0, nameplates - mine.nameplates), mailboxes: max(0, mailboxes - mine.mailboxes),
                                           bytes: max(0, bytes - mine.bytes))
        }
    }

    /// Forgets what ``setHoldingInAll(of:nameplates:mailboxes:bytes:)`` set.
    public func forgetHoldingElsewhere(of address: String) {
        state.withLock { _ = $0.elsewhere.removeValue(forKey: address) }
    }

    /// Nameplates and mailboxes held in this memory now, over all applications (for the metrics; on
    /// PostgreSQL, those this node has read or made).
    public var counts: (nameplates: Int, mailboxes: Int) {
        state.withLock { s in
            s.apps.values.reduce((0, 0)) { ($0.0 + $1.nameplates.count, $0.1 + $1.mailboxes.count) }
        }
    }

    /// Nameplates in use by an application, sorted.
    public func nameplates(app: String) -> [String] {
        state.withLock { ($0.apps[app]?.nameplates.keys).map { $0.sorted() } ?? [] }
    }

    /// Allocates a free nameplate (the smallest free number from 1) and claims it for `side`, counted
    /// against `address` (nil: not counted per address).
    public func allocate(app: String, side: String, now: Double, address: String? = nil) throws(RendezvousRefusal) -> String {
        let taken = Set(nameplates(app: app))
        var n = 1
        while taken.contains(String(n)) { n += 1 }
        let name = String(n)
        _ = try claim(app: app, nameplate: name, side: side, now: now, address: address)
        return name
    }

    /// Claims a nameplate for `side` (creating it and its mailbox when new, counted against `address`)
    /// and opens its mailbox.
    /// - Returns: the mailbox id.
    public func claim(app: String, nameplate: String, side: String, now: Double, address: String? = nil) throws(RendezvousRefusal) -> String {
        guard !nameplate.isEmpty, nameplate.utf8.count <= 64, nameplate.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw RendezvousRefusal.badRequest("nameplate must be digits")
        }
        let result: Result<String, RendezvousRefusal> = state.withLock { s in
            var a = s.apps[app] ?? App()
            defer { s.apps[app] = a }
            if a.nameplates[nameplate] == nil {
                guard s.nameplateCount < maximumNameplates, s.mailboxCount < maximumMailboxes else {
                    return .failure(RendezvousRefusal.serverFull("the server has no room for another nameplate"))
                }
                if let address, let refusal = Self.refusal(s.holding(address), limits, nameplate: 1, mailbox: 1) {
                    return .failure(refusal)
                }
                let mailbox = Self.newMailboxID()
                let p = Nameplate(mailbox: mailbox, touched: now, by: address), m = Mailbox(touched: now, by: address)
                a.nameplates[nameplate] = p
                a.mailboxes[mailbox] = m
                s.count(p, 1)
                s.count(m, 1)
                s.nameplateCount += 1
                s.mailboxCount += 1
            }
            var p = a.nameplates[nameplate]!
            if let still = p.claimed[side], !still { return .failure(RendezvousRefusal.reclaimed) }
            if p.claimed[side] == nil && p.claimed.count >= 2 { return .failure(RendezvousRefusal.crowded) }
            p.claimed[side] = true
            p.touched = now
            a.nameplates[nameplate] = p
            s.touch(.nameplate, app, nameplate)
            if case .failure(let e) = open(&a, &s, app: app, mailbox: p.mailbox, side: side, now: now, address: address) {
                return .failure(e)
            }
            return .success(p.mailbox)
        }
        return try result.get()
    }

    /// Releases `side`'s claim on a nameplate; the nameplate goes when no side claims it.
    public func release(app: String, nameplate: String, side: String, now: Double) {
        state.withLock { s in
            guard var a = s.apps[app], var p = a.nameplates[nameplate], p.claimed[side] != nil else { return }
            p.claimed[side] = false
            s.touch(.nameplate, app, nameplate)
            if p.claimed.values.contains(true) {
                a.nameplates[nameplate] = p
            } else {
                a.nameplates[nameplate] = nil
                s.count(p, -1)
                s.nameplateCount -= 1
            }
            s.apps[app] = a
        }
    }

    /// Opens a mailbox for `side` (creating it when new, counted against `address`) and adds `listener`,
    /// which first gets the messages already there.
    /// - Returns: the listener's handle (for ``stopListening(app:mailbox:handle:)``).
    public func open(app: String, mailbox: String, side: String, now: Double, address: String? = nil,
                     listener: @escaping Listener) throws(RendezvousRefusal) -> Int {
        guard !mailbox.isEmpty, mailbox.utf8.count <= 64 else { throw RendezvousRefusal.badRequest("mailbox id must be 1 to 64 characters") }
        let result: Result<(Int, [WormholeMessage]), RendezvousRefusal> = state.withLock { s in
            var a = s.apps[app] ?? App()
            defer { s.apps[app] = a }
            if case .failure(let e) = open(&a, &s, app: app, mailbox: mailbox, side: side, now: now, address: address) {
                return .failure(e)
            }
            s.nextListener += 1
            let earlier = a.mailboxes[mailbox]!.messages
            a.mailboxes[mailbox]!.listeners[s.nextListener] = ListenerEntry(call: listener, delivered: earlier.count)
            return .success((s.nextListener, earlier))
        }
        let (handle, earlier) = try result.get()
        for m in earlier { listener(m) }
        return handle
    }

    /// Stops a listener (its socket closed, or it closed the mailbox).
    public func stopListening(app: String, mailbox: String, handle: Int) {
        state.withLock { s in _ = s.apps[app]?.mailboxes[mailbox]?.listeners.removeValue(forKey: handle) }
    }

    /// Adds a message to an open mailbox (its bytes counted against `address`) and hands it to every listener.
    public func add(app: String, mailbox: String, message: WormholeMessage, address: String? = nil) throws(RendezvousRefusal) {
        let size = message.body.utf8.count
        let result: Result<[(Listener, [WormholeMessage])], RendezvousRefusal> = state.withLock { s in
            guard var m = s.apps[app]?.mailboxes[mailbox] else { return .failure(RendezvousRefusal.noSuchMailbox) }
            guard m.messages.count < maximumMessages else {
                return .failure(RendezvousRefusal.mailboxFull("this mailbox holds \(maximumMessages) messages already"))
            }
            guard m.bytes + size <= maximumMailboxBytes else {
                return .failure(RendezvousRefusal.mailboxFull("this mailbox holds \(maximumMailboxBytes) bytes of messages already"))
            }
            if let address, s.holding(address).bytes + size > limits.maximumBytesPerAddress {
                return .failure(RendezvousRefusal.addressLimit("too many bytes of messages held by your address (\(limits.maximumBytesPerAddress)); close some mailboxes first"))
            }
            guard s.totalBytes + size <= limits.maximumTotalBytes else {
                return .failure(RendezvousRefusal.serverFull("the server holds too many bytes of messages (\(limits.maximumTotalBytes)); try again later"))
            }
            s.count(m, -1)
            if let address { m.charges[address, default: 0] += size }
            m.messages.append(message)
            s.count(m, 1)
            m.touched = message.serverRx
            s.apps[app]!.mailboxes[mailbox] = m
            s.touch(.mailbox, app, mailbox)
            return .success(Self.catchUp(&s, app: app, mailbox: mailbox))
        }
        for (l, messages) in try result.get() { for m in messages { l(m) } }
    }

    /// What each listener of a mailbox has not been given yet (marked as given).
    private static func catchUp(_ s: inout State, app: String, mailbox: String) -> [(Listener, [WormholeMessage])] {
        guard var m = s.apps[app]?.mailboxes[mailbox] else { return [] }
        var out: [(Listener, [WormholeMessage])] = []
        for (h, var e) in m.listeners where e.delivered < m.messages.count {
            out.append((e.call, Array(m.messages[e.delivered...])))
            e.delivered = m.messages.count
            m.listeners[h] = e
        }
        s.apps[app]!.mailboxes[mailbox] = m
        return out
    }

    /// Whether this node has listeners of a mailbox.
    public func hasListeners(app: String, mailbox: String) -> Bool {
        state.withLock { !($0.apps[app]?.mailboxes[mailbox]?.listeners.isEmpty ?? true) }
    }

    // MARK: - Shared state (several nodes on one database)

    /// Replaces records with their stored bodies (a nil body: gone), keeping this node's listeners,
    /// without marking anything changed; then gives the listeners of refreshed mailboxes what they
    /// have not had. Used where the database is the truth and this memory only a copy.
    public func refresh(_ records: [Change]) {
        let deliveries: [(Listener, [WormholeMessage])] = state.withLock { s in
            let decoder = JSONDecoder()
            var touchedBoxes: [(String, String)] = []
            for r in records {
                var a = s.apps[r.record.app] ?? App()
                switch r.record.kind {
                case .nameplate:
                    let old = a.nameplates[r.record.key]
                    if let body = r.body?.data(using: .utf8), let p = try? decoder.decode(NameplateRecord.self, from: body) {
                        let new = Nameplate(mailbox: p.mailbox, claimed: p.claimed, touched: p.touched, by: p.by)
                        if let old { s.count(old, -1) } else { s.nameplateCount += 1 }
                        a.nameplates[r.record.key] = new
                        s.count(new, 1)
                    } else if let old {
                        a.nameplates[r.record.key] = nil
                        s.count(old, -1)
                        s.nameplateCount -= 1
                    }
                case .mailbox:
                    let old = a.mailboxes[r.record.key]
                    if let body = r.body?.data(using: .utf8), let m = try? decoder.decode(MailboxRecord.self, from: body) {
                        var listeners = old?.listeners ?? [:]
                        for (h, var e) in listeners { e.delivered = min(e.delivered, m.messages.count); listeners[h] = e }
                        let new = Mailbox(opened: m.opened, messages: m.messages, listeners: listeners, touched: m.touched,
                                          by: m.by, charges: m.charges ?? [:])
                        if let old { s.count(old, -1) } else { s.mailboxCount += 1 }
                        a.mailboxes[r.record.key] = new
                        s.count(new, 1)
                        touchedBoxes.append((r.record.app, r.record.key))
                    } else if let old, old.listeners.isEmpty {
                        a.mailboxes[r.record.key] = nil
                        s.count(old, -1)
                        s.mailboxCount -= 1
                    }
                }
                s.apps[r.record.app] = a
            }
            return touchedBoxes.flatMap { Self.catchUp(&s, app: $0.0, mailbox: $0.1) }
        }
        for (l, messages) in deliveries { for m in messages { l(m) } }
    }

    /// Forgets records of memory (not marking them changed): the nameplates given, and the mailboxes
    /// given that have no listener here. Where the database is the truth this keeps memory to the
    /// mailboxes this node's clients have open.
    public func forget(app: String, nameplates: [String], mailboxes: [String]) {
        state.withLock { s in
            guard var a = s.apps[app] else { return }
            for n in nameplates {
                guard let p = a.nameplates.removeValue(forKey: n) else { continue }
                s.count(p, -1)
                s.nameplateCount -= 1
            }
            for m in mailboxes {
                guard let box = a.mailboxes[m], box.listeners.isEmpty else { continue }
                a.mailboxes[m] = nil
                s.count(box, -1)
                s.mailboxCount -= 1
            }
            s.apps[app] = a.nameplates.isEmpty && a.mailboxes.isEmpty ? nil : a
        }
    }

    /// The mailbox a nameplate leads to, if this memory has the nameplate.
    public func mailbox(app: String, nameplate: String) -> String? {
        state.withLock { $0.apps[app]?.nameplates[nameplate]?.mailbox }
    }

    /// Closes `side`'s use of a mailbox (opening it first when this side never did); the mailbox goes
    /// when every side that opened it closed it.
    public func close(app: String, mailbox: String, side: String, now: Double) throws(RendezvousRefusal) {
        let result: Result<Void, RendezvousRefusal> = state.withLock { s in
            var a = s.apps[app] ?? App()
            defer { s.apps[app] = a }
            if case .failure(let e) = open(&a, &s, app: app, mailbox: mailbox, side: side, now: now, address: nil) {
                return .failure(e)
            }
            a.mailboxes[mailbox]!.opened[side] = true
            s.touch(.mailbox, app, mailbox)
            if a.mailboxes[mailbox]!.opened.values.allSatisfy({ $0 }) {
                s.count(a.mailboxes[mailbox]!, -1)
                a.mailboxes[mailbox] = nil
                s.mailboxCount -= 1
            }
            return .success(())
        }
        try result.get()
    }

    /// Drops nameplates and mailboxes nobody touched for ``idleSeconds``.
    /// - Returns: how many of each went.
    @discardableResult
    public func expire(now: Double) -> (nameplates: Int, mailboxes: Int) {
        state.withLock { s in
            var gone = (0, 0)
            for (id, var a) in s.apps {
                let oldPlates = a.nameplates.filter { now - $0.value.touched > idleSeconds }.map(\.key)
                let oldBoxes = a.mailboxes.filter { now - $0.value.touched > idleSeconds && $0.value.listeners.isEmpty }.map(\.key)
                for k in oldPlates { if let p = a.nameplates.removeValue(forKey: k) { s.count(p, -1) }; s.touch(.nameplate, id, k) }
                for k in oldBoxes { if let m = a.mailboxes.removeValue(forKey: k) { s.count(m, -1) }; s.touch(.mailbox, id, k) }
                gone.0 += oldPlates.count
                gone.1 += oldBoxes.count
                s.apps[id] = a.nameplates.isEmpty && a.mailboxes.isEmpty ? nil : a
            }
            s.nameplateCount -= gone.0
            s.mailboxCount -= gone.1
            return gone
        }
    }

    /// Why `held` (what an address holds) may not grow by `nameplate` nameplates and `mailbox` mailboxes,
    /// or nil when it may.
    static func refusal(_ held: Holding?, _ limits: WormholeLimits, nameplate: Int, mailbox: Int) -> RendezvousRefusal? {
        let h = held ?? Holding()
        if nameplate > 0 && h.nameplates + nameplate > limits.maximumNameplatesPerAddress {
            return RendezvousRefusal.addressLimit("too many nameplates held by your address (\(limits.maximumNameplatesPerAddress)); release some first")
        }
        if mailbox > 0 && h.mailboxes + mailbox > limits.maximumMailboxesPerAddress {
            return RendezvousRefusal.addressLimit("too many mailboxes held by your address (\(limits.maximumMailboxesPerAddress)); close some first")
        }
        return nil
    }

    /// Opens (creating when new, counted against `address`) a mailbox for a side; at most two sides.
    private func open(_ a: inout App, _ s: inout State, app: String, mailbox: String, side: String, now: Double,
                      address: String?) -> Result<Void, RendezvousRefusal> {
        if a.mailboxes[mailbox] == nil {
            guard s.mailboxCount < maximumMailboxes else { return .failure(RendezvousRefusal.serverFull("the server has no room for another mailbox")) }
            if let address, let refusal = Self.refusal(s.holding(address), limits, nameplate: 0, mailbox: 1) { return .failure(refusal) }
            let m = Mailbox(touched: now, by: address)
            a.mailboxes[mailbox] = m
            s.count(m, 1)
            s.mailboxCount += 1
        }
        s.touch(.mailbox, app, mailbox)
        var m = a.mailboxes[mailbox]!
        if m.opened[side] == nil {
            guard m.opened.count < 2 else { return .failure(RendezvousRefusal.crowded) }
            m.opened[side] = false
        }
        m.touched = now
        a.mailboxes[mailbox] = m
        return .success(())
    }

    // MARK: - Persistence

    /// The number of changes so far.
    public var generation: Int { state.withLock { $0.generation } }

    /// What changed since the last call (each record's current body, nil when gone), and the generation
    /// they bring the store to.
    public func takeChanges() -> (generation: Int, changes: [Change]) {
        state.withLock { s in
            let encoder = JSONEncoder()
            // Unescaped slashes: an IPv6 client's key (`2001:db8::/64`) reads as written, as the
            // shared rendezvous's text match of an address in a record expects (WormholeShared).
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let changes = s.dirty.map { k -> Change in
                var body: String?
                switch k.kind {
                case .nameplate:
                    if let p = s.apps[k.app]?.nameplates[k.key] {
                        body = (try? encoder.encode(NameplateRecord(mailbox: p.mailbox, claimed: p.claimed, touched: p.touched, by: p.by)))
                            .map { String(decoding: $0, as: UTF8.self) }
                    }
                case .mailbox:
                    if let m = s.apps[k.app]?.mailboxes[k.key] {
                        body = (try? encoder.encode(MailboxRecord(opened: m.opened, messages: m.messages, touched: m.touched, by: m.by,
                                                                  charges: m.charges.isEmpty ? nil : m.charges)))
                            .map { String(decoding: $0, as: UTF8.self) }
                    }
                }
                return Change(record: k, body: body)
            }
            s.dirty.removeAll()
            return (s.generation, changes)
        }
    }

    /// Restores stored records (at start, before any client): those that do not decode are skipped.
    /// - Returns: how many were restored.
    @discardableResult
    public func restore(_ records: [Change]) -> Int {
        state.withLock { s in
            var n = 0
            let decoder = JSONDecoder()
            for r in records {
                guard let body = r.body?.data(using: .utf8) else { continue }
                var a = s.apps[r.record.app] ?? App()
                switch r.record.kind {
                case .nameplate:
                    guard let p = try? decoder.decode(NameplateRecord.self, from: body), a.nameplates[r.record.key] == nil else { continue }
                    let new = Nameplate(mailbox: p.mailbox, claimed: p.claimed, touched: p.touched, by: p.by)
                    a.nameplates[r.record.key] = new
                    s.count(new, 1)
                    s.nameplateCount += 1
                case .mailbox:
                    guard let m = try? decoder.decode(MailboxRecord.self, from: body), a.mailboxes[r.record.key] == nil else { continue }
                    let new = Mailbox(opened: m.opened, messages: m.messages, listeners: [:], touched: m.touched, by: m.by,
                                      charges: m.charges ?? [:])
                    a.mailboxes[r.record.key] = new
                    s.count(new, 1)
                    s.mailboxCount += 1
                }
                s.apps[r.record.app] = a
                n += 1
            }
            return n
        }
    }

    /// A fresh mailbox id: 13 characters of base32 from 64 random bits.
    static func newMailboxID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        var g = SystemRandomNumberGenerator()
        var v = g.next() as UInt64
        return String((0..<13).map { _ in defer { v >>= 5 }; return alphabet[Int(v & 31)] })
    }
}
