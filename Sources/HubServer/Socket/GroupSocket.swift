// /v1/socket: one WebSocket's life. Bearer checked at upgrade (GroupSocketUpgrade); here: hello and
// the user id, then ops until the socket ends, with one writer task draining the socket's outbox.

import HubCore
import HummingbirdWebSocket
import NIOWebSocket

/// Runs one client socket.
public struct GroupSocket: Sendable {
    let hub: GroupHub
    let principal: GroupPrincipal
    /// The client's address (a trusted proxy's X-Forwarded-For, else the peer's): new device ids are
    /// bounded per address (``DeviceBounds``).
    let remoteIP: String

    public init(hub: GroupHub, principal: GroupPrincipal, remoteIP: String = "?") {
        self.hub = hub
        self.principal = principal
        self.remoteIP = remoteIP
    }

    /// Close code of a `hello` refused because a bound of ``DeviceBounds`` was reached (the reason names it).
    public static let tooManyDevicesCode: UInt16 = 4029

    /// Handles the socket until it closes.
    public func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        hub.metrics?.webSocketOpened()
        defer { hub.metrics?.webSocketClosed() }
        await hub.ready()
        let outbox = GroupSocketOutbox(limits: hub.socketLimits)
        let conn = hub.newConnectionID()
        hub.fanout.add(conn, outbox: outbox)
        var user: String?
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await writeLoop(outbox, outbound) }
            var closeCode: WebSocketErrorCode?
            var reason = ""
            do {
                for try await message in inbound.messages(maxSize: PresenceLimits.maxFrameBytes) {
                    guard case .text(let text) = message else {
                        closeCode = .unacceptableData; reason = "text frames of JSON only"
                        break
                    }
                    let op: ClientOp
                    do throws(ClientOpError) {
                        op = try ClientOp.parse(text)
                    } catch {
                        outbox.send(error.jsonText)
                        if error.fatal { closeCode = .dataInconsistentWithMessage; reason = "not JSON"; break }
                        continue
                    }
                    if let user {
                        await hub.perform(op, conn: conn, user: user)
                        continue
                    }
                    guard case .hello(let asked) = op else {
                        outbox.send(ClientOpError(op: op.name, message: "say {\"op\":\"hello\"} first", fatal: false).jsonText)
                        continue
                    }
                    switch await identify(asked) {
                    case .success(let id):
                        user = id
                        outbox.send("{\"type\":\"hello\",\"user\":\(JSONText.string(id))}")
                    case .failure(let e):
                        outbox.send(e.jsonText)
                        if let bound = e.bound {
                            hub.metrics?.refused(limit: bound.name)
                            closeCode = .unknown(Self.tooManyDevicesCode); reason = bound.message
                        } else {
                            closeCode = .unknown(4003); reason = "user id refused"
                        }
                    }
                    if closeCode != nil { break }
                }
            } catch {
                // The inbound stream names its close code in its error (its type is not public: read it
                // by reflection): 1007 for a text frame that is not UTF-8, 1009 for one over the limit.
                let code = Mirror(reflecting: error).children.first?.value as? WebSocketErrorCode
                switch code {
                case .dataInconsistentWithMessage?:
                    closeCode = .dataInconsistentWithMessage
                    reason = "text frames must be UTF-8"
                case .messageTooLarge?, nil:
                    closeCode = .messageTooLarge
                    reason = "frames are limited to \(PresenceLimits.maxFrameBytes) bytes"
                case let other?:
                    closeCode = other
                    reason = "protocol error"
                }
            }
            if user != nil { await hub.closed(conn) } else { hub.fanout.remove(conn) }
            outbox.finish()
            await tasks.waitForAll()
            if let closeCode { try? await outbound.close(closeCode, reason: reason) }
        }
    }

    /// The socket's one writer: live frames in order, and each joined group's history read from the
    /// store as the socket drains, followed by the group's live events held meanwhile. A socket too
    /// slow for its live events is closed with 1008 and the reason.
    func writeLoop(_ outbox: GroupSocketOutbox, _ outbound: WebSocketOutboundWriter) async {
        func write(_ text: String) async -> Bool {
            do { try await outbound.write(.text(text)); return true } catch { return false }
        }
        writing: while let item = await outbox.next() {
            switch item {
            case .frame(let text):
                guard await write(text) else { break writing }
            case .history(let group):
                guard await hub.writeJoin(of: group, outbox: outbox, write: write) else { break writing }
            }
        }
        let reason = outbox.closeReason
        outbox.finish()
        if let reason {
            hub.metrics?.refused(limit: "max-socket-queue-bytes")
            try? await outbound.close(.policyViolation, reason: reason)
        }
    }

    /// The user id for this socket: the account's, or a device id of the token's client.
    func identify(_ asked: String?) async -> Result<String, HelloRefusal> {
        if let account = principal.account {
            if let asked, asked != account {
                return .failure(HelloRefusal(ClientOpError(op: "hello", message: "this token belongs to another user", fatal: true)))
            }
            return .success(account)
        }
        do {
            guard let asked else {
                switch try await hub.store.allocateDevice(clientID: principal.clientID, address: remoteIP, now: hub.now) {
                case .allocated(let id):
                    return .success(id)
                case .refused(let bound):
                    return .failure(HelloRefusal(ClientOpError(op: "hello", message: bound.message + ": say hello with a user id given before",
                                                               fatal: true), bound: bound))
                }
            }
            guard try await hub.store.deviceClient(asked) == principal.clientID else {
                return .failure(HelloRefusal(ClientOpError(op: "hello", message: "unknown user id for this client", fatal: true)))
            }
            return .success(asked)
        } catch {
            hub.logger.error("groups: hello could not allocate or look up a user id: \(error)")
            return .failure(HelloRefusal(ClientOpError(op: "hello", message: "the hub could not allocate a user id now", fatal: true)))
        }
    }

    /// Why a `hello` was refused: the error event, and the device bound reached, if that was why.
    struct HelloRefusal: Error {
        var error: ClientOpError
        var bound: DeviceBound?
        init(_ error: ClientOpError, bound: DeviceBound? = nil) {
            self.error = error
            self.bound = bound
        }
        var jsonText: String { error.jsonText }
    }
}
