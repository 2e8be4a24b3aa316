import HubCore
import Hummingbird
import Logging
import NIOCore

/// Who a request acts for, from its Bearer token.
public struct HubPrincipal: Sendable, Hashable {
    /// What kind of token it was.
    public enum Kind: String, Sendable { case account, client }
    /// The acting user: the account's id for resource-owner tokens, `client:<id>` for client tokens.
    public var subject: String
    /// The OAuth client the token was issued to.
    public var clientID: String
    /// The account's id for resource-owner tokens; nil for client tokens.
    public var account: String? { kind == .account ? subject : nil }
    public var kind: Kind

    public init(subject: String, clientID: String) {
        self.subject = subject
        self.clientID = clientID
        self.kind = subject.hasPrefix(HubPrincipal.clientSubjectPrefix) ? .client : .account
    }

    /// Subjects of client-credentials tokens start with this (`client:<id>`).
    public static let clientSubjectPrefix = "client:"
    /// The subject of a client's own user.
    public static func clientSubject(_ clientID: String) -> String { clientSubjectPrefix + clientID }
}

/// The hub's request context: 1 MiB uploads, the peer's address (for rate limits), the principal once
/// the Bearer middleware has checked the token.
public struct HubRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The client's IP address, the key of every limit per address ("?" when unknown, e.g. in-process
    /// tests): the connection's address, or, when that is a trusted proxy (`--trusted-proxy`), the
    /// address its `X-Forwarded-For` names (set by `ClientAddressMiddleware`, outermost; see ``TrustedProxies``).
    public internal(set) var remoteIP: String
    /// The connection's own address (the proxy's, behind one), normalized (``TrustedProxies/normalized(_:)``).
    public let peerIP: String
    /// Set by `BearerMiddleware` on `/v1` routes.
    public var principal: HubPrincipal?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        let peer = source.channel.remoteAddress?.ipAddress.map(TrustedProxies.normalized) ?? "?"
        self.peerIP = peer
        self.remoteIP = peer
        self.principal = nil
    }

    /// Request bodies are collected up to 1 MiB; larger ones answer 413.
    public var maxUploadSize: Int { Limits.maxBodyBytes }

    /// The principal, which every `/v1` handler has (the middleware refused the request otherwise).
    public func requirePrincipal() throws -> HubPrincipal {
        guard let p = principal else { throw HubAPIError.unauthorized(nil) }
        return p
    }
}
