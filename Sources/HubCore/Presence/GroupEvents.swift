// The groups API's pushed events, in exactly its shape, and the client's messages on /v1/socket.

/// Limits of the groups protocol.
public enum PresenceLimits {
    /// Largest `userload` or `pidload` text in bytes.
    public static let maxPayloadBytes = 16 * 1024
    /// Most members of a `userload` or `pidload` object (the document's `maxProperties`).
    public static let maxPayloadMembers = 64
    /// Largest WebSocket frame the hub accepts.
    public static let maxFrameBytes = 64 * 1024
    /// Longest group name, post id or user id.
    public static let maxNameLength = 64

    /// Whether `name` is a valid group name or post id: 1 to 64 of `A-Z a-z 0-9 . _ ~ : @ ! $ ' ( ) * + , ; = -`,
    /// and neither `.` nor `..`. Quotes, wildcards and dots are data; `/` and spaces are not allowed.
    public static func isValidName(_ name: String) -> Bool {
        let u = name.utf8
        guard !u.isEmpty, u.count <= maxNameLength, name != ".", name != ".." else { return false }
        return u.allSatisfy { c in
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "._~:@!$'()*+,;=-".utf8.contains(c)
            }
        }
    }
}

/// A user's presence in a group: `timestamp` 0 means online now, otherwise last seen (Unix ms).
public struct MemberPresence: Sendable, Hashable {
    public var group: String
    public var user: String
    public var timestamp: Int64
    public var userload: JSONObjectText

    public init(group: String, user: String, timestamp: Int64, userload: JSONObjectText) {
        self.group = group
        self.user = user
        self.timestamp = timestamp
        self.userload = userload
    }

    /// Whether the user is online in the group.
    public var isOnline: Bool { timestamp == 0 }
}

/// A post kept in a group until its author unposts it.
public struct GroupPost: Sendable, Hashable {
    public var group: String
    public var pid: String
    public var user: String
    /// The payload's exact text.
    public var pidload: JSONObjectText
    /// When it was posted (Unix ms).
    public var timestamp: Int64

    public init(group: String, pid: String, user: String, pidload: JSONObjectText, timestamp: Int64) {
        self.group = group
        self.pid = pid
        self.user = user
        self.pidload = pidload
        self.timestamp = timestamp
    }
}

/// An event pushed to a group's subscribers, in the groups API's shape.
public enum GroupEvent: Sendable, Hashable {
    /// `{"type":"user","group","user","timestamp","userload"}`
    case user(MemberPresence)
    /// `{"type":"post","group","pid","pidload","timestamp","user"}`
    case post(GroupPost)

    /// The group the event belongs to.
    public var group: String {
        switch self {
        case .user(let m): m.group
        case .post(let p): p.group
        }
    }

    /// The event as JSON text (payloads inserted verbatim).
    public var jsonText: String {
        switch self {
        case .user(let m):
            "{\"type\":\"user\",\"group\":\(JSONText.string(m.group)),\"user\":\(JSONText.string(m.user)),\"timestamp\":\(m.timestamp),\"userload\":\(m.userload.text)}"
        case .post(let p):
            "{\"type\":\"post\",\"group\":\(JSONText.string(p.group)),\"pid\":\(JSONText.string(p.pid)),\"pidload\":\(p.pidload.text),\"timestamp\":\(p.timestamp),\"user\":\(JSONText.string(p.user))}"
        }
    }
}

/// Everything a group holds, sent to whoever joins or listens: every member (online or last seen) and
/// every kept post.
public struct GroupSnapshot: Sendable, Hashable {
    public var members: [MemberPresence]
    public var posts: [GroupPost]

    public init(members: [MemberPresence], posts: [GroupPost]) {
        self.members = members
        self.posts = posts
    }

    /// The snapshot as events: members by user id, then posts by time and pid.
    public var events: [GroupEvent] {
        members.sorted { $0.user < $1.user }.map(GroupEvent.user)
            + posts.sorted { ($0.timestamp, $0.pid) < ($1.timestamp, $1.pid) }.map(GroupEvent.post)
    }
}

/// A message from a client on the socket.
public enum ClientOp: Sendable, Hashable {
    case hello(user: String?)
    case join(group: String)
    case listen(group: String)
    case leave(group: String)
    case post(group: String, pid: String, pidload: JSONObjectText)
    case unpost(group: String, pid: String)
    case update(userload: JSONObjectText)

    /// The op's name as the client wrote it.
    public var name: String {
        switch self {
        case .hello: "hello"
        case .join: "join"
        case .listen: "listen"
        case .leave: "leave"
        case .post: "post"
        case .unpost: "unpost"
        case .update: "update"
        }
    }

    /// Parses one text frame. Unknown members are refused, as are bad names and payloads.
    public static func parse(_ text: String) throws(ClientOpError) -> ClientOp {
        let members: JSONObjectMembers
        do {
            members = try JSONObjectMembers(parsing: text, maxBytes: PresenceLimits.maxFrameBytes)
        } catch {
            throw ClientOpError(op: nil, message: "not a JSON object: \(error)", fatal: true)
        }
        guard let op = members.string("op") else {
            throw ClientOpError(op: nil, message: "\"op\" (a string) is required", fatal: false)
        }
        func allow(_ names: Set<String>) throws(ClientOpError) {
            for key in members.values.keys where key != "op" && !names.contains(key) {
                throw ClientOpError(op: op, message: "unknown member \"\(key)\"", fatal: false)
            }
        }
        func name(_ key: String) throws(ClientOpError) -> String {
            guard let v = members.string(key) else {
                throw ClientOpError(op: op, message: "\"\(key)\" (a string) is required", fatal: false)
            }
            guard PresenceLimits.isValidName(v) else {
                throw ClientOpError(op: op, message: "\"\(key)\" must be 1-64 of A-Z a-z 0-9 ._~:@!$'()*+,;=- and not . or ..", fatal: false)
            }
            return v
        }
        func payload(_ key: String) throws(ClientOpError) -> JSONObjectText {
            guard let raw = members.values[key] else {
                throw ClientOpError(op: op, message: "\"\(key)\" (an object) is required", fatal: false)
            }
            do {
                return try JSONObjectText(validating: raw)
            } catch {
                throw ClientOpError(op: op, message: "\"\(key)\": \(error)", fatal: false)
            }
        }
        switch op {
        case "hello":
            try allow(["user"])
            if members.values["user"] == nil { return .hello(user: nil) }
            guard let u = members.string("user"), !u.isEmpty, u.utf8.count <= 128 else {
                throw ClientOpError(op: op, message: "\"user\" must be a user id string", fatal: false)
            }
            return .hello(user: u)
        case "join": try allow(["group"]); return .join(group: try name("group"))
        case "listen": try allow(["group"]); return .listen(group: try name("group"))
        case "leave": try allow(["group"]); return .leave(group: try name("group"))
        case "post":
            try allow(["group", "pid", "pidload"])
            return .post(group: try name("group"), pid: try name("pid"), pidload: try payload("pidload"))
        case "unpost":
            try allow(["group", "pid"])
            return .unpost(group: try name("group"), pid: try name("pid"))
        case "update":
            try allow(["userload"])
            return .update(userload: try payload("userload"))
        default:
            throw ClientOpError(op: op, message: "unknown op (hello, join, listen, leave, post, unpost, update)", fatal: false)
        }
    }
}

/// A refused client message; `fatal` ones (not JSON) close the socket.
public struct ClientOpError: Error, Sendable, Hashable {
    public var op: String?
    public var message: String
    public var fatal: Bool

    public init(op: String?, message: String, fatal: Bool) {
        self.op = op
        self.message = message
        self.fatal = fatal
    }

    /// `{"type":"error","op":...,"message":...}`
    public var jsonText: String {
        "{\"type\":\"error\",\"op\":\(op.map(JSONText.string) ?? "null"),\"message\":\(JSONText.string(message))}"
    }
}
