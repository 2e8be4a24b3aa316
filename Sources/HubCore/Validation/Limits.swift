import Foundation

/// The limits the server enforces and the OpenAPI document declares: one source for both
/// (a test renders them against docs/openapi.yaml).
public enum Limits {
    /// Largest request body accepted (bytes); larger ones answer 413.
    public static let maxBodyBytes = 1 << 20
    /// Largest userload or pidload, as JSON text (bytes).
    public static let maxLoadBytes = 16 * 1024
    /// Page size bounds and default.
    public static let minLimit = 1
    public static let maxLimit = 1000
    public static let defaultLimit = 25
    /// Largest `skip`.
    public static let maxSkip = 1_000_000_000
    /// Group names and post ids: the characters of RFC 3986's unreserved and sub-delims plus `:@`,
    /// 1 to 64 of them, and never `.` or `..`.
    public static let namePattern = "^[A-Za-z0-9._~:@!$'()*+,;=-]{1,64}$"
    public static let nameMaxLength = 64
    /// Account names: letters, digits and `._-`, 1 to 64.
    public static let usernamePattern = "^[A-Za-z0-9._-]{1,64}$"
    /// Passwords: 8 to 256 characters.
    public static let passwordMinLength = 8
    public static let passwordMaxLength = 256
    /// Contact (where codes go): 1 to 256 characters.
    public static let contactMaxLength = 256
    /// Confirmation and reset codes: 8 digits.
    public static let codePattern = "^[0-9]{8}$"

    private static let nameCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~:@!$'()*+,;=-".utf8)
    private static let usernameCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-".utf8)

    /// Whether `s` is a valid group name or post id.
    public static func isValidName(_ s: String) -> Bool {
        let u = s.utf8
        return (1...nameMaxLength).contains(u.count) && s != "." && s != ".." && u.allSatisfy(nameCharacters.contains)
    }

    /// Whether `s` can name an OAuth client: 1 to 128 bytes of printable text (no control or format
    /// characters, no line or paragraph separators: the name is shown in logs and on terminals).
    public static func isValidClientName(_ s: String) -> Bool {
        guard (1...128).contains(s.utf8.count), s.trimmingCharacters(in: .whitespacesAndNewlines) == s else { return false }
        return s.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate, .privateUse: false
            default: true
            }
        }
    }

    /// Whether `s` is a valid account name.
    public static func isValidUsername(_ s: String) -> Bool {
        let u = s.utf8
        return (1...64).contains(u.count) && u.allSatisfy(usernameCharacters.contains)
    }

    /// Whether `s` is an acceptable password.
    public static func isValidPassword(_ s: String) -> Bool {
        (passwordMinLength...passwordMaxLength).contains(s.unicodeScalars.count)
    }

    /// Whether `s` is an 8-digit code.
    public static func isValidCode(_ s: String) -> Bool {
        s.utf8.count == 8 && s.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}

/// Paging of list answers (the hub API): `limit` 1...1000 (default 25), `skip` >= 0.
public struct Page: Sendable, Equatable {
    public var limit: Int
    public var skip: Int

    /// Reads `limit` and `skip` from query values; nil when absent.
    /// - Throws: a `ValidationFailure` naming the parameter when a value is out of range or not a number.
    public init(limit: String?, skip: String?) throws(ValidationFailure) {
        if let l = limit {
            guard let v = Int(l), (Limits.minLimit...Limits.maxLimit).contains(v) else {
                throw ValidationFailure(field: "limit", message: "limit must be an integer from \(Limits.minLimit) to \(Limits.maxLimit)")
            }
            self.limit = v
        } else { self.limit = Limits.defaultLimit }
        if let s = skip {
            guard let v = Int(s), (0...Limits.maxSkip).contains(v) else {
                throw ValidationFailure(field: "skip", message: "skip must be an integer from 0 to \(Limits.maxSkip)")
            }
            self.skip = v
        } else { self.skip = 0 }
    }

    public init(limit: Int = Limits.defaultLimit, skip: Int = 0) { self.limit = limit; self.skip = skip }
}

/// A client error in a request's data: which field, and what is wrong (a JSend `fail` body).
public struct ValidationFailure: Error, Equatable, Sendable {
    public var field: String?
    public var message: String
    public init(field: String?, message: String) { self.field = field; self.message = message }
}
