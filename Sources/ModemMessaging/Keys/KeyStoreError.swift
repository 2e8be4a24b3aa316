/// A failure of the key store: a bad key text or name, unsafe permissions, a damaged file, an I/O error.
/// The description names the problem and the file or value involved; it never contains a private key.
public struct KeyStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem this is.
    public enum Kind: Sendable, Equatable {
        /// A public key text or key bytes that are not a valid X25519 public key.
        case invalidKey
        /// A peer name outside `[A-Za-z0-9._-]{1,64}`.
        case invalidName
        /// A date that is not RFC 3339.
        case invalidDate
        /// The folder or the private key is accessible to group or others, or owned by someone else.
        case insecurePermissions
        /// A file of the store does not parse.
        case corrupt
        /// No trust entry of that name.
        case notFound
        /// The name is already the trusted name of another key: one name names one key, so a peer is
        /// never shown under a name that was given to someone else.
        case nameTaken
        /// A system call failed.
        case io
    }

    /// What kind of problem this is.
    public let kind: Kind
    /// The problem in words.
    public let description: String

    /// Creates an error.
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
