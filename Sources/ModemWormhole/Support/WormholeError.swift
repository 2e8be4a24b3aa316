/// Why a wormhole operation failed; the description is one line for the user (it never holds the
/// code or a key).
public struct WormholeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, for callers that react to some.
    public enum Kind: Sendable, Equatable {
        /// The code does not match the peer's: its messages do not open (magic-wormhole's "scary").
        case wrongCode
        /// The rendezvous server refused a request, or sent something not of the protocol.
        case server
        /// The network failed (connect, read, write, a closed connection).
        case network
        /// The rendezvous server's TLS certificate (`wss://`) is not trusted (or expired, or otherwise
        /// failed verification); the description says why (OpenSSL's verification result).
        case certificate
        /// The rendezvous server's TLS certificate (`wss://`) is trusted but not for the URL's host name
        /// or IP address.
        case certificateNotForHost
        /// The peer sent something not of the protocol, or refused the transfer.
        case peer
        /// This side declined the offer (the receiver's decision said no; the sender was told).
        case declined
        /// Local input or files (a bad code, a file that cannot be read or written).
        case local
        /// No transit connection could be made.
        case transit
    }

    /// The kind.
    public var kind: Kind
    /// The one-line explanation.
    public var description: String

    /// Creates an error.
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
