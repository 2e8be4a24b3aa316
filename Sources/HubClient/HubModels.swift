import Foundation

/// An OAuth2 token set (RFC 6749 section 5.1). Its description and mirror never show the tokens.
public struct HubTokenSet: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The Bearer access token (secret).
    public var accessToken: String
    /// The refresh token (secret); resource-owner grants have one, client credentials do not.
    public var refreshToken: String?
    /// When the access token expires, from `expires_in` at the time it was received.
    public var expiresAt: Date?
    /// The granted scope.
    public var scope: String?

    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Date? = nil, scope: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.scope = scope
    }

    public var description: String {
        "HubTokenSet(access: <redacted>, refresh: \(refreshToken == nil ? "none" : "<redacted>")"
            + (expiresAt.map { ", expires: \($0)" } ?? "") + ")"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["accessToken": "<redacted>", "refreshToken": refreshToken == nil ? "none" : "<redacted>",
                                "expiresAt": expiresAt as Any, "scope": scope as Any])
    }
}

/// The tokens a `HubClient` holds, for keeping them between runs (`HubClient.restore(_:)`).
/// Its description never shows the tokens.
public struct HubCredentials: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The client-credentials token (anonymous calls).
    public var client: HubTokenSet?
    /// The resource owner's tokens (calls as a user).
    public var resourceOwner: HubTokenSet?

    public init(client: HubTokenSet? = nil, resourceOwner: HubTokenSet? = nil) {
        self.client = client
        self.resourceOwner = resourceOwner
    }

    public var description: String {
        "HubCredentials(client: \(client.map(\.description) ?? "none"), resourceOwner: \(resourceOwner.map(\.description) ?? "none"))"
    }
}

/// One page of a list: `{"status":"success","limit":L,"more":B,"data":[...]}`.
public struct HubPage<Item: Sendable>: Sendable {
    /// The items of this page.
    public var items: [Item]
    /// The page size the hub used.
    public var limit: Int
    /// Whether another item exists after this page.
    public var more: Bool
    /// The `skip` this page was asked with.
    public var skip: Int
    /// The `skip` of the next page, or nil when this is the last one.
    public var nextSkip: Int? { more ? skip + limit : nil }
}

/// A member of a group (REST `members`): the groups API's user item.
public struct HubMember: Sendable, Hashable, Codable {
    /// The stable user id (an account's, or a device id).
    public var user: String
    /// 0 while online, else last seen in Unix milliseconds.
    public var timestamp: Int64
    /// The user's payload.
    public var userload: HubJSON
    /// Whether the member is online now.
    public var isOnline: Bool { timestamp == 0 }
}

/// A kept post: the groups API's post item.
public struct HubPost: Sendable, Hashable, Codable {
    /// The group it was posted to.
    public var group: String
    /// The post's id, chosen by its author.
    public var pid: String
    /// The post's payload.
    public var pidload: HubJSON
    /// When it was posted, Unix milliseconds.
    public var timestamp: Int64
    /// Its author.
    public var user: String
}

/// `GET /v1/users/me`: who the token acts as.
public struct HubIdentity: Sendable, Hashable, Codable {
    /// The user id.
    public var user: String
    /// `account`, `device` or `client`.
    public var kind: String
    /// The account's name (accounts only).
    public var name: String?
    /// The OAuth client the token was issued to.
    public var clientID: String

    enum CodingKeys: String, CodingKey {
        case user, kind, name
        case clientID = "client_id"
    }
}
