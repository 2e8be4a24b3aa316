import ModemRuntime
import Synchronization
import Testing

@Suite("Hex")
struct HexTests {
    @Test("bytes encode to lower-case pairs and decode back; odd lengths and non-digits are refused")
    func roundTrip() {
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.encode([0x00, 0x0a, 0xff, 0x10]) == "000aff10")
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.decode("00FFaB") == [0x00, 0xff, 0xab])
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("0") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.decode("é0") == nil)
    }

    @Test("integers are zero-padded to their width, upper case unless asked; wider values keep their digits")
    func digits() {
        #expect(Hex.digits(UInt8(0x0c)) == "0C")
        #expect(Hex.digits(UInt16(0x0c03)) == "0C03")
        #expect(Hex.digits(UInt16(0x3)) == "0003")
        #expect(Hex.digits(UInt8(0xab), uppercase: false) == "ab")
        #expect(Hex.digits(0x12345, width: 2) == "12345")
        #expect(Hex.digits(UInt32(1), width: 3) == "001")
    }

    @Test("lower-case digit check: exact count, no upper case, no other characters")
    func lowercaseDigits() {
        #expect(Hex.isLowercaseDigits("0123abcdef", count: 10))
        #expect(!Hex.isLowercaseDigits("0123ABCDEF", count: 10))
        #expect(!Hex.isLowercaseDigits("0123", count: 5))
        #expect(!Hex.isLowercaseDigits("012g", count: 4))
    }
}

@Suite("CRC-32 paths")
struct CRC32PathTests {
    @Test("eight bytes a step (contiguous input) and one at a time (any sequence) agree, in any pieces, at every length")
    func slicingAgrees() {
        var random = SplitMix64(seed: 32)
        for length in 0..<80 {
            let data = random.bytes(length)
            let whole = CRC32.checksum(data)
            // A lazy sequence has no contiguous storage: the byte-at-a-time path.
            #expect(CRC32.checksum(data.lazy.map { $0 }) == whole, "length \(length)")
            var pieces = CRC32()
            var at = 0
            while at < data.count {
                let n = min(data.count - at, 1 + Int(random.next() % 11))
                pieces.update(data[at..<(at + n)])
                at += n
            }
            #expect(pieces.value == whole, "length \(length)")
        }
    }
}

@Suite("SplitMix64")
struct SplitMix64Tests {
    @Test("seed 0 gives the reference generator's first outputs; equal seeds give equal sequences")
    func reference() {
        var g = SplitMix64(seed: 0)
        #expect(g.next() == 0xE220_A839_7B1D_CDAF)
        #expect(g.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(g.next() == 0x06C4_5D18_8009_454F)
        var a = SplitMix64(seed: 99), b = SplitMix64(seed: 99), c = SplitMix64(seed: 100)
        let first = (0..<10).map { _ in a.next() }
        #expect(first == (0..<10).map { _ in b.next() })
        #expect(first != (0..<10).map { _ in c.next() })
    }

    @Test("bytes are the draws lowest byte first; uniform is in [0, 1)")
    func bytesAndUniform() {
        var a = SplitMix64(seed: 5), b = SplitMix64(seed: 5)
        let drawn = a.bytes(11)
        let first = b.next(), second = b.next()
        let expected = (0..<8).map { UInt8(truncatingIfNeeded: first >> (8 * $0)) } + (0..<3).map { UInt8(truncatingIfNeeded: second >> (8 * $0)) }
        #expect(drawn == expected)
        #expect(a.bytes(0).isEmpty && a.bytes(-3).isEmpty)
        for _ in 0..<1000 {
            let u = a.uniform()
            #expect(u >= 0 && u < 1)
        }
    }
}

@Suite("AsyncLock")
struct AsyncLockTests {
    /// Waits (by yielding, never sleeping) until `lock` has `count` waiters.
    private func waiters(_ lock: AsyncLock, reach count: Int) async {
        while lock.waiterCount < count { await Task.yield() }
    }

    @Test("one holder at a time; waiters get the lock in the order they came")
    func fifo() async {
        let lock = AsyncLock()
        let order = OrderLog()
        await lock.lock()
        #expect(lock.isHeld)
        var tasks: [Task<Void, Never>] = []
        for i in 1...5 {
            tasks.append(Task {
                await lock.lock()
                order.append(i)
                lock.unlock()
            })
            await waiters(lock, reach: i)
        }
        #expect(order.values.isEmpty)
        lock.unlock()
        for t in tasks { await t.value }
        #expect(order.values == [1, 2, 3, 4, 5])
        #expect(!lock.isHeld && lock.waiterCount == 0)
    }

    @Test("withLock releases the lock when its body throws")
    func releasesOnThrow() async {
        struct Failure: Error {}
        let lock = AsyncLock()
        await #expect(throws: Failure.self) { try await lock.withLock { () async throws -> Int in throw Failure() } }
        #expect(!lock.isHeld)
        #expect(await lock.withLock { 7 } == 7)
    }
}

/// A log of integers appended from several tasks.
final class OrderLog: Sendable {
    private let state = Mutex<[Int]>([])
    func append(_ v: Int) { state.withLock { $0.append(v) } }
    var values: [Int] { state.withLock { $0 } }
}
