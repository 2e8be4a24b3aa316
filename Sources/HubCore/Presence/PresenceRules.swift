// What a groups operation did to the shared state (outcome) and what must be sent because of it
// (actions). Stores (in memory, SQLite, PostgreSQL) compute outcomes in one transaction; the rules
// below turn any outcome into the same events, so every engine speaks the groups API the same way.

/// A connection's id: unique across nodes (the node's instance id is part of it).
public typealias ConnectionID = String

/// What an operation changed, as a store reports it.
public enum PresenceOutcome: Sendable, Hashable {
    /// Joined; `cameOnline` is set when this was the user's first live connection in the group.
    case joined(group: String, snapshot: GroupSnapshot, cameOnline: MemberPresence?)
    /// Listening: the snapshot, nobody told.
    case listened(group: String, snapshot: GroupSnapshot)
    /// Left; `wentOffline` is set when the user has no live connection left in the group.
    case left(group: String, wentOffline: MemberPresence?)
    /// A new userload, one presence per group the user is a member of.
    case updated([MemberPresence])
    /// A post stored (new or replaced by its author).
    case posted(GroupPost, replaced: Bool)
    /// A post removed (no event: the groups API has none).
    case unposted(group: String, pid: String)
    /// Users gone offline in groups (a closed connection or a dead node).
    case wentOffline([MemberPresence])
    /// Refused by the state (not the author, no such post).
    case refused(PresenceRefusal)
}

/// Why the state refused an operation.
public enum PresenceRefusal: Sendable, Hashable {
    case notAuthor(group: String, pid: String)
    case noSuchPost(group: String, pid: String)
    /// A new post would take the group or its author over a bound of ``PostBounds`` (nothing is evicted).
    case tooManyPosts(group: String, bound: PostBound)
    /// A join would make the user a member of more groups than ``PostBounds/groupsPerUser``
    /// (`max-groups-per-user`; the value is the bound). Rejoining a group one is in is never refused.
    case tooManyGroups(group: String, bound: Int)

    /// A sentence for the error event.
    public var message: String {
        switch self {
        case .notAuthor(let g, let p): "post \(p) in group \(g) belongs to another user"
        case .noSuchPost(let g, let p): "no post \(p) in group \(g)"
        case .tooManyPosts(let g, .perUserPerGroup(let n)):
            "you keep \(n) posts in group \(g), the most one user may (max-posts-per-user-per-group): "
                + "unpost or replace one of yours first"
        case .tooManyPosts(let g, .perGroup(let n)):
            "group \(g) keeps \(n) posts, the most one group may (max-posts-per-group): its posts must be unposted first"
        case .tooManyPosts(let g, .perUser(let n)):
            "you keep \(n) posts in all groups, the most one user may (max-posts-per-user): "
                + "unpost or replace one of yours first (not posted to group \(g))"
        case .tooManyGroups(let g, let n):
            "you are a member of \(n) groups, the most one user may (max-groups-per-user): "
                + "leave one first (not joined to group \(g))"
        }
    }
}

/// Which bound of ``PostBounds`` refused a post, with its value.
public enum PostBound: Sendable, Hashable {
    /// Posts one user keeps in one group.
    case perUserPerGroup(Int)
    /// Posts one group keeps, all users together.
    case perGroup(Int)
    /// Posts one user keeps in all groups together (a group exists as soon as someone posts to it, so
    /// the bounds per group alone do not bound one user).
    case perUser(Int)

    /// The bound's name (the `modem-hub serve` option without its dashes).
    public var name: String {
        switch self {
        case .perUserPerGroup: "max-posts-per-user-per-group"
        case .perGroup: "max-posts-per-group"
        case .perUser: "max-posts-per-user"
        }
    }
}

/// Bounds on the posts kept (post flood, issue 32): a NEW post over either bound is refused, a post
/// replaced by its author is not counted again, and no kept post is ever evicted to make room.
/// `modem-hub serve --max-posts-per-user-per-group`, `--max-posts-per-group` and `--max-posts-per-user`.
public struct PostBounds: Sendable, Hashable {
    /// Default of ``perUserPerGroup``.
    public static let defaultPerUserPerGroup = 1_000
    /// Default of ``perGroup``.
    public static let defaultPerGroup = 10_000
    /// Default of ``perUser``: ten groups' worth of one user's posts (at most 16 KiB each: 160 MiB).
    public static let defaultPerUser = 10_000

    /// Posts one user may keep in one group.
    public var perUserPerGroup: Int
    /// Posts one group may keep.
    public var perGroup: Int
    /// Posts one user may keep in all groups together.
    public var perUser: Int
    /// Default of ``groupsPerUser``.
    public static let defaultGroupsPerUser = 1_000
    /// Groups one user may be a member of (member rows kept; a group exists as soon as someone joins
    /// it, so without it one account makes rows in any number of invented groups). A join over it is
    /// refused; rejoining a group one is in takes no new place; leaving frees one.
    /// `modem-hub serve --max-groups-per-user`.
    public var groupsPerUser: Int

    public init(perUserPerGroup: Int = defaultPerUserPerGroup, perGroup: Int = defaultPerGroup, perUser: Int = defaultPerUser,
                groupsPerUser: Int = defaultGroupsPerUser) {
        self.perUserPerGroup = perUserPerGroup
        self.perGroup = perGroup
        self.perUser = perUser
        self.groupsPerUser = groupsPerUser
    }

    /// The refusal of a join making the user a member of `group`, of which it is not one yet, when it
    /// is a member of `userGroups` groups; nil when it may join.
    public func joinRefusal(group: String, userGroups: Int) -> PresenceRefusal? {
        userGroups >= groupsPerUser ? .tooManyGroups(group: group, bound: groupsPerUser) : nil
    }

    /// The refusal of one more new post when the user keeps `userPosts` in the group, `groupPosts` are
    /// kept in the group and the user keeps `allUserPosts` in all groups; nil when it may be stored.
    /// The user's own bounds are named first.
    public func refusal(group: String, userPosts: Int, groupPosts: Int, allUserPosts: Int) -> PresenceRefusal? {
        if userPosts >= perUserPerGroup { return .tooManyPosts(group: group, bound: .perUserPerGroup(perUserPerGroup)) }
        if allUserPosts >= perUser { return .tooManyPosts(group: group, bound: .perUser(perUser)) }
        if groupPosts >= perGroup { return .tooManyPosts(group: group, bound: .perGroup(perGroup)) }
        return nil
    }
}

/// Bounds on the device ids a client-credentials token's socket is given (`hello` without a user id:
/// each device id is a new user, with the post bounds of a user of its own). A real app allocates one
/// per install, once, and says `hello` with it ever after; installs behind one NAT share an address.
/// `modem-hub serve --devices-per-address-per-hour` and `--max-devices-per-client`.
public struct DeviceBounds: Sendable, Hashable {
    /// Default of ``perAddressPerHour``.
    public static let defaultPerAddressPerHour = 100
    /// Default of ``perClient``.
    public static let defaultPerClient = 100_000
    /// The window of ``perAddressPerHour`` (ms).
    public static let windowMs: Int64 = 3_600_000

    /// New device ids one client address may be given in any hour (all clients together).
    public var perAddressPerHour: Int
    /// Device ids one OAuth client may have in all (they are kept; a new one over it is refused).
    public var perClient: Int

    public init(perAddressPerHour: Int = defaultPerAddressPerHour, perClient: Int = defaultPerClient) {
        self.perAddressPerHour = perAddressPerHour
        self.perClient = perClient
    }

    /// The bound refusing one more device id when the address was given `fromAddressThisHour` in the
    /// last hour and the client has `ofClient`; nil when it may be given.
    public func refusal(fromAddressThisHour: Int, ofClient: Int) -> DeviceBound? {
        if fromAddressThisHour >= perAddressPerHour { return .perAddressPerHour(perAddressPerHour) }
        if ofClient >= perClient { return .perClient(perClient) }
        return nil
    }
}

/// Which bound of ``DeviceBounds`` refused a device id, with its value.
public enum DeviceBound: Sendable, Hashable {
    case perAddressPerHour(Int)
    case perClient(Int)

    /// The bound's name (the `modem-hub serve` option without its dashes).
    public var name: String {
        switch self {
        case .perAddressPerHour: "devices-per-address-per-hour"
        case .perClient: "max-devices-per-client"
        }
    }

    /// A sentence for the error event and the close reason (under 123 bytes).
    public var message: String {
        switch self {
        case .perAddressPerHour(let n): "this address was given \(n) new user ids this hour (devices-per-address-per-hour)"
        case .perClient(let n): "this client has \(n) user ids, the most it may (max-devices-per-client)"
        }
    }
}

/// What a request for a new device id got.
public enum DeviceAllocation: Sendable, Hashable {
    /// The new device id.
    case allocated(String)
    /// Refused by a bound; nothing was stored.
    case refused(DeviceBound)
}

/// What a driver must do.
public enum PresenceAction: Sendable, Hashable {
    /// Start delivering the group's events to the connection.
    case subscribe(ConnectionID, group: String)
    /// Stop delivering the group's events to the connection.
    case unsubscribe(ConnectionID, group: String)
    /// Send one event to one connection (the snapshot).
    case send(ConnectionID, GroupEvent)
    /// Send an event to every subscriber of its group on every node, except `excluding`.
    case publish(GroupEvent, excluding: ConnectionID?)
    /// Tell one connection its message was refused.
    case error(ConnectionID, ClientOpError)
}

/// Turns outcomes into actions; the one place that decides who hears what.
public enum PresenceRules {
    /// Actions for `outcome`, caused by `conn` (nil for a sweep or REST call with no socket).
    public static func actions(for outcome: PresenceOutcome, by conn: ConnectionID?, op: String) -> [PresenceAction] {
        switch outcome {
        case .joined(let group, let snapshot, let cameOnline):
            // Subscribe first so nothing published meanwhile is missed; the joiner learns its own
            // presence from the snapshot, everyone else from the one online event.
            var out: [PresenceAction] = []
            if let conn { out.append(.subscribe(conn, group: group)) }
            if let cameOnline { out.append(.publish(.user(cameOnline), excluding: conn)) }
            if let conn { out += snapshot.events.map { .send(conn, $0) } }
            return out
        case .listened(let group, let snapshot):
            guard let conn else { return [] }
            return [.subscribe(conn, group: group)] + snapshot.events.map { .send(conn, $0) }
        case .left(let group, let wentOffline):
            var out: [PresenceAction] = []
            if let conn { out.append(.unsubscribe(conn, group: group)) }
            if let wentOffline { out.append(.publish(.user(wentOffline), excluding: conn)) }
            return out
        case .updated(let presences):
            return presences.map { .publish(.user($0), excluding: nil) }
        case .posted(let post, _):
            return [.publish(.post(post), excluding: nil)]
        case .unposted:
            return []
        case .wentOffline(let presences):
            return presences.map { .publish(.user($0), excluding: nil) }
        case .refused(let why):
            guard let conn else { return [] }
            return [.error(conn, ClientOpError(op: op, message: why.message, fatal: false))]
        }
    }
}

/// Who subscribes to which group: a node's local fan-out table, and the tests' whole world.
public struct PresenceRouter: Sendable {
    private(set) var subscribers: [String: Set<ConnectionID>] = [:]
    private var groupsOf: [ConnectionID: Set<String>] = [:]

    public init() {}

    /// Applies subscribe/unsubscribe actions; returns the deliveries (connection, event) the other
    /// actions cause among this router's subscribers, in order.
    public mutating func route(_ actions: [PresenceAction]) -> [(ConnectionID, GroupEvent)] {
        var out: [(ConnectionID, GroupEvent)] = []
        for action in actions {
            switch action {
            case .subscribe(let c, let g): subscribe(c, to: g)
            case .unsubscribe(let c, let g): unsubscribe(c, from: g)
            case .send(let c, let e): out.append((c, e))
            case .publish(let e, let excluding):
                out += recipients(of: e.group, excluding: excluding).map { ($0, e) }
            case .error: break
            }
        }
        return out
    }

    /// Adds a subscription.
    public mutating func subscribe(_ conn: ConnectionID, to group: String) {
        subscribers[group, default: []].insert(conn)
        groupsOf[conn, default: []].insert(group)
    }

    /// Removes a subscription.
    public mutating func unsubscribe(_ conn: ConnectionID, from group: String) {
        subscribers[group]?.remove(conn)
        if subscribers[group]?.isEmpty == true { subscribers[group] = nil }
        groupsOf[conn]?.remove(group)
    }

    /// Removes every subscription of a connection.
    public mutating func remove(_ conn: ConnectionID) {
        for g in groupsOf.removeValue(forKey: conn) ?? [] {
            subscribers[g]?.remove(conn)
            if subscribers[g]?.isEmpty == true { subscribers[g] = nil }
        }
    }

    /// The group's subscribers, sorted, without `excluding`.
    public func recipients(of group: String, excluding: ConnectionID? = nil) -> [ConnectionID] {
        (subscribers[group] ?? []).filter { $0 != excluding }.sorted()
    }

    /// Groups with at least one subscriber.
    public var groups: [String] { Array(subscribers.keys) }
}
