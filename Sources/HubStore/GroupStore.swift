// Groups, presence, posts, userloads, node heartbeats and device ids in SQL (SQLite or PostgreSQL).
// Every operation is one transaction returning the same `PresenceOutcome` as HubCore's in-memory
// `PresenceState`; presence is counted under the (group, user) membership row's lock, so one user
// joining or leaving from several nodes at once still yields one online and one offline event.

import HubCore
import ModemRuntime

/// Where the groups state lives.
public protocol GroupStore: Sendable {
    /// `true` when several nodes may share the store (PostgreSQL).
    var isShared: Bool { get }
    func join(conn: ConnectionID, instance: String, group: String, user: String, now: Int64) async throws -> PresenceOutcome
    func listen(group: String) async throws -> PresenceOutcome
    func leave(conn: ConnectionID, group: String, user: String, now: Int64) async throws -> PresenceOutcome
    func update(user: String, userload: JSONObjectText, now: Int64) async throws -> PresenceOutcome
    func post(_ post: GroupPost) async throws -> PresenceOutcome
    func unpost(group: String, pid: String, user: String) async throws -> PresenceOutcome
    func close(conn: ConnectionID, now: Int64) async throws -> PresenceOutcome
    /// A page of members by user id, and whether more follow.
    func members(group: String, limit: Int, skip: Int) async throws -> (items: [MemberPresence], more: Bool)
    /// A page of posts by time and pid, and whether more follow.
    func posts(group: String, limit: Int, skip: Int) async throws -> (items: [GroupPost], more: Bool)
    func post(group: String, pid: String) async throws -> GroupPost?
    /// Members by user id after `after` (nil: from the first), at most `limit`: a join's history,
    /// read a page at a time as the socket drains (keyset paging: members coming and going between
    /// pages never shift a page).
    func members(group: String, after: String?, limit: Int) async throws -> [MemberPresence]
    /// Posts by time and pid after `after` (nil: from the first), at most `limit` (keyset paging).
    func posts(group: String, after: PostCursor?, limit: Int) async throws -> [GroupPost]
    /// Records that `instance` (a node process called `name`) is alive at `now`; false when its node
    /// row was not there (its first beat, or another node took it for dead and swept it).
    @discardableResult
    func heartbeat(instance: String, name: String, now: Int64) async throws -> Bool
    /// Marks offline the users of instances whose heartbeat is older than `staleBefore` (and of every
    /// other instance called `sameName`, at start), with their last heartbeat as last seen.
    func sweep(me instance: String, staleBefore: Int64, sameName: String?, now: Int64) async throws -> PresenceOutcome
    /// Other instances of the node called `name` and their last heartbeats (a start-up check: a live
    /// one is another process using the same name).
    func nodeBeats(name: String, except instance: String) async throws -> [(instance: String, heartbeatMs: Int64)]
    /// A clean stop: this instance's users go offline now and its node row goes.
    func removeNode(instance: String, now: Int64) async throws -> PresenceOutcome
    /// A new device id for a client token's socket said `hello` from `address`, or the bound of
    /// ``DeviceBounds`` that refuses it (nothing is stored then).
    func allocateDevice(clientID: String, address: String, now: Int64) async throws -> DeviceAllocation
    /// The OAuth client a device id was allocated to.
    func deviceClient(_ device: String) async throws -> String?
}

/// Where a page of posts ends: the last post's time and pid (posts are ordered by both).
public struct PostCursor: Sendable, Hashable {
    public var timestamp: Int64
    public var pid: String

    public init(timestamp: Int64, pid: String) {
        self.timestamp = timestamp
        self.pid = pid
    }

    /// The cursor after `post`.
    public init(after post: GroupPost) { self.init(timestamp: post.timestamp, pid: post.pid) }
}

/// Carries a transaction's presence events to every node in commit order: called inside the
/// transaction that changed the presence, after its row locks (PostgreSQL: NOTIFY there, delivered
/// at commit, in commit order, to every listening node, the origin included). Each event goes to
/// its group's subscribers except `excluding`.
public typealias PresenceNotifier = @Sendable (_ tx: any SQLExecutor, _ events: [(presence: MemberPresence, excluding: ConnectionID?)]) async throws -> Void

/// The groups store over the hub's SQL database (tables from `HubSchema`).
public struct SQLGroupStore: GroupStore {
    public let db: any SQLDatabase
    /// Several nodes: presence events leave inside their transaction (nil: the caller publishes them).
    public let notifier: PresenceNotifier?
    public var isShared: Bool { db.dialect == .postgres }
    /// Bounds on the posts kept: a new post over one is refused (`.refused(.tooManyPosts)`).
    public var postBounds: PostBounds
    /// Whether `join` and `listen` return the group's members and posts in their snapshot (the pure
    /// machine's outcome). The hub sets it false and reads them a page at a time as each socket drains
    /// (``members(group:after:limit:)``, ``posts(group:after:limit:)``): a join then holds no group
    /// in memory, however many posts it keeps.
    public var snapshotOnJoin: Bool
    /// Bounds on new device ids (`allocateDevice` refuses over one).
    public var deviceBounds: DeviceBounds

    /// Wraps a migrated database.
    public init(db: any SQLDatabase, notifier: PresenceNotifier? = nil, postBounds: PostBounds = PostBounds(), snapshotOnJoin: Bool = true,
                deviceBounds: DeviceBounds = DeviceBounds()) {
        self.db = db
        self.notifier = notifier
        self.postBounds = postBounds
        self.deviceBounds = deviceBounds
        self.snapshotOnJoin = snapshotOnJoin
    }

    /// Hands presence events to the notifier inside the transaction (several nodes).
    private func notify(_ tx: any SQLExecutor, _ events: [MemberPresence], excluding: ConnectionID? = nil) async throws {
        guard let notifier, !events.isEmpty else { return }
        try await notifier(tx, events.map { ($0, excluding) })
    }

    /// Creates the groups tables when missing (PostgreSQL: under an advisory lock, so nodes starting
    /// together do not race).
    public func prepare() async throws {
        let shared = isShared
        if shared {
            // Every table and index there already (a node restarting beside running ones): no DDL, whose
            // locks (even CREATE INDEX IF NOT EXISTS takes one on its table) deadlocked with joins.
            let names = GroupSchema.relations.map { "'\($0)'" }.joined(separator: ", ")
            let rows = try await db.query(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    + "WHERE n.nspname = current_schema() AND c.relname IN (\(names))", [])
            let function = try await db.query(
                "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                    + "WHERE n.nspname = current_schema() AND p.proname = $1", [.text(GroupSchema.postFunctionName)])
            if rows.first?.int(0) == Int64(GroupSchema.relations.count), function.first?.int(0) == 1 { return }
        }
        try await db.transaction { tx in
            if shared { try await tx.query("SELECT pg_advisory_xact_lock(736110012)", []) }
            for s in GroupSchema.statements { try await tx.query(s, []) }
            if shared { try await tx.query(GroupSchema.postFunction, []) }
        }
    }

    /// One transaction, retried (up to 3 times) when PostgreSQL picks it as a deadlock victim.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        try await retryingConflicts { try await db.transaction(body) }
    }

    /// `body` (a transaction, or one statement that is its own), run again (up to 3 times) when
    /// PostgreSQL picks it as a deadlock victim: nothing of it was kept.
    func retryingConflicts<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch StoreError.transactionConflict where attempt < 3 {
                attempt += 1
            }
        }
    }

    public func join(conn: ConnectionID, instance: String, group: String, user: String, now: Int64) async throws -> PresenceOutcome {
        let shared = isShared, bounds = postBounds
        return try await transaction { tx in
            // The groups one user is a member of (max-groups-per-user) are counted and a new member row
            // inserted one transaction at a time per user: PostgreSQL, a lock on the user (its own key, beside the posts'
            // lock on their author) until commit; SQLite, its single writer. Rejoining takes no new place.
            if shared { try await tx.run("SELECT pg_advisory_xact_lock(736110017, hashtext($1))", [.text(user)]) }
            let already = try await tx.rows("SELECT 1 FROM members WHERE grp = $1 AND user_id = $2", [.text(group), .text(user)])
            if already.isEmpty {
                let mine = try await tx.rows("SELECT count(*) FROM members WHERE user_id = $1", [.text(user)])
                if let why = bounds.joinRefusal(group: group, userGroups: Int(mine.first?.int(0) ?? 0)) { return .refused(why) }
            }
            try await tx.run(
                "INSERT INTO members(grp, user_id, last_seen_ms, joined_ms) VALUES ($1, $2, $3, $3) "
                    + "ON CONFLICT (grp, user_id) DO UPDATE SET joined_ms = members.joined_ms",
                [.text(group), .text(user), .int(now)])
            let before = try await tx.rows("SELECT count(*) FROM presence WHERE grp = $1 AND user_id = $2", [.text(group), .text(user)])
            try await tx.run(
                "INSERT INTO presence(conn, grp, user_id, instance) VALUES ($1, $2, $3, $4) ON CONFLICT (conn, grp) DO NOTHING",
                [.text(conn), .text(group), .text(user), .text(instance)])
            var online: MemberPresence?
            if before.first?.int(0) == 0 {
                online = try await tx.rows(memberSelect + " AND m.user_id = $2", [.text(group), .text(user)]).first.map { member(group, $0) }
            }
            let snap = try await snapshot(tx, group)
            try await notify(tx, online.map { [$0] } ?? [], excluding: conn)
            return .joined(group: group, snapshot: snap, cameOnline: online)
        }
    }

    public func listen(group: String) async throws -> PresenceOutcome {
        try await transaction { tx in .listened(group: group, snapshot: try await snapshot(tx, group)) }
    }

    public func leave(conn: ConnectionID, group: String, user: String, now: Int64) async throws -> PresenceOutcome {
        try await transaction { tx in
            let member = try await lockMember(tx, group, user)
            let deleted = try await tx.rows("DELETE FROM presence WHERE conn = $1 AND grp = $2 RETURNING conn", [.text(conn), .text(group)])
            let left = try await tx.rows("SELECT count(*) FROM presence WHERE grp = $1 AND user_id = $2", [.text(group), .text(user)])
            guard left.first?.int(0) == 0, member else { return .left(group: group, wentOffline: nil) }
            try await tx.run("DELETE FROM members WHERE grp = $1 AND user_id = $2", [.text(group), .text(user)])
            guard !deleted.isEmpty else { return .left(group: group, wentOffline: nil) }
            let offline = MemberPresence(group: group, user: user, timestamp: now, userload: try await userload(tx, user))
            try await notify(tx, [offline], excluding: conn)
            return .left(group: group, wentOffline: offline)
        }
    }

    public func update(user: String, userload: JSONObjectText, now: Int64) async throws -> PresenceOutcome {
        try await transaction { tx in
            try await tx.run(
                "INSERT INTO userloads(user_id, body, updated_ms) VALUES ($1, $2, $3) "
                    + "ON CONFLICT (user_id) DO UPDATE SET body = excluded.body, updated_ms = excluded.updated_ms",
                [.text(user), .text(userload.text), .int(now)])
            let rows = try await tx.rows(
                "SELECT m.grp, m.last_seen_ms, " + onlineColumn + " FROM members m WHERE m.user_id = $1 ORDER BY m.grp",
                [.text(user)])
            let presences = rows.map {
                MemberPresence(group: $0.text(0) ?? "", user: user, timestamp: $0.int(2) == 1 ? 0 : $0.int(1), userload: userload)
            }
            try await notify(tx, presences)
            return .updated(presences)
        }
    }

    public func post(_ post: GroupPost) async throws -> PresenceOutcome {
        let bounds = postBounds
        if isShared {
            // PostgreSQL: one round trip (``GroupSchema/postFunction``), not a transaction of eight:
            // at a thousand posts a second across nodes the round trips were most of the database's work.
            let row = try await retryingConflicts {
                try await db.query(
                    "SELECT outcome, author, group_posts, user_group_posts, user_posts FROM \(GroupSchema.postFunctionName)($1, $2, $3, $4, $5, $6, $7, $8)",
                    [.text(post.group), .text(post.pid), .text(post.user), .text(post.pidload.text), .int(post.timestamp),
                     .int(Int64(bounds.perUserPerGroup)), .int(Int64(bounds.perUser)), .int(Int64(bounds.perGroup))]).first
            }
            guard let row else { throw StoreError.engine("\(GroupSchema.postFunctionName) returned no row") }
            switch row.int(0) {
            case 0: return .posted(post, replaced: false)
            case 1: return .posted(post, replaced: true)
            case 2: return .refused(.notAuthor(group: post.group, pid: post.pid))
            default:
                let why = bounds.refusal(group: post.group, userPosts: Int(row.int(3) ?? 0), groupPosts: Int(row.int(2) ?? 0),
                                         allUserPosts: Int(row.int(4) ?? 0))
                return .refused(why ?? .tooManyPosts(group: post.group, bound: .perGroup(bounds.perGroup)))
            }
        }
        return try await transaction { tx in
            // SQLite: its single writer (BEGIN IMMEDIATE) counts and stores the posts of every group one
            // transaction at a time, so two posts never both take a group's last place.
            let old = try await tx.rows("SELECT user_id FROM posts WHERE grp = $1 AND pid = $2", [.text(post.group), .text(post.pid)])
            if let author = old.first?.text(0) {
                // A replacement by its author takes no new place.
                guard author == post.user else { return .refused(.notAuthor(group: post.group, pid: post.pid)) }
                try await tx.run("UPDATE posts SET body = $4, created_ms = $5 WHERE grp = $1 AND pid = $2 AND user_id = $3",
                                 [.text(post.group), .text(post.pid), .text(post.user), .text(post.pidload.text), .int(post.timestamp)])
                return .posted(post, replaced: true)
            }
            let counts = try await tx.rows(
                "SELECT count(*), CAST(COALESCE(SUM(CASE WHEN user_id = $2 THEN 1 ELSE 0 END), 0) AS BIGINT) FROM posts WHERE grp = $1",
                [.text(post.group), .text(post.user)])
            let mine = try await tx.rows("SELECT count(*) FROM posts WHERE user_id = $1", [.text(post.user)])
            if let why = bounds.refusal(group: post.group, userPosts: Int(counts.first?.int(1) ?? 0), groupPosts: Int(counts.first?.int(0) ?? 0),
                                        allUserPosts: Int(mine.first?.int(0) ?? 0)) {
                return .refused(why)
            }
            try await tx.run("INSERT INTO posts(grp, pid, user_id, body, created_ms) VALUES ($1, $2, $3, $4, $5)",
                             [.text(post.group), .text(post.pid), .text(post.user), .text(post.pidload.text), .int(post.timestamp)])
            return .posted(post, replaced: false)
        }
    }

    public func unpost(group: String, pid: String, user: String) async throws -> PresenceOutcome {
        try await transaction { tx in
            let gone = try await tx.rows(
                "DELETE FROM posts WHERE grp = $1 AND pid = $2 AND user_id = $3 RETURNING pid", [.text(group), .text(pid), .text(user)])
            if !gone.isEmpty { return .unposted(group: group, pid: pid) }
            let other = try await tx.rows("SELECT user_id FROM posts WHERE grp = $1 AND pid = $2", [.text(group), .text(pid)])
            return .refused(other.isEmpty ? .noSuchPost(group: group, pid: pid) : .notAuthor(group: group, pid: pid))
        }
    }

    public func close(conn: ConnectionID, now: Int64) async throws -> PresenceOutcome {
        try await transaction { tx in
            let rows = try await tx.rows("SELECT grp, user_id FROM presence WHERE conn = $1 ORDER BY grp", [.text(conn)])
            var gone: [MemberPresence] = []
            for r in rows {
                if let p = try await dropPresence(tx, conn: conn, group: r.text(0) ?? "", user: r.text(1) ?? "", lastSeen: now) { gone.append(p) }
            }
            try await notify(tx, gone)
            return .wentOffline(gone)
        }
    }

    public func members(group: String, limit: Int, skip: Int) async throws -> (items: [MemberPresence], more: Bool) {
        try await transaction { tx in
            let rows = try await tx.rows(memberSelect + " ORDER BY m.user_id LIMIT $2 OFFSET $3", [.text(group), .int(Int64(limit + 1)), .int(Int64(skip))])
            let items = rows.prefix(limit).map { member(group, $0) }
            return (Array(items), rows.count > limit)
        }
    }

    public func posts(group: String, limit: Int, skip: Int) async throws -> (items: [GroupPost], more: Bool) {
        try await transaction { tx in
            let rows = try await tx.rows(postSelect + " ORDER BY created_ms, pid LIMIT $2 OFFSET $3", [.text(group), .int(Int64(limit + 1)), .int(Int64(skip))])
            return (rows.prefix(limit).map { post(group, $0) }, rows.count > limit)
        }
    }

    public func members(group: String, after: String?, limit: Int) async throws -> [MemberPresence] {
        let rows: [SQLRow]
        if let after {
            rows = try await db.query(memberSelect + " AND m.user_id > $2 ORDER BY m.user_id LIMIT $3", [.text(group), .text(after), .int(Int64(limit))])
        } else {
            rows = try await db.query(memberSelect + " ORDER BY m.user_id LIMIT $2", [.text(group), .int(Int64(limit))])
        }
        return rows.map { member(group, $0) }
    }

    public func posts(group: String, after: PostCursor?, limit: Int) async throws -> [GroupPost] {
        let rows: [SQLRow]
        if let after {
            rows = try await db.query(
                postSelect + " AND (created_ms > $2 OR (created_ms = $2 AND pid > $3)) ORDER BY created_ms, pid LIMIT $4",
                [.text(group), .int(after.timestamp), .text(after.pid), .int(Int64(limit))])
        } else {
            rows = try await db.query(postSelect + " ORDER BY created_ms, pid LIMIT $2", [.text(group), .int(Int64(limit))])
        }
        return rows.map { post(group, $0) }
    }

    public func post(group: String, pid: String) async throws -> GroupPost? {
        try await transaction { tx in
            try await tx.rows(postSelect + " AND pid = $2", [.text(group), .text(pid)]).first.map { post(group, $0) }
        }
    }

    @discardableResult
    public func heartbeat(instance: String, name: String, now: Int64) async throws -> Bool {
        try await transaction { tx in
            let beat = try await tx.rows("UPDATE nodes SET heartbeat_ms = $2 WHERE instance = $1 RETURNING instance", [.text(instance), .int(now)])
            if !beat.isEmpty { return true }
            try await tx.run(
                "INSERT INTO nodes(instance, name, started_ms, heartbeat_ms) VALUES ($1, $2, $3, $3) "
                    + "ON CONFLICT (instance) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms",
                [.text(instance), .text(name), .int(now)])
            return false
        }
    }

    public func nodeBeats(name: String, except instance: String) async throws -> [(instance: String, heartbeatMs: Int64)] {
        try await db.query("SELECT instance, heartbeat_ms FROM nodes WHERE name = $1 AND instance <> $2 ORDER BY instance",
                           [.text(name), .text(instance)]).map { ($0.text(0) ?? "", $0.int(1)) }
    }

    public func sweep(me instance: String, staleBefore: Int64, sameName: String?, now: Int64) async throws -> PresenceOutcome {
        let shared = isShared
        return try await transaction { tx in
            if shared {
                let got = try await tx.rows("SELECT CAST(CASE WHEN pg_try_advisory_xact_lock(7011) THEN 1 ELSE 0 END AS BIGINT)", [])
                guard got.first?.int(0) == 1 else { return .wentOffline([]) }
            }
            var dead: [(String, Int64)] = try await tx.rows(
                "SELECT instance, heartbeat_ms FROM nodes WHERE instance <> $1 AND (heartbeat_ms < $2 OR name = $3) ORDER BY instance",
                [.text(instance), .int(staleBefore), .text(sameName ?? "\u{1}")]
            ).map { ($0.text(0) ?? "", $0.int(1)) }
            // Presence rows of instances with no node row at all (never heartbeated): gone now.
            let orphans = try await tx.rows(
                "SELECT DISTINCT instance FROM presence WHERE instance <> $1 AND instance NOT IN (SELECT instance FROM nodes)",
                [.text(instance)])
            dead += orphans.map { ($0.text(0) ?? "", now) }
            var gone: [MemberPresence] = []
            for (inst, lastSeen) in dead {
                gone += try await dropInstance(tx, inst, lastSeen: lastSeen)
            }
            try await notify(tx, gone)
            return .wentOffline(gone)
        }
    }

    public func removeNode(instance: String, now: Int64) async throws -> PresenceOutcome {
        try await transaction { tx in
            let gone = try await dropInstance(tx, instance, lastSeen: now)
            try await notify(tx, gone)
            return .wentOffline(gone)
        }
    }

    public func allocateDevice(clientID: String, address: String, now: Int64) async throws -> DeviceAllocation {
        let shared = isShared, bounds = deviceBounds
        var g = SystemRandomNumberGenerator()
        let id = "d_" + (0..<4).map { _ in Hex.digits(g.next() as UInt32, uppercase: false) }.joined()
        let hourAgo = now - DeviceBounds.windowMs
        return try await transaction { tx in
            // Counted and stored one allocation at a time per client and per address (PostgreSQL: locks
            // until commit, the client's first; SQLite: its single writer).
            if shared {
                try await tx.run("SELECT pg_advisory_xact_lock(736110015, hashtext($1))", [.text(clientID)])
                try await tx.run("SELECT pg_advisory_xact_lock(736110016, hashtext($1))", [.text(address)])
            }
            try await tx.run("DELETE FROM device_addresses WHERE created_ms <= $1", [.int(hourAgo)])
            let fromAddress = try await tx.rows("SELECT count(*) FROM device_addresses WHERE address = $1 AND created_ms > $2",
                                                [.text(address), .int(hourAgo)])
            let ofClient = try await tx.rows("SELECT count(*) FROM devices WHERE client_id = $1", [.text(clientID)])
            if let bound = bounds.refusal(fromAddressThisHour: Int(fromAddress.first?.int(0) ?? 0), ofClient: Int(ofClient.first?.int(0) ?? 0)) {
                return .refused(bound)
            }
            try await tx.run("INSERT INTO devices(id, client_id, created_ms) VALUES ($1, $2, $3)", [.text(id), .text(clientID), .int(now)])
            try await tx.run("INSERT INTO device_addresses(device, address, created_ms) VALUES ($1, $2, $3)", [.text(id), .text(address), .int(now)])
            return .allocated(id)
        }
    }

    public func deviceClient(_ device: String) async throws -> String? {
        try await transaction { tx in
            try await tx.rows("SELECT client_id FROM devices WHERE id = $1", [.text(device)]).first?.text(0)
        }
    }

    // MARK: - pieces

    private var onlineColumn: String {
        "CAST(CASE WHEN EXISTS (SELECT 1 FROM presence p WHERE p.grp = m.grp AND p.user_id = m.user_id) THEN 1 ELSE 0 END AS BIGINT)"
    }

    private var memberSelect: String {
        "SELECT m.user_id, m.last_seen_ms, " + onlineColumn + ", u.body FROM members m "
            + "LEFT JOIN userloads u ON u.user_id = m.user_id WHERE m.grp = $1"
    }

    private let postSelect = "SELECT pid, user_id, body, created_ms FROM posts WHERE grp = $1"

    private func member(_ group: String, _ r: SQLRow) -> MemberPresence {
        MemberPresence(
            group: group, user: r.text(0) ?? "", timestamp: r.int(2) == 1 ? 0 : r.int(1),
            userload: r.text(3).map(JSONObjectText.init(stored:)) ?? .empty)
    }

    private func post(_ group: String, _ r: SQLRow) -> GroupPost {
        GroupPost(group: group, pid: r.text(0) ?? "", user: r.text(1) ?? "", pidload: JSONObjectText(stored: r.text(2) ?? "{}"), timestamp: r.int(3))
    }

    private func snapshot(_ tx: any SQLExecutor, _ group: String) async throws -> GroupSnapshot {
        guard snapshotOnJoin else { return GroupSnapshot(members: [], posts: []) }
        let m = try await tx.rows(memberSelect + " ORDER BY m.user_id LIMIT 10000", [.text(group)])
        let p = try await tx.rows(postSelect + " ORDER BY created_ms, pid LIMIT 10000", [.text(group)])
        return GroupSnapshot(members: m.map { member(group, $0) }, posts: p.map { post(group, $0) })
    }

    private func userload(_ tx: any SQLExecutor, _ user: String) async throws -> JSONObjectText {
        try await tx.rows("SELECT body FROM userloads WHERE user_id = $1", [.text(user)]).first?.text(0).map(JSONObjectText.init(stored:)) ?? .empty
    }

    /// Locks the membership row (PostgreSQL row lock until commit); whether it exists.
    private func lockMember(_ tx: any SQLExecutor, _ group: String, _ user: String) async throws -> Bool {
        !(try await tx.rows(
            "UPDATE members SET joined_ms = joined_ms WHERE grp = $1 AND user_id = $2 RETURNING user_id", [.text(group), .text(user)]
        ).isEmpty)
    }

    /// Drops one presence row; the offline presence when it was the user's last in the group.
    private func dropPresence(_ tx: any SQLExecutor, conn: String, group: String, user: String, lastSeen: Int64) async throws -> MemberPresence? {
        let member = try await lockMember(tx, group, user)
        try await tx.run("DELETE FROM presence WHERE conn = $1 AND grp = $2", [.text(conn), .text(group)])
        let left = try await tx.rows("SELECT count(*) FROM presence WHERE grp = $1 AND user_id = $2", [.text(group), .text(user)])
        guard left.first?.int(0) == 0, member else { return nil }
        try await tx.run("UPDATE members SET last_seen_ms = $3 WHERE grp = $1 AND user_id = $2", [.text(group), .text(user), .int(lastSeen)])
        return MemberPresence(group: group, user: user, timestamp: lastSeen, userload: try await userload(tx, user))
    }

    /// Drops every presence of an instance in a fixed number of statements (a dead node may have
    /// thousands: one round trip per row kept a sweep transaction open for seconds under load).
    /// Same locking as `dropPresence`: the membership rows are locked first, and a user goes offline in
    /// a group only when no presence of another instance remains there.
    private func dropInstance(_ tx: any SQLExecutor, _ inst: String, lastSeen: Int64) async throws -> [MemberPresence] {
        let ofInstance = "EXISTS (SELECT 1 FROM presence p WHERE p.instance = $1 AND p.grp = members.grp AND p.user_id = members.user_id)"
        try await tx.run("UPDATE members SET joined_ms = joined_ms WHERE " + ofInstance, [.text(inst)])
        let offline = try await tx.rows(
            "UPDATE members SET last_seen_ms = $2 WHERE " + ofInstance
                + " AND NOT EXISTS (SELECT 1 FROM presence q WHERE q.instance <> $1 AND q.grp = members.grp AND q.user_id = members.user_id)"
                + " RETURNING grp, user_id",
            [.text(inst), .int(lastSeen)])
        var loads: [String: JSONObjectText] = [:]
        if !offline.isEmpty {
            for r in try await tx.rows(
                "SELECT user_id, body FROM userloads WHERE user_id IN (SELECT user_id FROM presence WHERE instance = $1)", [.text(inst)]) {
                loads[r.text(0) ?? ""] = r.text(1).map(JSONObjectText.init(stored:))
            }
        }
        try await tx.run("DELETE FROM presence WHERE instance = $1", [.text(inst)])
        try await tx.run("DELETE FROM nodes WHERE instance = $1", [.text(inst)])
        return offline.map { (group: $0.text(0) ?? "", user: $0.text(1) ?? "") }
            .sorted { ($0.group, $0.user) < ($1.group, $1.user) }
            .map { MemberPresence(group: $0.group, user: $0.user, timestamp: lastSeen, userload: loads[$0.user] ?? .empty) }
    }
}

extension SQLExecutor {
    func rows(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] { try await query(sql, binds) }
    func run(_ sql: String, _ binds: [SQLValue] = []) async throws { try await query(sql, binds) }
}

extension SQLRow {
    func int(_ i: Int) -> Int64 { self[i].int ?? 0 }
    func text(_ i: Int) -> String? { self[i].text }
}

/// Runs `body` with a groups store on the PostgreSQL database at `url` (migrated first).
public func withPostgresGroupStore<T: Sendable>(url: String, postBounds: PostBounds = PostBounds(),
                                                _ body: (SQLGroupStore) async throws -> T) async throws -> T {
    let db = try await PostgresEngine.open(url: url)
    do {
        try await HubSchema.migrate(db, nowMs: 0)
        let store = SQLGroupStore(db: db, postBounds: postBounds)
        try await store.prepare()
        let v = try await body(store)
        try? await db.close()
        return v
    } catch {
        try? await db.close()
        throw error
    }
}

/// A migrated SQLite groups store at `path` (":memory:" for tests).
public func openSQLiteGroupStore(path: String, postBounds: PostBounds = PostBounds()) async throws -> SQLGroupStore {
    let db = try await SQLiteEngine.open(path: path)
    try await HubSchema.migrate(db, nowMs: 0)
    let store = SQLGroupStore(db: db, postBounds: postBounds)
    try await store.prepare()
    return store
}

/// The groups tables (one text for SQLite and PostgreSQL; docs/hub-plan.md section 6).
public enum GroupSchema {
    /// The tables and indexes the statements create.
    public static let relations = [
        "nodes", "presence", "presence_grp_user", "presence_instance", "members", "members_user", "userloads", "posts",
        "posts_order", "posts_user", "posts_author", "devices", "devices_client", "device_addresses", "device_addresses_recent",
        "device_addresses_time", "group_events",
    ]

    public static let statements = [
        "CREATE TABLE IF NOT EXISTS nodes(instance TEXT PRIMARY KEY, name TEXT NOT NULL, started_ms BIGINT NOT NULL, heartbeat_ms BIGINT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS presence(conn TEXT NOT NULL, grp TEXT NOT NULL, user_id TEXT NOT NULL, instance TEXT NOT NULL, PRIMARY KEY (conn, grp))",
        "CREATE INDEX IF NOT EXISTS presence_grp_user ON presence(grp, user_id)",
        "CREATE INDEX IF NOT EXISTS presence_instance ON presence(instance)",
        "CREATE TABLE IF NOT EXISTS members(grp TEXT NOT NULL, user_id TEXT NOT NULL, last_seen_ms BIGINT NOT NULL, joined_ms BIGINT NOT NULL, PRIMARY KEY (grp, user_id))",
        "CREATE INDEX IF NOT EXISTS members_user ON members(user_id)",
        "CREATE TABLE IF NOT EXISTS userloads(user_id TEXT PRIMARY KEY, body TEXT NOT NULL, updated_ms BIGINT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS posts(grp TEXT NOT NULL, pid TEXT NOT NULL, user_id TEXT NOT NULL, body TEXT NOT NULL, created_ms BIGINT NOT NULL, PRIMARY KEY (grp, pid))",
        "CREATE INDEX IF NOT EXISTS posts_order ON posts(grp, created_ms, pid)",
        // Counting a user's posts in a group (the bound per user per group) without reading the group.
        "CREATE INDEX IF NOT EXISTS posts_user ON posts(grp, user_id)",
        // Counting a user's posts in all groups (the bound per user, max-posts-per-user).
        "CREATE INDEX IF NOT EXISTS posts_author ON posts(user_id)",
        "CREATE TABLE IF NOT EXISTS devices(id TEXT PRIMARY KEY, client_id TEXT NOT NULL, created_ms BIGINT NOT NULL)",
        // Counting a client's device ids (max-devices-per-client).
        "CREATE INDEX IF NOT EXISTS devices_client ON devices(client_id)",
        // Which address was given a device id when, for the last hour (devices-per-address-per-hour);
        // older rows are deleted as new ones come.
        "CREATE TABLE IF NOT EXISTS device_addresses(device TEXT PRIMARY KEY, address TEXT NOT NULL, created_ms BIGINT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS device_addresses_recent ON device_addresses(address, created_ms)",
        "CREATE INDEX IF NOT EXISTS device_addresses_time ON device_addresses(created_ms)",
        "CREATE TABLE IF NOT EXISTS group_events(id BIGINT PRIMARY KEY, body TEXT NOT NULL, origin TEXT NOT NULL, created_ms BIGINT NOT NULL)",
    ]

    /// PostgreSQL only: a post in one statement (``SQLGroupStore/post(_:)``). Under a lock on the author
    /// and then one on the group (every post takes them in that order: no deadlock), until the
    /// statement's transaction commits, so two posts from two nodes never both take a group's last
    /// place. A replacement by its author takes no new place. Returns one row: `outcome` 0 stored, 1
    /// replaced, 2 the pid is another user's (`author`), 3 over a bound (the counts it was refused on);
    /// the caller names the bound with `PostBounds.refusal`, which compares the same counts the same way.
    /// Its name carries a version: change the version whenever the text changes, so a database that has
    /// the old one gets the new one (``SQLGroupStore/prepare()`` looks for the name) and nodes of two
    /// versions each call their own.
    public static let postFunctionName = "hub_post_v1"
    public static let postFunction = """
        CREATE OR REPLACE FUNCTION hub_post_v1(g TEXT, p TEXT, u TEXT, b TEXT, t BIGINT, max_user_group BIGINT, max_user BIGINT, max_group BIGINT)
        RETURNS TABLE(outcome INT, author TEXT, group_posts BIGINT, user_group_posts BIGINT, user_posts BIGINT)
        LANGUAGE plpgsql AS $fn$
        DECLARE
            old_author TEXT;
            n_group BIGINT;
            n_user_group BIGINT;
            n_user BIGINT;
        BEGIN
            PERFORM pg_advisory_xact_lock(736110014, hashtext(u));
            PERFORM pg_advisory_xact_lock(736110013, hashtext(g));
            SELECT posts.user_id INTO old_author FROM posts WHERE posts.grp = g AND posts.pid = p;
            IF FOUND THEN
                IF old_author <> u THEN
                    RETURN QUERY SELECT 2, old_author, 0::BIGINT, 0::BIGINT, 0::BIGINT;
                    RETURN;
                END IF;
                UPDATE posts SET body = b, created_ms = t WHERE posts.grp = g AND posts.pid = p AND posts.user_id = u;
                RETURN QUERY SELECT 1, u, 0::BIGINT, 0::BIGINT, 0::BIGINT;
                RETURN;
            END IF;
            SELECT count(*), COALESCE(SUM(CASE WHEN posts.user_id = u THEN 1 ELSE 0 END), 0)::BIGINT
                INTO n_group, n_user_group FROM posts WHERE posts.grp = g;
            SELECT count(*) INTO n_user FROM posts WHERE posts.user_id = u;
            IF n_user_group >= max_user_group OR n_user >= max_user OR n_group >= max_group THEN
                RETURN QUERY SELECT 3, NULL::TEXT, n_group, n_user_group, n_user;
                RETURN;
            END IF;
            INSERT INTO posts(grp, pid, user_id, body, created_ms) VALUES (g, p, u, b, t);
            RETURN QUERY SELECT 0, u, n_group, n_user_group, n_user;
        END
        $fn$
        """
}
