/// The search behind ``HDLCFrameCandidate/repair(maxBitFlips:adjacentPairsOnly:isAcceptable:)``.
///
/// A received bit is *clean* when inverting it leaves the bit stuffing alone (no run of five 1s is made
/// or broken): the de-stuffed frame then differs in exactly one known bit, and because the CRC is linear
/// the register at the end differs by a constant that depends only on how many bits follow
/// (``HDLCSyndrome``). So the single clean flip that fixes a frame is found by one table look-up, and a
/// second flip after any first one likewise. Flips of bits that are not clean are tried by de-stuffing
/// again. Every candidate is verified by a full de-stuffing and FCS check before it is returned.
struct HDLCRepairSearch {
    /// A de-stuffed bit stream.
    struct Destuffed {
        /// Whole bytes.
        var bytes: [UInt8]
        /// The number of data bits (may not be a multiple of 8).
        var bitCount: Int
        /// For each data bit, the index of the received bit it came from (when mapped).
        var dataToRaw: [Int32]
        /// For each received bit, the index of its data bit, or -1 for a stuffing bit (when mapped).
        var rawToData: [Int32]

        var isAligned: Bool { bitCount % 8 == 0 }

        /// The CRC register's deviation from the good residue (0 for a good frame); aligned frames only.
        var syndrome: UInt16 {
            var crc = CRC16X25()
            crc.update(bytes)
            return crc.register ^ CRC16X25.goodResidue
        }
    }

    /// A repaired frame before its bit indices are known.
    struct Result {
        var bytes: [UInt8]
        var fcs: UInt16
    }

    let raw: [Bool]
    let lengths: ClosedRange<Int>
    let base: Destuffed
    /// The base syndrome, when the base is aligned and short enough for the syndrome tables.
    let baseSyndrome: UInt16?
    /// Received bits whose flip changes the stuffing.
    let dirty: [Int]
    let isDirty: [Bool]

    /// The most bit steps (pairs of dirty bits times received bits) spent trying every pair of dirty
    /// bits: enough for frames of about 100 bytes.
    static let exhaustiveDirtyPairBudget = 8_000_000

    init?(rawBits: [Bool], lengths: ClosedRange<Int>) {
        guard let base = Self.destuff(rawBits, mapping: true) else { return nil }
        raw = rawBits
        self.lengths = lengths
        self.base = base
        if base.isAligned, base.bitCount >= 8, base.bitCount <= HDLCSyndrome.maxDistance {
            baseSyndrome = base.syndrome
        } else {
            baseSyndrome = nil
        }
        var isDirty = [Bool](repeating: false, count: rawBits.count)
        var dirty: [Int] = []
        for index in rawBits.indices where !Self.isClean(index, in: Flipped(raw: rawBits)) {
            isDirty[index] = true
            dirty.append(index)
        }
        self.isDirty = isDirty
        self.dirty = dirty
    }

    // MARK: candidates

    /// Single flips worth verifying, in line order.
    func singleFlipCandidates() -> [Int] {
        var flips = dirty
        if let syndrome = baseSyndrome, syndrome != 0,
           let q = Self.match(syndrome, in: base), !isDirty[q] {
            flips.append(q)
        }
        return flips.sorted()
    }

    /// Adjacent pairs worth verifying, in line order.
    func adjacentPairCandidates() -> [[Int]] {
        guard raw.count >= 2 else { return [] }
        var pairs: [[Int]] = []
        for p in 0..<(raw.count - 1) {
            let q = p + 1
            if !isDirty[p], Self.isClean(q, in: Flipped(raw: raw, first: p)) {
                // Both flips leave the stuffing alone: only the syndrome can tell.
                guard let syndrome = baseSyndrome else { continue }
                let dp = Int(base.rawToData[p]), dq = Int(base.rawToData[q])
                guard dp >= 0, dq >= 0 else { continue }
                let effect = HDLCSyndrome.effect[base.bitCount - dp] ^ HDLCSyndrome.effect[base.bitCount - dq]
                if effect == syndrome {
                    pairs.append([p, q])
                }
            } else {
                pairs.append([p, q])
            }
        }
        return pairs
    }

    /// Pairs of separated bits (more than one apart) worth verifying, in line order, without repeats.
    func separatedPairCandidates() -> [[Int]] {
        var found = Set<[Int]>()
        for p in raw.indices {
            let flipped = Flipped(raw: raw, first: p)
            var q: Int?
            if !isDirty[p] {
                // The de-stuffed frame is the base with one bit inverted.
                guard let syndrome = baseSyndrome else { continue }
                let dp = Int(base.rawToData[p])
                guard dp >= 0 else { continue }
                let rest = syndrome ^ HDLCSyndrome.effect[base.bitCount - dp]
                if rest != 0 { q = Self.match(rest, in: base) }
            } else if let destuffed = Self.destuff(flipped, mapping: true), destuffed.isAligned,
                      destuffed.bitCount >= 8, destuffed.bitCount <= HDLCSyndrome.maxDistance {
                let rest = destuffed.syndrome
                if rest != 0 { q = Self.match(rest, in: destuffed) }
            }
            if let q, abs(q - p) > 1, Self.isClean(q, in: flipped) {
                found.insert([min(p, q), max(p, q)])
            }
        }
        if dirty.count * (dirty.count - 1) / 2 * raw.count <= Self.exhaustiveDirtyPairBudget {
            for (i, p) in dirty.enumerated() {
                for q in dirty[(i + 1)...] where q - p > 1 {
                    found.insert([p, q])
                }
            }
        }
        return found.sorted { $0[0] != $1[0] ? $0[0] < $1[0] : $0[1] < $1[1] }
    }

    /// The received bit whose (clean) flip would cancel `syndrome` in `destuffed`, if any.
    static func match(_ syndrome: UInt16, in destuffed: Destuffed) -> Int? {
        let distance = Int(HDLCSyndrome.distance[Int(syndrome)])
        guard distance >= 1, distance <= destuffed.bitCount else { return nil }
        return Int(destuffed.dataToRaw[destuffed.bitCount - distance])
    }

    /// The frame that flipping `flips` gives, if it passes the FCS and the length limits.
    func verify(_ flips: [Int]) -> Result? {
        let flipped = Flipped(raw: raw, first: flips.first ?? -1, second: flips.count > 1 ? flips[1] : -1)
        guard let destuffed = Self.destuff(flipped, mapping: false), destuffed.isAligned,
              lengths.contains(destuffed.bytes.count), destuffed.syndrome == 0
        else { return nil }
        let count = destuffed.bytes.count
        let fcs = UInt16(destuffed.bytes[count - 2]) | UInt16(destuffed.bytes[count - 1]) << 8
        return Result(bytes: Array(destuffed.bytes.dropLast(2)), fcs: fcs)
    }

    // MARK: bits

    /// Received bits with up to two of them inverted, without copying.
    struct Flipped {
        let raw: [Bool]
        var first = -1
        var second = -1

        var count: Int { raw.count }

        subscript(index: Int) -> Bool {
            raw[index] != (index == first || index == second)
        }
    }

    /// Whether inverting bit `index` of `bits` leaves the stuffing alone: the run of 1s it joins or
    /// splits stays shorter than five.
    static func isClean(_ index: Int, in bits: Flipped) -> Bool {
        var before = 0
        var i = index - 1
        while i >= 0, bits[i], before < 5 {
            before += 1
            i -= 1
        }
        var after = 0
        i = index + 1
        while i < bits.count, bits[i], after < 5 {
            after += 1
            i += 1
        }
        return before + 1 + after < 5
    }

    static func destuff(_ raw: [Bool], mapping: Bool) -> Destuffed? {
        destuff(Flipped(raw: raw), mapping: mapping)
    }

    /// De-stuffs `bits`; `nil` if they hold six 1s in a row (a flag or an abort, not frame content).
    static func destuff(_ bits: Flipped, mapping: Bool) -> Destuffed? {
        var result = Destuffed(bytes: [], bitCount: 0, dataToRaw: [], rawToData: [])
        result.bytes.reserveCapacity(bits.count / 8 + 1)
        if mapping {
            result.dataToRaw.reserveCapacity(bits.count)
            result.rawToData.reserveCapacity(bits.count)
        }
        var ones = 0
        var partial: UInt8 = 0
        var partialCount = 0
        for index in 0..<bits.count {
            let bit = bits[index]
            if bit {
                ones += 1
                if ones >= 6 { return nil }
            } else {
                let stuffing = ones == 5
                ones = 0
                if stuffing {
                    if mapping { result.rawToData.append(-1) }
                    continue
                }
            }
            if mapping {
                result.rawToData.append(Int32(result.bitCount))
                result.dataToRaw.append(Int32(index))
            }
            if bit { partial |= 1 << partialCount }
            partialCount += 1
            result.bitCount += 1
            if partialCount == 8 {
                result.bytes.append(partial)
                partial = 0
                partialCount = 0
            }
        }
        return result
    }
}

/// How inverting one de-stuffed bit changes the CRC-16/X.25 register at the end of a frame.
///
/// The register update is linear, so inverting the bit that has `m - 1` bits after it changes the final
/// register by `effect[m]`, whatever the frame. The generator's period is 32767, so within that many
/// bits the effects are distinct and `distance` inverts them.
enum HDLCSyndrome {
    /// The longest distance covered (the period of the CRC-16/X.25 generator's odd part).
    static let maxDistance = 32767

    /// `effect[m]`, m = 1...maxDistance: the register change from inverting the bit `m - 1` bits before
    /// the end. `effect[0]` is 0.
    static let effect: [UInt16] = {
        var table = [UInt16](repeating: 0, count: maxDistance + 1)
        var value = CRC16X25.reflectedPolynomial
        for m in 1...maxDistance {
            table[m] = value
            value = value & 1 != 0 ? (value >> 1) ^ CRC16X25.reflectedPolynomial : value >> 1
        }
        return table
    }()

    /// `distance[v]`: the smallest m with `effect[m] == v`, or 0 if none.
    static let distance: [UInt16] = {
        var table = [UInt16](repeating: 0, count: 65536)
        for m in stride(from: maxDistance, through: 1, by: -1) {
            table[Int(effect[m])] = UInt16(m)
        }
        return table
    }()
}

/// Exact, incremental evaluation of a set of flipped received bits: whether de-stuffing the flipped
/// bits gives whole bytes, how many, and whether their CRC register ends at the good residue.
///
/// The unmodified frame's de-stuffer state (run of 1s, data bits so far, CRC register) is kept at
/// every received bit. A flip set is evaluated by resuming from the state just before its first
/// flip, stepping bit by bit until, after its last flip, the run of 1s agrees with the unmodified
/// frame's at the same received bit: from there on both de-stuff alike, so the rest of the data is
/// the unmodified frame's suffix, whose effect on the register is linear (``HDLCSyndrome``) even when
/// the flips added or removed a stuffing bit and shifted it.
struct HDLCIncrementalRepair {
    let raw: [Bool]
    /// Run of 1s before each received bit (and after the last, at index `raw.count`).
    let onesBefore: [UInt8]
    /// Data bits before each received bit.
    let dataBefore: [Int32]
    /// CRC register after each number of data bits (0...dataCount).
    let registerAfter: [UInt16]
    let dataCount: Int

    /// Nil when the bits hold six 1s in a row or are too long for the syndrome tables.
    init?(rawBits: [Bool]) {
        let n = rawBits.count
        guard n + 8 < HDLCSyndrome.maxDistance else { return nil }
        var ones = [UInt8](repeating: 0, count: n + 1)
        var data = [Int32](repeating: 0, count: n + 1)
        var regs = [UInt16](repeating: 0, count: n + 1)
        var run = 0, k = 0
        var reg = CRC16X25.initialRegister
        regs[0] = reg
        for r in 0..<n {
            ones[r] = UInt8(run)
            data[r] = Int32(k)
            if rawBits[r] {
                run += 1
                if run >= 6 { return nil }
            } else {
                let stuffing = run == 5
                run = 0
                if stuffing { continue }
            }
            reg ^= rawBits[r] ? 1 : 0
            reg = reg & 1 != 0 ? (reg >> 1) ^ CRC16X25.reflectedPolynomial : reg >> 1
            k += 1
            regs[k] = reg
        }
        ones[n] = UInt8(run)
        data[n] = Int32(k)
        raw = rawBits
        onesBefore = ones
        dataBefore = data
        registerAfter = Array(regs[0...k])
        dataCount = k
    }

    /// `x` after `m` register steps with zero input.
    @inline(__always)
    static func advance(_ x: UInt16, by m: Int) -> UInt16 {
        var out: UInt16 = 0
        var v = x
        var i = 0
        while v != 0 {
            if v & 1 != 0 {
                // e_i after m steps: e_(i-m) while m <= i, else effect[m - i] (e_0 after one step).
                if m < i { out ^= 1 << UInt16(i - m) } else if m == i { out ^= 1 } else { out ^= HDLCSyndrome.effect[m - i] }
            }
            v >>= 1
            i += 1
        }
        return out
    }

    /// Whether inverting `flips` (ascending, in range) yields whole bytes, a byte count in `lengths`,
    /// and a good FCS.
    func passes(flips: [Int], lengths: ClosedRange<Int>) -> Bool {
        guard let first = flips.first, let lastFlip = flips.last else { return false }
        let n = raw.count
        return raw.withUnsafeBufferPointer { raw in
            var r = first
            var run = Int(onesBefore[r])
            var k = Int(dataBefore[r])
            var reg = registerAfter[k]
            var f = 0
            while r < n {
                if r > lastFlip && run == Int(onesBefore[r]) { break }
                var bit = raw[r]
                if f < flips.count && flips[f] == r { bit.toggle(); f += 1 }
                if bit {
                    run += 1
                    if run >= 6 { return false }
                } else {
                    let stuffing = run == 5
                    run = 0
                    if stuffing { r += 1; continue }
                }
                reg ^= bit ? 1 : 0
                reg = reg & 1 != 0 ? (reg >> 1) ^ CRC16X25.reflectedPolynomial : reg >> 1
                k += 1
                r += 1
            }
            let join = Int(dataBefore[r])
            let total = k + dataCount - join
            guard total % 8 == 0, lengths.contains(total / 8) else { return false }
            let final = registerAfter[dataCount] ^ Self.advance(reg ^ registerAfter[join], by: dataCount - join)
            return final == CRC16X25.goodResidue
        }
    }
}
