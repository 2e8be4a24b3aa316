/// How well a decoded byte string matches what was sent, by longest common subsequence.
///
/// `matched` is the length of the longest common subsequence of `expected` and `got` (a byte lost,
/// changed or added costs at most one match, and one slip does not shift the rest out of line).
/// The character error rate is `1 - matched / expected.count`; bytes that were never sent but
/// appear in the output are counted separately as `inserted = got.count - matched`.
public struct CharacterErrorRate: CustomStringConvertible, Sendable {
    /// Bytes sent.
    public let expectedCount: Int
    /// Bytes decoded.
    public let gotCount: Int
    /// Length of the longest common subsequence of what was sent and what was decoded.
    public let matched: Int

    /// Compares what was decoded with what was sent.
    public init(expected: [UInt8], got: [UInt8]) {
        expectedCount = expected.count
        gotCount = got.count
        matched = Self.lcsLength(expected, got)
    }

    /// 1 - matched / expected (0 when nothing was expected).
    public var rate: Double { expectedCount == 0 ? 0 : 1 - Double(matched) / Double(expectedCount) }
    /// Bytes of the output that match nothing sent.
    public var inserted: Int { gotCount - matched }
    /// Inserted bytes per byte sent.
    public var insertionRate: Double { expectedCount == 0 ? 0 : Double(inserted) / Double(expectedCount) }

    public var description: String {
        "CER \(percent(rate)) (\(expectedCount - matched) of \(expectedCount) bytes lost or wrong), "
            + "\(inserted) inserted, \(gotCount) bytes decoded"
    }

    /// Length of the longest common subsequence, O(n·m) time, O(m) memory.
    public static func lcsLength(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty || b.isEmpty { return 0 }
        var previous = [Int](repeating: 0, count: b.count + 1)
        var current = previous
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                for i in 0..<a.count {
                    let x = a[i]
                    current[0] = 0
                    for j in 0..<b.count {
                        if x == b[j] {
                            current[j + 1] = previous[j] + 1
                        } else {
                            current[j + 1] = max(previous[j + 1], current[j])
                        }
                    }
                    swap(&previous, &current)
                }
            }
        }
        return previous[b.count]
    }
}

/// "1.23 %".
public func percent(_ x: Double) -> String {
    let r = (x * 10000).rounded() / 100
    return "\(r) %"
}

/// The character error rate of `got` against `expected` (1 - matched / expected).
public func characterErrorRate(expected: [UInt8], got: [UInt8]) -> Double {
    CharacterErrorRate(expected: expected, got: got).rate
}
