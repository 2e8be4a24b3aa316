import ModemCrypto

/// Why a SPAKE2 exchange failed.
public struct SPAKE2Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// One side of SPAKE2's symmetric variant over Ed25519, as python-spake2's `SPAKE2_Symmetric`
/// computes it (magic-wormhole's PAKE: the password is the wormhole code, the identity its
/// application id). Both sides send `S` followed by the 32-byte element `x·B + pw·S`; each finishes
/// with the other's message, and both get the same 32-byte key exactly when their passwords were
/// the same: SHA-256 of SHA-256(password), SHA-256(identity), the two elements in sorted order, and
/// the shared element `x·(Y - pw·S)`.
public struct SPAKE2Symmetric: Sendable {
    private let password: [UInt8]
    private let identity: [UInt8]
    private let passwordScalar: [UInt8]
    private let secret: [UInt8]
    private let element: [UInt8]

    /// The message to send: `S` and the blinded element (33 bytes).
    public var outboundMessage: [UInt8] { [0x53] + element }

    /// Starts a side.
    /// - Parameters:
    ///   - password: the shared password (magic-wormhole: the code's bytes).
    ///   - identity: the identity both sides use (magic-wormhole: the application id).
    ///   - entropy: 64 bytes for the secret scalar (random unless a test fixes it).
    public init(password: [UInt8], identity: [UInt8], entropy: [UInt8] = secureRandomBytes(64)) throws(SPAKE2Error) {
        self.password = password
        self.identity = identity
        passwordScalar = SPAKE2Ed25519.passwordScalar(password)
        secret = SPAKE2Ed25519.scalar(fromEntropy: entropy)
        do {
            let xB = try Ed25519Group.multiplyBase(secret)
            let blinding = try Ed25519Group.multiply(passwordScalar, SPAKE2Ed25519.s)
            element = try Ed25519Group.add(xB, blinding)
        } catch {
            throw SPAKE2Error("the secret or the password maps to zero: \(error.description)")
        }
    }

    /// The shared key from the peer's message.
    /// - Throws: ``SPAKE2Error`` when the message is not a symmetric side's element of the group, or
    ///   is our own message reflected.
    public func finish(_ inbound: [UInt8]) throws(SPAKE2Error) -> [UInt8] {
        guard inbound.count == 33 else { throw SPAKE2Error("a SPAKE2 message is 33 bytes, not \(inbound.count)") }
        switch inbound[0] {
        case 0x53: break
        case 0x41, 0x42: throw SPAKE2Error("the peer runs the asymmetric SPAKE2 (side \(Character(UnicodeScalar(inbound[0]))))")
        default: throw SPAKE2Error("the peer's SPAKE2 message has an unknown side byte \(inbound[0])")
        }
        let theirs = Array(inbound[1...])
        guard Ed25519Group.isValidElement(theirs) else { throw SPAKE2Error("the peer's SPAKE2 element is not in the group") }
        guard theirs != element else { throw SPAKE2Error("the peer's SPAKE2 message is our own, reflected") }
        let shared: [UInt8]
        do {
            let unblinding = try Ed25519Group.multiply(Ed25519Group.negate(passwordScalar), SPAKE2Ed25519.s)
            shared = try Ed25519Group.multiply(secret, try Ed25519Group.add(theirs, unblinding))
        } catch {
            throw SPAKE2Error("the peer's SPAKE2 element gives no shared element")
        }
        let (first, second) = theirs.lexicographicallyPrecedes(element) ? (theirs, element) : (element, theirs)
        return SHA256Hasher.hash(SHA256Hasher.hash(password) + SHA256Hasher.hash(identity) + first + second + shared)
    }
}
