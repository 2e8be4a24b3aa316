import CSodium

/// libsodium, initialised once before the first use (`sodium_init` is safe to call from any thread,
/// and again; it fails only when the system has no source of randomness).
enum Sodium {
    static let ready: Bool = sodium_init() >= 0

    /// Calls `body` once libsodium is ready; stops the process with a clear message when it cannot be
    /// (no randomness source: nothing secure can be done then).
    @inline(__always)
    static func ensure() {
        guard ready else { fatalError("libsodium could not initialise (no source of randomness on this system)") }
    }
}

/// `count` random bytes from the system's cryptographic generator.
public func secureRandomBytes(_ count: Int) -> [UInt8] {
    Sodium.ensure()
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
    return bytes
}

/// Whether two byte strings are equal, in time that depends only on their lengths.
public func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
    let x = Array(a), y = Array(b)
    guard x.count == y.count else { return false }
    if x.isEmpty { return true }
    Sodium.ensure()
    return x.withUnsafeBytes { xp in y.withUnsafeBytes { yp in sodium_memcmp(xp.baseAddress!, yp.baseAddress!, x.count) == 0 } }
}

/// Runs `body` on the bytes of `data` without a copy when they are contiguous. The buffer's base
/// address is never nil (an empty input gets a pointer to a byte it must not read), as C wants.
@inline(__always)
func withBytes<C: Collection<UInt8>, R>(_ data: C, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    if data.isEmpty {
        var zero: UInt8 = 0
        return try withUnsafeMutablePointer(to: &zero) { try body(UnsafeRawBufferPointer(start: $0, count: 0)) }
    }
    if let r = try data.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) { return r }
    return try Array(data).withUnsafeBytes(body)
}

/// The base address of a buffer from ``withBytes(_:_:)`` (never nil) as C's byte pointer.
@inline(__always)
func base(_ p: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
    p.baseAddress!.assumingMemoryBound(to: UInt8.self)
}
