// Groups with presence (the groups API, Lompang's) as a pure value: the in-memory reference of what every store does.

/// Groups state in memory: membership with last-seen times, live connections per (group, user),
/// userloads and kept posts. Each operation returns its `PresenceOutcome`; the SQL stores implement
/// the same operations in transactions and are tested against this one.
public struct PresenceState: Sendable {
    struct Member: Sendable { var lastSeen: Int64 }
    struct Connection: Sendable { var user: String; var node: String; var joined: Set<String> = [] }

    private var members: [String: [String: Member]] = [:]
    private var live: [String: [String: Set<ConnectionID>]] = [:]
    private var connections: [ConnectionID: Connection] = [:]
    private var userloads: [String: JSONObjectText] = [:]
    private var posts: [String: [String: GroupPost]] = [:]
    /// Bounds on the posts kept (new posts over them are refused).
    public var postBounds: PostBounds

    public init(postBounds: PostBounds = PostBounds()) { self.postBounds = postBounds }

    /// Registers a live connection of `user` on `node` (after its hello).
    public mutating func connect(_ conn: ConnectionID, user: String, node: String) {
        connections[conn] = Connection(user: user, node: node)
    }

    /// The user of a live connection.
    public func user(of conn: ConnectionID) -> String? { connections[conn]?.user }

    /// Joins `group` on `conn`: membership (kept after the connection ends) and presence. A join that
    /// would make the user a member of more groups than ``PostBounds/groupsPerUser`` is refused.
    public mutating func join(_ conn: ConnectionID, group: String, now: Int64) -> PresenceOutcome {
        guard var c = connections[conn] else { return .listened(group: group, snapshot: snapshot(group)) }
        if members[group]?[c.user] == nil {
            let mine = members.values.reduce(0) { n, m in m[c.user] != nil ? n + 1 : n }
            if let why = postBounds.joinRefusal(group: group, userGroups: mine) { return .refused(why) }
        }
        let wasOnline = !(live[group]?[c.user]?.isEmpty ?? true)
        if members[group]?[c.user] == nil { members[group, default: [:]][c.user] = Member(lastSeen: now) }
        live[group, default: [:]][c.user, default: []].insert(conn)
        c.joined.insert(group)
        connections[conn] = c
        let online = wasOnline ? nil : presence(group, c.user)
        return .joined(group: group, snapshot: snapshot(group), cameOnline: online)
    }

    /// Listens to `group`: the snapshot, no membership, no presence.
    public func listen(group: String) -> PresenceOutcome {
        .listened(group: group, snapshot: snapshot(group))
    }

    /// Leaves `group` on `conn`. The membership ends when the user has no other connection joined.
    public mutating func leave(_ conn: ConnectionID, group: String, now: Int64) -> PresenceOutcome {
        guard var c = connections[conn] else { return .left(group: group, wentOffline: nil) }
        let wasJoined = c.joined.remove(group) != nil
        connections[conn] = c
        live[group]?[c.user]?.remove(conn)
        guard live[group]?[c.user]?.isEmpty ?? true else { return .left(group: group, wentOffline: nil) }
        live[group]?[c.user] = nil
        guard members[group]?.removeValue(forKey: c.user) != nil, wasJoined else {
            return .left(group: group, wentOffline: nil)
        }
        return .left(group: group, wentOffline: MemberPresence(group: group, user: c.user, timestamp: now, userload: load(c.user)))
    }

    /// Sets the user's userload; one presence per group the user is a member of.
    public mutating func update(user: String, userload: JSONObjectText) -> PresenceOutcome {
        userloads[user] = userload
        let groups = members.compactMap { g, m in m[user] != nil ? g : nil }.sorted()
        return .updated(groups.map { presence($0, user) })
    }

    /// Stores a post; only its author may replace it, and a new one over ``postBounds`` is refused.
    public mutating func post(_ post: GroupPost) -> PresenceOutcome {
        if let old = posts[post.group]?[post.pid], old.user != post.user {
            return .refused(.notAuthor(group: post.group, pid: post.pid))
        }
        let replaced = posts[post.group]?[post.pid] != nil
        if !replaced {
            let kept = posts[post.group] ?? [:]
            let all = posts.values.reduce(0) { n, g in n + g.values.filter { $0.user == post.user }.count }
            if let why = postBounds.refusal(group: post.group, userPosts: kept.values.filter { $0.user == post.user }.count,
                                            groupPosts: kept.count, allUserPosts: all) {
                return .refused(why)
            }
        }
        posts[post.group, default: [:]][post.pid] = post
        return .posted(post, replaced: replaced)
    }

    /// Removes a post; only its author may.
    public mutating func unpost(group: String, pid: String, user: String) -> PresenceOutcome {
        guard let old = posts[group]?[pid] else { return .refused(.noSuchPost(group: group, pid: pid)) }
        guard old.user == user else { return .refused(.notAuthor(group: group, pid: pid)) }
        posts[group]?[pid] = nil
        return .unposted(group: group, pid: pid)
    }

    /// A connection ended: the user goes offline (last seen `now`) in each group where no other
    /// connection of theirs remains.
    public mutating func close(_ conn: ConnectionID, now: Int64) -> PresenceOutcome {
        guard let c = connections.removeValue(forKey: conn) else { return .wentOffline([]) }
        var gone: [MemberPresence] = []
        for group in c.joined.sorted() {
            live[group]?[c.user]?.remove(conn)
            guard live[group]?[c.user]?.isEmpty ?? true else { continue }
            live[group]?[c.user] = nil
            guard members[group]?[c.user] != nil else { continue }
            members[group]?[c.user]?.lastSeen = now
            gone.append(MemberPresence(group: group, user: c.user, timestamp: now, userload: load(c.user)))
        }
        return .wentOffline(gone)
    }

    /// A node died: its connections close with `lastSeen` (its last heartbeat).
    public mutating func nodeDied(_ node: String, lastSeen: Int64) -> PresenceOutcome {
        var gone: [MemberPresence] = []
        for conn in connections.keys.sorted() where connections[conn]?.node == node {
            if case .wentOffline(let g) = close(conn, now: lastSeen) { gone += g }
        }
        return .wentOffline(gone.sorted { ($0.group, $0.user) < ($1.group, $1.user) })
    }

    /// Every member of the group (online 0, else last seen) and every kept post.
    public func snapshot(_ group: String) -> GroupSnapshot {
        GroupSnapshot(
            members: (members[group] ?? [:]).keys.sorted().map { presence(group, $0) },
            posts: (posts[group] ?? [:]).values.sorted { ($0.timestamp, $0.pid) < ($1.timestamp, $1.pid) }
        )
    }

    private func presence(_ group: String, _ user: String) -> MemberPresence {
        let online = !(live[group]?[user]?.isEmpty ?? true)
        let ts = online ? 0 : members[group]?[user]?.lastSeen ?? 0
        return MemberPresence(group: group, user: user, timestamp: ts, userload: load(user))
    }

    private func load(_ user: String) -> JSONObjectText { userloads[user] ?? .empty }
}

/// What happens to the groups state: a connection appears, a client sends an op, a connection ends,
/// a node dies.
public enum PresenceInput: Sendable, Hashable {
    case connected(ConnectionID, user: String, node: String)
    case op(ConnectionID, ClientOp)
    case closed(ConnectionID)
    case nodeDied(String, lastSeen: Int64)
}

/// Groups with presence (the groups API) as a state machine: inputs with the time in, actions out.
public struct PresenceMachine: Sendable {
    /// The state the machine keeps.
    public private(set) var state = PresenceState()

    public init() {}

    /// Feeds one input at `now` (Unix ms) and returns what to send.
    public mutating func input(_ input: PresenceInput, now: Int64) -> [PresenceAction] {
        switch input {
        case .connected(let conn, let user, let node):
            state.connect(conn, user: user, node: node)
            return []
        case .closed(let conn):
            return PresenceRules.actions(for: state.close(conn, now: now), by: conn, op: "close")
        case .nodeDied(let node, let lastSeen):
            return PresenceRules.actions(for: state.nodeDied(node, lastSeen: lastSeen), by: nil, op: "sweep")
        case .op(let conn, let op):
            guard let user = state.user(of: conn) else {
                return [.error(conn, ClientOpError(op: op.name, message: "say hello first", fatal: false))]
            }
            let outcome: PresenceOutcome
            switch op {
            case .hello:
                return [.error(conn, ClientOpError(op: "hello", message: "hello was already said", fatal: false))]
            case .join(let g): outcome = state.join(conn, group: g, now: now)
            case .listen(let g): outcome = state.listen(group: g)
            case .leave(let g): outcome = state.leave(conn, group: g, now: now)
            case .post(let g, let pid, let load):
                outcome = state.post(GroupPost(group: g, pid: pid, user: user, pidload: load, timestamp: now))
            case .unpost(let g, let pid): outcome = state.unpost(group: g, pid: pid, user: user)
            case .update(let load): outcome = state.update(user: user, userload: load)
            }
            return PresenceRules.actions(for: outcome, by: conn, op: op.name)
        }
    }
}
