#if os(Linux)
import Foundation
import Glibc
import Logging
import ModemRuntime
import Synchronization
@testable import HubServer
import Testing

/// The transit relay's splicer on its own (``TransitSplicer``: splice(2) through pipes, epoll): pairs of
/// connected stream sockets stand for a joined pair, the test holding the clients' ends. What it writes
/// first, bytes both ways, FINs passed on after the last byte, the pair's end by both FINs, by a failed
/// socket, by the idle timeout and by a stop. Every wait has a hang guard; nothing is timed.
@Suite struct TransitSplicerTests {
    /// What a pair's callbacks reported.
    final class Record: Sendable {
        let state = Mutex<(relayed: Int, idle: Int, ended: Int)>((0, 0, 0))
        var relayed: Int { state.withLock { $0.relayed } }
        var idle: Int { state.withLock { $0.idle } }
        var ended: Int { state.withLock { $0.ended } }
        /// Signalled by the pair's `ended` callback.
        let endedSignal = DispatchSemaphore(value: 0)

        /// Waits for the pair's end (the `ended` callback), under the hang guard.
        func waitEnded() -> Bool {
            endedSignal.wait(timeout: .now() + TransitSplicerTests.guardSeconds) == .success
        }
    }

    static let guardSeconds = 30.0

    /// A connected pair of stream sockets: (the client's end, the relay's end, non-blocking).
    static func connection() throws -> (client: Int32, relay: Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    /// A pair for the splicer whose greetings are `ok\n` and the other's early bytes; the clients' ends.
    static func pair(_ record: Record, early: ([UInt8], [UInt8]) = ([], []), idle: Double = 3600) throws -> (SplicedPair, (Int32, Int32)) {
        let a = try connection(), b = try connection()
        let pipes = try (#require(SplicePipe.make()), #require(SplicePipe.make()))
        let ok = Array("ok\n".utf8)
        let pair = SplicedPair(sockets: (a.relay, b.relay), pipes: pipes, greetings: (ok + early.1, ok + early.0),
                               idleTimeout: UInt64(idle * 1e9),
                               relayed: { n in record.state.withLock { $0.relayed += n } },
                               idleClosed: { record.state.withLock { $0.idle += 1 } },
                               ended: {
                                   record.state.withLock { $0.ended += 1 }
                                   record.endedSignal.signal()
                               })
        return (pair, (a.client, b.client))
    }

    /// Reads `fd` until `count` bytes came (nil: until its end), each read under the hang guard.
    /// - Returns: the bytes, and whether its end (EOF, or a reset) came.
    static func read(_ fd: Int32, count: Int? = nil) -> (bytes: [UInt8], ended: Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while count.map({ out.count < $0 }) ?? true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(guardSeconds * 1000)) == 1 else { return (out, false) }
            let want = min(buffer.count, count.map { $0 - out.count } ?? buffer.count)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, want) }
            if n <= 0 { return (out, true) }
            out += buffer[0..<n]
        }
        return (out, false)
    }

    /// Writes all of `bytes` to the blocking `fd`.
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }


    static func random(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    @Test("greetings first, then bytes both ways exact; each FIN passed on after the last byte; both FINs end the pair")
    func bytesBothWaysAndFINs() async throws {
        let splicer = try #require(TransitSplicer(threads: 1, logger: Logger(label: "test")))
        let record = Record()
        let (pair, (a, b)) = try Self.pair(record, early: (Array("from a".utf8), Array("from b!".utf8)))
        defer { close(a); close(b) }
        splicer.add(pair)
        // 3 MiB from a (more than the sockets and the pipe hold: the writer waits on the reader), written by a
        // thread of its own, then its FIN.
        let data = Self.random(3 << 20)
        let writer = DedicatedThread.start(name: "splice-test") {
            _ = Self.write(a, data)
            shutdown(a, Int32(SHUT_WR))
        }
        let atB = Self.read(b)
        #expect(atB.ended && atB.bytes.count == 3 + 6 + data.count)
        #expect(atB.bytes.prefix(9) == ArraySlice(Array("ok\nfrom a".utf8)) && atB.bytes.dropFirst(9).elementsEqual(data),
                "greeting, early bytes, then the data, in order")
        #expect(await BlockingCalls.run { writer.join(seconds: Self.guardSeconds) })
        // The other way still works after a's FIN; b's FIN ends the pair.
        #expect(Self.write(b, Array("reply".utf8)))
        shutdown(b, Int32(SHUT_WR))
        let atA = Self.read(a)
        #expect(atA.ended && atA.bytes == Array("ok\nfrom b!reply".utf8))
        #expect(record.waitEnded() && record.ended == 1)
        #expect(record.relayed == data.count + 5, "spliced bytes counted (the early ones are the relay's to count)")
        #expect(record.idle == 0)
        await splicer.stop()
        #expect(record.ended == 1, "ended once")
    }

    @Test("a socket gone: the pair ends, the other end is closed")
    func failedSocketEndsThePair() async throws {
        let splicer = try #require(TransitSplicer(threads: 1, logger: Logger(label: "test")))
        let record = Record()
        let (pair, (a, b)) = try Self.pair(record)
        defer { close(b) }
        splicer.add(pair)
        #expect(Self.read(a, count: 3).bytes == Array("ok\n".utf8))
        close(a)
        // a's end reads as a FIN, passed on to b; what b sends then has nowhere to go.
        let atB = Self.read(b)
        #expect(atB.ended && atB.bytes == Array("ok\n".utf8))
        _ = Self.write(b, Array("anyone?".utf8))
        #expect(record.waitEnded() && record.ended == 1)
        #expect(Self.read(b).ended)
        await splicer.stop()
        #expect(record.ended == 1)
    }

    @Test("a pair silent both ways for its idle timeout is closed")
    func idlePairClosed() async throws {
        let splicer = try #require(TransitSplicer(threads: 1, logger: Logger(label: "test")))
        let record = Record()
        let (pair, (a, b)) = try Self.pair(record, idle: 0.2)
        defer { close(a); close(b) }
        splicer.add(pair)
        let atA = Self.read(a), atB = Self.read(b)
        #expect(atA.ended && atA.bytes == Array("ok\n".utf8) && atB.ended && atB.bytes == Array("ok\n".utf8))
        #expect(record.waitEnded() && record.ended == 1)
        #expect(record.idle == 1)
        await splicer.stop()
    }

    @Test("a stop closes every pair; a pair given after it is closed at once")
    func stopClosesPairs() async throws {
        let splicer = try #require(TransitSplicer(threads: 2, logger: Logger(label: "test")))
        let records = [Record(), Record(), Record()]
        var clients: [Int32] = []
        defer { for c in clients { close(c) } }
        for r in records.prefix(2) {
            let (pair, (a, b)) = try Self.pair(r)
            clients += [a, b]
            splicer.add(pair)
            #expect(Self.read(a, count: 3).bytes == Array("ok\n".utf8))
        }
        await splicer.stop()
        for c in clients { #expect(Self.read(c).ended) }
        #expect(records[0].ended == 1 && records[1].ended == 1 && records[0].idle == 0)
        let (late, (a, b)) = try Self.pair(records[2])
        clients += [a, b]
        splicer.add(late)
        #expect(records[2].ended == 1)
        #expect(Self.read(a).ended && Self.read(b).ended)
    }
}
#endif
