import ArgumentParser
import HubCore
import HubServer

/// `modem-hub serve`'s bounds on group posts and on what one groups socket holds (issue 32, the post
/// flood; docs/hub.md "Bounds"). A new post over a bound is refused (REST: 409 naming the bound; the
/// socket: an `error` event); a socket too slow for its live events is closed with 1008 and a reason.
struct GroupOptions: ParsableArguments {
    @Option(name: .customLong("max-posts-per-user-per-group"), parsing: .unconditional,
            help: "Posts one user may keep in one group; a new one over it is refused, none is evicted (1 to 1000000).")
    var maxPostsPerUserPerGroup = PostBounds.defaultPerUserPerGroup
    @Option(name: .customLong("max-posts-per-group"), parsing: .unconditional,
            help: "Posts one group may keep, all users together; a new one over it is refused, none is evicted (1 to 10000000).")
    var maxPostsPerGroup = PostBounds.defaultPerGroup
    @Option(name: .customLong("max-posts-per-user"), parsing: .unconditional,
            help: "Posts one user may keep in all groups together; a new one over it is refused, none is evicted (1 to 10000000).")
    var maxPostsPerUser = PostBounds.defaultPerUser
    // Groups one user is a member of (issue 32, member rows in invented groups).
    @Option(name: .customLong("max-groups-per-user"), parsing: .unconditional,
            help: "Groups one user may be a member of; a join over it is refused with an error event, rejoining a group one is in takes no new place, leaving frees one (1 to 1000000).")
    var maxGroupsPerUser = PostBounds.defaultGroupsPerUser
    @Option(name: .customLong("devices-per-address-per-hour"), parsing: .unconditional,
            help: "New user ids (device ids) one client address may be given in any hour, for hello without a user id on a client token; over it hello is refused and the socket closed with 4029. An install keeps its id and says hello with it (not counted); raise it for many new installs behind one NAT (1 to 1000000).")
    var devicesPerAddressPerHour = DeviceBounds.defaultPerAddressPerHour
    @Option(name: .customLong("max-devices-per-client"), parsing: .unconditional,
            help: "User ids (device ids) one OAuth client may have in all, about one per install of an app; over it hello without a user id is refused and the socket closed with 4029 (1 to 100000000).")
    var maxDevicesPerClient = DeviceBounds.defaultPerClient
    @Option(name: .customLong("max-socket-queue-bytes"), parsing: .unconditional,
            help: "Bytes of live events one groups socket may have waiting to be written (queued, or held while a group's history is written); over it the socket is closed with 1008. History is written as the socket drains and is not counted (65536 to 1073741824).")
    var maxSocketQueueBytes = GroupSocketLimits.defaultQueueBytes

    func validate() throws {
        guard (1...1_000_000).contains(maxPostsPerUserPerGroup) else {
            throw ValidationError("--max-posts-per-user-per-group must be 1 to 1000000")
        }
        guard (1...10_000_000).contains(maxPostsPerGroup) else { throw ValidationError("--max-posts-per-group must be 1 to 10000000") }
        guard (1...10_000_000).contains(maxPostsPerUser) else { throw ValidationError("--max-posts-per-user must be 1 to 10000000") }
        guard (1...1_000_000).contains(maxGroupsPerUser) else { throw ValidationError("--max-groups-per-user must be 1 to 1000000") }
        guard (1...1_000_000).contains(devicesPerAddressPerHour) else {
            throw ValidationError("--devices-per-address-per-hour must be 1 to 1000000")
        }
        guard (1...100_000_000).contains(maxDevicesPerClient) else { throw ValidationError("--max-devices-per-client must be 1 to 100000000") }
        guard (65536...(1 << 30)).contains(maxSocketQueueBytes) else {
            throw ValidationError("--max-socket-queue-bytes must be 65536 to 1073741824")
        }
    }

    /// Puts the bounds into the server's settings.
    func apply(to settings: inout HubServerSettings) {
        settings.groups.posts = PostBounds(perUserPerGroup: maxPostsPerUserPerGroup, perGroup: maxPostsPerGroup, perUser: maxPostsPerUser,
                                           groupsPerUser: maxGroupsPerUser)
        settings.groups.devices = DeviceBounds(perAddressPerHour: devicesPerAddressPerHour, perClient: maxDevicesPerClient)
        settings.groups.socket = GroupSocketLimits(queueBytes: maxSocketQueueBytes)
    }
}
