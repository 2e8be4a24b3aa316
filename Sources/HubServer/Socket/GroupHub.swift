// The groups engine of one node: store outcomes -> PresenceRules actions -> local fan-out and bus.

import HubCore
import HubStore
import Logging
import Synchronization

/// Who a socket or REST call acts for.
public struct GroupPrincipal: Sendable, Hashable {
    /// The account's user id for resource-owner tokens; nil for client tokens.
    public var account: String?
    /// The OAuth client the token was issued to.
    public var clientID: String

    public init(account: String?, clientID: String) {
        self.account = account
        self.clientID = clientID
    }

    /// The user REST calls act as: the account, or the client's own user `client:<id>`.
    public var restUser: String { account ?? "client:" + clientID }
}

/// Turns Bearer tokens into principals (supplied by the OAuth layer).
public typealias GroupAuthenticator = @Sendable (_ bearerToken: String) async -> GroupPrincipal?

/// One node's groups: the store, the local fan-out, the bus and this node's instance id.
public final class GroupHub: Sendable {
    public let store: any GroupStore
    public let fanout: GroupFanout
    public let bus: any GroupBus
    /// This process's instance id (unique per start; the node name plus a random suffix).
    public let instance: String
    /// The node's name (`--node`).
    public let nodeName: String
    let logger: Logger
    private let counter = Atomic<Int>(0)
    /// What each local socket has joined (to announce it again after this node was swept).
    private let joins = Mutex<[ConnectionID: (user: String, groups: Set<String>)]>([:])

    public init(store: any GroupStore, fanout: GroupFanout, bus: any GroupBus, instance: String, nodeName: String, logger: Logger) {
        self.store = store
        self.fanout = fanout
        self.bus = bus
        self.instance = instance
        self.nodeName = nodeName
        self.logger = logger
    }

    /// A new connection id, unique across nodes.
    public func newConnectionID() -> ConnectionID {
        instance + "/" + String(counter.add(1, ordering: .relaxed).newValue)
    }

    /// Current wall-clock time in Unix ms.
    public var now: Int64 { Clock.nowMs }

    /// Performs one client op of `user` on `conn` and carries out the resulting actions.
    public func perform(_ op: ClientOp, conn: ConnectionID, user: String) async {
        do {
            let outcome: PresenceOutcome
            let now = self.now
            switch op {
            case .hello:
                fanout.send(conn, ClientOpError(op: "hello", message: "hello was already said", fatal: false).jsonText)
                return
            case .join(let g):
                fanout.subscribe(conn, to: g)
                outcome = try await store.join(conn: conn, instance: instance, group: g, user: user, now: now)
                _ = joins.withLock { $0[conn, default: (user, [])].groups.insert(g) }
            case .listen(let g):
                fanout.subscribe(conn, to: g)
                outcome = try await store.listen(group: g)
            case .leave(let g):
                outcome = try await store.leave(conn: conn, group: g, user: user, now: now)
                joins.withLock { _ = $0[conn]?.groups.remove(g) }
            case .post(let g, let pid, let load):
                outcome = try await store.post(GroupPost(group: g, pid: pid, user: user, pidload: load, timestamp: now))
            case .unpost(let g, let pid):
                outcome = try await store.unpost(group: g, pid: pid, user: user)
            case .update(let load):
                outcome = try await store.update(user: user, userload: load, now: now)
            }
            execute(PresenceRules.actions(for: outcome, by: conn, op: op.name))
        } catch {
            logger.error("groups: \(op.name) failed: \(error)")
            fanout.send(conn, ClientOpError(op: op.name, message: "the hub could not do that now; try again", fatal: false).jsonText)
        }
    }

    /// A socket ended: its user goes offline where it has no other connection.
    public func closed(_ conn: ConnectionID) async {
        fanout.remove(conn)
        joins.withLock { $0[conn] = nil }
        do {
            execute(PresenceRules.actions(for: try await store.close(conn: conn, now: now), by: nil, op: "close"))
        } catch {
            logger.error("groups: closing a connection failed: \(error)")
        }
    }

    /// Joins every local socket's groups again (after another node swept this one): the store gets the
    /// presence rows back and the users come online again, once each, for the others.
    public func reannounce() async {
        let all = joins.withLock { $0 }
        for (conn, entry) in all {
            for group in entry.groups.sorted() {
                do {
                    let outcome = try await store.join(conn: conn, instance: instance, group: group, user: entry.user, now: now)
                    // Only the others hear of it: the socket itself knows it is there (no snapshot again).
                    execute(PresenceRules.actions(for: outcome, by: conn, op: "join").filter {
                        if case .publish = $0 { true } else { false }
                    })
                } catch {
                    logger.error("groups: announcing \(conn) in \(group) again failed: \(error)")
                }
            }
        }
    }

    /// Carries out actions: local subscriptions and sends, publishes through the bus.
    public func execute(_ actions: [PresenceAction]) {
        for action in actions {
            switch action {
            case .subscribe(let c, let g): fanout.subscribe(c, to: g)
            case .unsubscribe(let c, let g): fanout.unsubscribe(c, from: g)
            case .send(let c, let e): fanout.send(c, e.jsonText)
            case .publish(let e, let excluding): bus.publish(e, excluding: excluding)
            case .error(let c, let e): fanout.send(c, e.jsonText)
            }
        }
    }
}
