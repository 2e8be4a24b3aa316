import Foundation
import Glibc
import ModemRuntime
import Synchronization
import Testing

/// A gate a blocking call waits at until the test opens it (no sleeps: the test decides when).
final class Gate: Sendable {
    private let open = Mutex(false)
    private let condition = NSCondition()

    func wait() {
        condition.lock()
        while !open.withLock({ $0 }) { condition.wait() }
        condition.unlock()
    }

    func release() {
        condition.lock()
        open.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }
}

@Suite("BlockingCalls")
struct BlockingCallsTests {
    struct Refused: Error, Equatable { var code: Int }

    @Test("a call's value comes back; a typed error is thrown as itself")
    func valuesAndErrors() async {
        #expect(await BlockingCalls.run { 6 * 7 } == 42)
        let error = await #expect(throws: Refused.self) {
            try await BlockingCalls.run { () throws(Refused) -> Int in throw Refused(code: 3) }
        }
        #expect(error == Refused(code: 3))
    }

    @Test("more calls than threads: all run, each gives its own value, while the limit's worth block")
    func moreCallsThanThreads() async {
        let gate = Gate()
        let count = BlockingCalls.threadLimit * 4
        let results = await withTaskGroup(of: Int.self) { group in
            for i in 0..<count {
                group.addTask { await BlockingCalls.run { gate.wait(); return i } }
            }
            gate.release()
            var out: [Int] = []
            for await r in group { out.append(r) }
            return out
        }
        #expect(results.sorted() == Array(0..<count))
    }

    @Test("waitAtMost: a quick call's value comes back")
    func boundedWaitInTime() {
        #expect(BlockingCalls.waitAtMost(seconds: 60, { 5 }, whenLate: { _ in Issue.record("not late") }) == 5)
    }

    @Test("waitAtMost: a call past its time gives nil, and its value goes to whenLate when it comes")
    func boundedWaitLate() async {
        let gate = Gate()
        let waited = Mutex<[Int?]>([])
        let late = await withCheckedContinuation { (lateValue: CheckedContinuation<Int, Never>) in
            DedicatedThread.start(name: "test-bounded-wait") {
                // The call cannot finish before the gate opens, which happens after the wait gave up.
                let r = BlockingCalls.waitAtMost(seconds: 0.01, { gate.wait(); return 9 }, whenLate: { lateValue.resume(returning: $0) })
                waited.withLock { $0.append(r) }
                gate.release()
            }
        }
        #expect(waited.withLock { $0 } == [nil])
        #expect(late == 9)
    }
}

@Suite("DedicatedThread")
struct DedicatedThreadTests {
    @Test("runs its body once on a named thread; join waits for the end; a bounded join says whether it ended")
    func lifecycle() {
        let gate = Gate()
        let ran = Mutex<(count: Int, name: String?)>((0, nil))
        let thread = DedicatedThread.start(name: "test-dedicated") {
            gate.wait()
            // The kernel's name of the calling thread, as `top -H` shows it.
            let got = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines)
            ran.withLock { $0.count += 1; $0.name = got }
        }
        #expect(thread.name == "test-dedicated")
        #expect(!thread.join(seconds: 0.01))
        #expect(!thread.isFinished)
        gate.release()
        thread.join()
        #expect(thread.isFinished)
        #expect(thread.join(seconds: 0))
        #expect(ran.withLock { $0.count } == 1)
        #expect(ran.withLock { $0.name } == "test-dedicated")
    }
}

@Suite("AtomicFile")
struct AtomicFileTests {
    private func folder(_ tag: String) throws -> String {
        let path = NSTemporaryDirectory() + "atomic-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    @Test("writes a new file owner-only, replaces an existing one whole, leaves no temporary file")
    func writesAndReplaces() throws {
        let dir = try folder("write")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/f"
        try AtomicFile.write(Array("one".utf8), to: path)
        #expect(contents(path) == Array("one".utf8))
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        try AtomicFile.write([UInt8](repeating: 7, count: 100_000), to: path, durability: .unsynced)
        #expect(contents(path) == [UInt8](repeating: 7, count: 100_000))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["f"])
    }

    @Test("umask mode: 0666 less the umask")
    func umaskMode() throws {
        let dir = try folder("umask")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mask = umask(0o022)
        defer { umask(mask) }
        try AtomicFile.write([1], to: dir + "/g", mode: .umask)
        var st = stat()
        #expect(stat(dir + "/g", &st) == 0 && st.st_mode & 0o777 == 0o644)
    }

    @Test("a missing folder is an error naming the file and the reason; a directory in the way is not replaced")
    func failures() throws {
        let dir = try folder("fail")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let missing = dir + "/no/such/f"
        let error = #expect(throws: AtomicFileError.self) { try AtomicFile.write([1], to: missing) }
        #expect(error?.code == ENOENT)
        #expect(error?.description == "cannot write \(missing): \(error?.step ?? ""): the folder does not exist")
        try FileManager.default.createDirectory(atPath: dir + "/d/x", withIntermediateDirectories: true)
        let blocked = #expect(throws: AtomicFileError.self) { try AtomicFile.write([1], to: dir + "/d") }
        #expect(blocked?.step == "cannot replace the file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["d"])
    }
}

@Suite("SystemTime")
struct SystemTimeTests {
    @Test("the monotonic clock does not go back; a stopwatch starts near 0; the wall clock is after 2020")
    func clocks() {
        let a = SystemTime.monotonicNanoseconds(), b = SystemTime.monotonicNanoseconds()
        #expect(b >= a)
        let watch = Stopwatch()
        let s = watch.seconds
        #expect(s >= 0 && s < 60)
        #expect(SystemTime.wallNanoseconds() > 1_577_836_800 * 1_000_000_000)
        #expect(SystemTime.wallSecondsAndMicroseconds().microseconds < 1_000_000)
    }
}
