import Foundation
import ModemCrypto
import ModemRuntime
@testable import ModemWormhole
import Testing

/// The transit handshake (issue 32, defect 11): compared in constant time, and connections to our
/// listener that are not the peer (any number of them, wrong or silent) never stop the peer's
/// handshake from being answered. At da86752, after 32 connections no handshake was attempted.
///
/// The receiver runs in a ``Simulation`` on its simulated clock: every connection (40 attackers from
/// 127.0.0.2, then the honest sender from 127.0.0.1, its handshake and `go` already written) is in
/// the listener's queue before the receiver starts, so everything it reads is there at once or never
/// comes, and virtual time moves only to the next handshake deadline. The time at which the honest
/// sender is answered is therefore exact, on any machine under any load.
@Suite struct TransitHandshakeTests {
    static let key = [UInt8](repeating: 0x42, count: 32)

    /// A receiver listening (handshake timeout `handshakeTimeout` s, the attempt 20 s); `attackers`
    /// connections from 127.0.0.2, each sending `junk` (nothing when nil), queued before the honest
    /// sender's. Returns the route the receiver made, or its failure, and the virtual time it took.
    func flood(attackers: Int, junk: [UInt8]?, handshakeTimeout: Double) async throws -> (Result<TransitConnection, WormholeError>, seconds: Double) {
        let simulation = Simulation()
        let clock = TimerClock(simulation.clock)
        let receiver = try TransitConnector(role: .receiver, transitKey: Self.key, relays: [], listen: true,
                                            handshakeTimeout: handshakeTimeout, clock: clock)
        let port = try #require(receiver.hints.direct.first?.port)
        var fds: [Int32] = []
        defer { for fd in fds { close(fd) } }
        for _ in 0..<attackers {
            let fd = try connectFrom("127.0.0.2", toLoopbackPort: port)
            if let junk { writeAll(fd, junk) }
            fds.append(fd)
        }
        // The honest sender: its handshake and `go` (a sender says it once its handshake is answered;
        // the receiver reads it only after answering).
        let honest = try connectFrom("127.0.0.1", toLoopbackPort: port)
        fds.append(honest)
        writeAll(honest, receiver.keys.senderHandshake + Array("go\n".utf8))
        return try await simulation.run {
            let r: Result<TransitConnection, WormholeError>
            do throws(WormholeError) {
                r = .success(try await receiver.connect(to: TransitHints(), timeout: 20))
            } catch {
                r = .failure(error)
            }
            return (r, clock.now())
        }
    }

    @Test("40 connections with a wrong handshake before the peer's: the peer's is answered at once")
    func wrongHandshakesDoNotStopThePeer() async throws {
        var wrong = TransitKeys(key: Self.key).senderHandshake
        wrong[20] ^= 1
        let (r, seconds) = try await flood(attackers: 40, junk: wrong, handshakeTimeout: 10)
        guard case .success(let c) = r else { Issue.record("no connection: \(r)"); return }
        #expect(c.route.hasPrefix("direct from 127.0.0.1"), "\(c.route)")
        #expect(seconds == 0, "each wrong handshake frees its slot at once; the peer was answered after \(seconds) s")
        c.stream.close()
    }

    @Test("40 silent connections hold the 32 slots only until their handshake times out: the peer is answered at 1 s")
    func silentConnectionsTimeOut() async throws {
        let (r, seconds) = try await flood(attackers: 40, junk: nil, handshakeTimeout: 1)
        guard case .success(let c) = r else { Issue.record("no connection: \(r)"); return }
        #expect(c.route.hasPrefix("direct from 127.0.0.1"), "\(c.route)")
        #expect(seconds == 1, "the first 32 time out at 1 s, then the peer is accepted; it was answered after \(seconds) s")
        c.stream.close()
    }

    /// The sender's handshake line crosses relays in the clear: a replay of it, never followed by
    /// `go`, held a listener slot until the whole attempt's deadline (a5978ce waited for `go` that
    /// long). Each replay now holds its slot only for the handshake timeout (1 s here), so the honest
    /// sender behind 40 of them is answered at 1 s; before, all 32 slots stayed taken for the 20 s and
    /// the attempt failed.
    @Test("40 replays of the sender's handshake without `go` hold the slots only for the handshake timeout")
    func replayedHandshakesTimeOut() async throws {
        let (r, seconds) = try await flood(attackers: 40, junk: TransitKeys(key: Self.key).senderHandshake, handshakeTimeout: 1)
        guard case .success(let c) = r else { Issue.record("no connection: \(r)"); return }
        #expect(c.route.hasPrefix("direct from 127.0.0.1"), "\(c.route)")
        #expect(seconds == 1, "the replays time out at 1 s; the peer was answered after \(seconds) s")
        c.stream.close()
    }

    @Test("with 40 silent connections and a handshake timeout longer than the attempt, the attempt fails at its deadline")
    func slotsHeldPastTheAttempt() async throws {
        let (r, seconds) = try await flood(attackers: 40, junk: nil, handshakeTimeout: 30)
        guard case .failure(let e) = r else { Issue.record("connected through 32 taken slots: \(r)"); return }
        #expect(e.description.contains("no transit connection"), "\(e)")
        #expect(seconds == 20, "the attempt's deadline is 20 s; it ended after \(seconds) s")
    }
}
