// The groups side of the hub as a HubPlugin: REST routes, the /v1/socket upgrade, and the bus and
// heartbeat service, all on one GroupRuntime built (once) from the hub's open database.

import HTTPTypes
import HubCore
import HubStore
import HummingbirdWebSocket
import Logging
import ServiceLifecycle
import Synchronization

/// Groups with presence (the groups API) for `modem-hub serve`.
public final class GroupsPlugin: HubPlugin {
    let nodeName: String
    let heartbeat: Duration
    private let built = Mutex<GroupRuntime?>(nil)

    /// - Parameters:
    ///   - nodeName: `--node` (a new instance replaces a dead one of the same name at start, and
    ///     refuses to start beside a live one: ``NodeNameInUse``)
    ///   - heartbeat: `--heartbeat`
    public init(nodeName: String, heartbeat: Duration) {
        self.nodeName = nodeName
        self.heartbeat = heartbeat
    }

    /// The runtime on the context's database (made at first use).
    public func runtime(_ context: HubPluginContext) -> GroupRuntime {
        built.withLock { r in
            if let r { return r }
            let made = GroupRuntime(db: context.store.db, nodeName: nodeName, heartbeat: heartbeat, logger: context.logger,
                                    settings: context.settings.groups, metrics: context.metrics)
            r = made
            return made
        }
    }

    public func register(on router: HubRouter, context: HubPluginContext) {
        GroupRoutes(hub: runtime(context).hub).register(on: router)
    }

    public func services(context: HubPluginContext) -> [any Service] { [runtime(context)] }

    public var webSocketConfiguration: WebSocketServerConfiguration? { GroupSocketUpgrade.configuration }

    /// The groups' part of `/readyz` (``GroupRuntime/readiness()``).
    public func readiness(context: HubPluginContext) async -> String? { runtime(context).readiness() }

    public func shouldUpgrade(_ request: HTTPRequest, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        await shouldUpgrade(request, remoteIP: "?", context: context)
    }

    /// The upgrade with the client's address (new device ids are bounded per address).
    public func shouldUpgrade(_ request: HTTPRequest, remoteIP: String, context: HubPluginContext) async
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        await GroupSocketUpgrade.shouldUpgrade(request, hub: runtime(context).hub, remoteIP: remoteIP) { token in
            guard let p = await context.principal(bearer: token) else { return nil }
            return GroupPrincipal(account: p.account, clientID: p.clientID)
        }
    }
}
