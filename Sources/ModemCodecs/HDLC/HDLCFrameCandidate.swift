/// A frame received between two flags that failed: its FCS did not match, or its length after
/// de-stuffing was not a whole number of bytes. It keeps the received bits so that a caller can try
/// CRC-guided repair.
///
/// ## Repair
///
/// ``repair(maxBitFlips:adjacentPairsOnly:isAcceptable:)`` inverts one or two of the *received* bits,
/// the still bit-stuffed ones between the flags, de-stuffs again and keeps the result if its FCS matches,
/// as Dire Wolf's "fix bits" does. Flipping before de-stuffing models what the channel really did: an
/// error that makes or breaks a run of five 1s also adds or removes a stuffing bit, which shifts
/// everything after it (that is how a frame becomes misaligned), and flipping bits of the de-stuffed
/// bytes could never undo that.
///
/// A 16-bit FCS cannot tell a true repair from a lucky one: on a damaged frame that no repair of the
/// level can truly fix, every trial (one set of inverted bits) passes the FCS with probability about
/// 1 / 65,536, so a level's false-pass rate is its number of trials over 65,536. For a frame of n received
/// bits (about 830 for 100 bytes) that is:
///
/// | level | trials | false passes per damaged whole-byte frame, n = 830 |
/// | --- | --- | --- |
/// | one bit (`maxBitFlips: 1`) | n | 1.3 % |
/// | one NRZI line bit (`pattern: [0, 1]`), one G3RUH line bit (6-bit pattern) | n | 1.3 % |
/// | one bit or two adjacent bits (`adjacentPairsOnly`) | 2n | 2.5 % |
/// | any one or two bits | n + n(n - 1)/2 | nearly every frame (5 false passes expected) |
///
/// (A frame whose de-stuffed length is not whole bytes can only be fixed by flips that change the
/// stuffing, about 1 in 8 of those give whole bytes, so it is at much lower risk.) The generator's
/// factor x + 1 makes this depend on parity: a trial that leaves an even number of wrong bits passes
/// with probability 1/32,768, one that leaves an odd number never does. Measured in
/// `RepairFalseAcceptTests` (1,500 frames of 830 bits each): one line bit on even damage 1.8 × 1/65,536
/// per trial, one bit on odd damage 1.6 ×, either with the parity wrong 0. So pass `isAcceptable`
/// a plausibility test (for AX.25, ``AX25Plausibility``), count repaired frames apart, and keep to the
/// single-trial-per-bit levels: an NRZI line where one level was misjudged shows two *adjacent* wrong
/// bits, which `pattern: [0, 1]` covers at the risk of single-bit repair. Two separated bits are not
/// worth their risk.
public struct HDLCFrameCandidate: Sendable, Hashable {
    /// The received bits between the flags, still bit-stuffed, in line order (`true` = 1).
    public var rawBits: [Bool]

    /// Bit index (as counted by ``HDLCDecoder/bitIndex``) of the first of ``rawBits``.
    public var startBitIndex: Int

    /// Bit index just past the closing flag.
    public var endBitIndex: Int

    /// The smallest length in bytes (FCS included) a repaired frame may have.
    public var minimumLength: Int

    /// The largest length in bytes (FCS included) a repaired frame may have.
    public var maximumLength: Int

    /// Creates a candidate from received bits.
    ///
    /// - Parameters:
    ///   - rawBits: The bits between the flags, still stuffed.
    ///   - startBitIndex: Index of the first of them in the received stream.
    ///   - endBitIndex: Index just past the closing flag.
    ///   - minimumLength: Smallest acceptable repaired frame in bytes, FCS included.
    ///   - maximumLength: Largest acceptable repaired frame in bytes, FCS included.
    public init(
        rawBits: [Bool], startBitIndex: Int = 0, endBitIndex: Int? = nil,
        minimumLength: Int = HDLCDecoder.ax25MinimumLength, maximumLength: Int = HDLCDecoder.ax25MaximumLength
    ) {
        self.rawBits = rawBits
        self.startBitIndex = startBitIndex
        self.endBitIndex = endBitIndex ?? startBitIndex + rawBits.count + 8
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
    }

    /// The whole bytes that de-stuffing ``rawBits`` gives (the FCS bytes included; an incomplete last
    /// byte left out). Empty if the bits hold six 1s in a row, which no frame between flags can.
    public var destuffedBytes: [UInt8] {
        HDLCRepairSearch.destuff(rawBits, mapping: false)?.bytes ?? []
    }

    /// Whether de-stuffing ``rawBits`` gives a bit count that is not a multiple of 8.
    public var isMisaligned: Bool {
        (HDLCRepairSearch.destuff(rawBits, mapping: false)?.bitCount ?? 0) % 8 != 0
    }

    /// Tries to make the frame pass its FCS by inverting one or two received bits.
    ///
    /// Tries, in this order, and returns the first result that passes the FCS, has an acceptable length
    /// and satisfies `isAcceptable`: every single bit (in line order); then, if `maxBitFlips` is 2, every
    /// pair of adjacent bits; then, unless `adjacentPairsOnly`, pairs of separated bits. Separated pairs
    /// are found through the CRC's syndrome rather than by trying all of them; pairs where both flips
    /// change the bit stuffing (bits in or next to runs of 1s) are tried exhaustively only while that
    /// stays cheap (frames up to about 100 bytes).
    ///
    /// The cost is about one de-stuffing pass per received bit near a run of 1s for single flips, and per
    /// received bit for pairs.
    ///
    /// - Parameters:
    ///   - maxBitFlips: 1 or 2.
    ///   - adjacentPairsOnly: With `maxBitFlips` 2, try only pairs of neighbouring bits.
    ///   - isAcceptable: A plausibility test of the repaired frame's bytes (FCS removed).
    /// - Returns: The repaired frame, with ``HDLCFrame/flippedBitIndices`` saying which received bits were
    ///   inverted, or `nil`.
    public func repair(
        maxBitFlips: Int = 1, adjacentPairsOnly: Bool = false,
        isAcceptable: (_ bytes: [UInt8]) -> Bool = { _ in true }
    ) -> HDLCFrame? {
        precondition((1...2).contains(maxBitFlips), "HDLCFrameCandidate.repair maxBitFlips must be 1 or 2, got \(maxBitFlips)")
        guard let search = HDLCRepairSearch(rawBits: rawBits, lengths: minimumLength...max(minimumLength, maximumLength)) else {
            return nil
        }
        func accepted(_ flips: [Int]) -> HDLCFrame? {
            guard let frame = search.verify(flips), isAcceptable(frame.bytes) else { return nil }
            return HDLCFrame(
                bytes: frame.bytes, fcs: frame.fcs, startBitIndex: startBitIndex, endBitIndex: endBitIndex,
                flippedBitIndices: flips.map { startBitIndex + $0 }
            )
        }
        for flip in search.singleFlipCandidates() {
            if let frame = accepted([flip]) { return frame }
        }
        guard maxBitFlips == 2 else { return nil }
        for pair in search.adjacentPairCandidates() {
            if let frame = accepted(pair) { return frame }
        }
        guard !adjacentPairsOnly else { return nil }
        for pair in search.separatedPairCandidates() {
            if let frame = accepted(pair) { return frame }
        }
        return nil
    }

    /// Tries to make the frame pass its FCS by inverting one fixed pattern of received bits, at every
    /// position in turn: `pattern` holds offsets from the position, e.g. `[0, 1]` for one wrong NRZI
    /// line bit, or `[0, 1, 12, 13, 17, 18]` for one wrong G3RUH line bit (the descrambler spreads it to
    /// three bits, NRZI to six). Offsets that fall outside the frame are skipped.
    ///
    /// Where no flip of the pattern changes the bit stuffing, the CRC syndrome decides at once; other
    /// positions cost one de-stuffing pass each, or are skipped when `exhaustive` is false (faster,
    /// and such repairs are rare: a flip that changes the stuffing shifts the rest of the frame).
    /// Every result is checked in full (FCS, length, `isAcceptable`).
    ///
    /// `positions`, when given, limits the search to those positions (indices into ``rawBits``; others
    /// are ignored): for example the received bits the demodulator was least sure of. Each position
    /// tried is one more 1 in 65,536 chance that a frame that cannot be repaired passes its FCS, so
    /// fewer positions mean proportionally fewer false repairs.
    /// - Returns: The first repaired frame found (in the order of `positions`, else line order), or `nil`.
    public func repair(pattern: [Int], exhaustive: Bool = true, positions: [Int]? = nil,
                       isAcceptable: (_ bytes: [UInt8]) -> Bool = { _ in true }) -> HDLCFrame? {
        precondition(!pattern.isEmpty && pattern.allSatisfy { $0 >= 0 }, "repair pattern offsets must be non-negative")
        let lengths = minimumLength...max(minimumLength, maximumLength)
        let order = positions?.filter { rawBits.indices.contains($0) } ?? Array(rawBits.indices)
        if exhaustive, let fast = HDLCIncrementalRepair(rawBits: rawBits) {
            // Each position costs a few bit steps: de-stuffing resumes from the unmodified frame's
            // state just before the first flip and rejoins it a few bits after the last one.
            var offsets = Array(Set(pattern)).sorted()
            var flips = offsets
            for position in order {
                flips.removeAll(keepingCapacity: true)
                for o in offsets where position + o < rawBits.count { flips.append(position + o) }
                guard fast.passes(flips: flips, lengths: lengths) else { continue }
                var bits = rawBits
                if let frame = verify(flips, in: &bits, lengths: lengths, isAcceptable: isAcceptable) { return frame }
            }
            offsets.removeAll()
            return nil
        }
        let search = HDLCRepairSearch(rawBits: rawBits, lengths: lengths)
        var bits = rawBits
        for position in order {
            let flips = pattern.map { position + $0 }.filter { $0 < bits.count }
            // Flips that leave the stuffing alone change the CRC by known amounts (the register is
            // linear): the syndrome says at once whether the pattern can fix the frame here, and
            // only a match is de-stuffed and checked in full. Other positions are tried directly.
            if let search {
                let clean = flips.allSatisfy { !search.isDirty[$0] }
                if clean {
                    // Clean flips keep the length: they cannot fix a misaligned frame, and for an
                    // aligned one the syndrome decides.
                    guard let syndrome = search.baseSyndrome else { continue }
                    var change: UInt16 = 0
                    for f in flips {
                        let d = Int(search.base.rawToData[f])
                        change ^= HDLCSyndrome.effect[search.base.bitCount - d]
                    }
                    guard change == syndrome else { continue }
                } else if !exhaustive {
                    continue
                }
            }
            if let frame = verify(flips, in: &bits, lengths: lengths, isAcceptable: isAcceptable) { return frame }
        }
        return nil
    }

    /// The frame that inverting `flips` in `bits` (a copy of ``rawBits``, left as it was) gives, checked
    /// in full (FCS, length, `isAcceptable`).
    private func verify(_ flips: [Int], in bits: inout [Bool], lengths: ClosedRange<Int>,
                        isAcceptable: (_ bytes: [UInt8]) -> Bool) -> HDLCFrame? {
        for f in flips { bits[f].toggle() }
        defer { for f in flips { bits[f].toggle() } }
        guard let d = HDLCRepairSearch.destuff(bits, mapping: false), d.isAligned,
              lengths.contains(d.bytes.count), d.syndrome == 0 else { return nil }
        let count = d.bytes.count
        let body = Array(d.bytes[0..<(count - 2)])
        guard isAcceptable(body) else { return nil }
        let fcs = UInt16(d.bytes[count - 2]) | UInt16(d.bytes[count - 1]) << 8
        return HDLCFrame(bytes: body, fcs: fcs, startBitIndex: startBitIndex, endBitIndex: endBitIndex,
                         flippedBitIndices: flips.map { startBitIndex + $0 })
    }
}
