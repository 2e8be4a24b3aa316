/// The one form of an account name that the hub keys on.
///
/// Account names are ASCII letters, digits and `._-` (``Limits/usernamePattern``); names that differ only
/// in the case of their letters are one name. The key is the name with its ASCII letters lowered: it is
/// what the store makes unique, what codes, limiters and every lookup (sign-up, confirm, forgot, reset,
/// login, the password grant) use. The name as typed at sign-up is kept for display only.
public enum AccountName {
    /// The key of `name`: its ASCII letters in lower case, every other byte as it is. For a valid name
    /// (``Limits/isValidUsername(_:)``) the key is valid too and names the same account.
    public static func key(_ name: String) -> String {
        String(decoding: name.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// The key of a name typed by a client, or nil when the name is not valid (so that no text outside
    /// the pattern can reach a lookup or a limiter under some other form).
    public static func validKey(_ name: String) -> String? {
        Limits.isValidUsername(name) ? key(name) : nil
    }
}
