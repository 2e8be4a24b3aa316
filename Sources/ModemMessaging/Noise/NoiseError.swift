/// A failure of the Noise protocol: a message that does not authenticate, a bad length, a key that
/// gives no shared secret, a nonce used up, a call out of order.
public struct NoiseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problem in words.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
