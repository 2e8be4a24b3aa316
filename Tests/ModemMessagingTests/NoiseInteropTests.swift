import Clocks
import ModemCrypto
import Foundation
import ModemMessaging
import ModemRuntime
import ProcessTestSupport
import Testing

/// The independent Noise peer (Python `noiseprotocol`, Tests/scripts/noise_peer.py) in the venv that
/// scripts/msg-venv.sh makes (`$SWIFTMODEM_MSG_PYTHON` when set). The tests carry `.requires(NoisePeer.venv)`:
/// skipped with the reason shown where it is missing, a failure with `SWIFTMODEM_REQUIRE_PEERS=1` (CI).
enum NoisePeer {
    static var venv: Peer { Peer.venv("msg", pythonVariable: "SWIFTMODEM_MSG_PYTHON") }
}

@Suite("Noise session against an independent implementation")
struct NoiseInteropTests {
    @Test("Python noiseprotocol dials our TCP listener: XX handshake, trust, ACCEPT, records both ways, CLOSE/CLOSED",
          .requires(NoisePeer.venv), .timeLimit(.minutes(1)))
    func pythonDialsUs() async throws {
        let python = try NoisePeer.venv.path()
        let keys = try KeyStore(folder: temporaryKeysPath("py"))
        let pythonKey = X25519PrivateKey()
        try keys.trust(name: "pypeer", publicKey: Array(pythonKey.publicKey.rawRepresentation))
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        defer { listener.close() }

        var generator = SystemRandomNumberGenerator()
        let bodies: [[UInt8]] = [Array("one".utf8), [], (0..<60_000).map { _ in UInt8.random(in: 0...255, using: &generator) }, [0]]
        let process = try await ChildProcess(python, [
            messagingPackageRoot + "/Tests/scripts/noise_peer.py", String(listener.port),
            hexString(Array(pythonKey.rawRepresentation)), hexString(try keys.publicKey()),
            String(SessionService.mailbox.rawValue)] + bodies.map { $0.isEmpty ? "" : hexString($0) })

        let session = try await NoiseSession.establish(over: try await listener.accept(), initiator: false,
                                                       options: SessionOptions(userName: "swift", service: .mailbox, keys: keys, clock: TimerClock(TestClock())))
        #expect(session.peer == PeerIdentity(publicKey: Array(pythonKey.publicKey.rawRepresentation), trustedName: "pypeer", claimedName: "pypeer"))
        var received: [[UInt8]] = []
        var end: SessionEnd?
        while end == nil {
            switch await session.receive() {
            case .record(let kind, let body):
                #expect(kind == 0x10)
                received.append(body)
                try await session.send(kind: 0x11, body: body.reversed())
            case .peerClosing:
                await session.close()
            case .ended(let e):
                end = e
            }
        }
        try await process.awaitExit("noise_peer.py's end")
        let text = process.stdoutText + process.stderrText
        #expect(process.status == 0, "\(text)")
        #expect(text.contains("HS2 from swift") && text.contains("accepted by swift") && text.contains("echoes ok: 4") && text.contains("closed"), "\(text)")
        #expect(received == bodies)
        #expect(end == .otherUserQuit)
    }

    @Test("a Python peer whose key is not trusted is refused before any record: FAIL_INVALID_AUTHORIZATION",
          .requires(NoisePeer.venv), .timeLimit(.minutes(1)))
    func untrustedPython() async throws {
        let python = try NoisePeer.venv.path()
        let keys = try KeyStore(folder: temporaryKeysPath("pyu"))
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        let process = try await ChildProcess(python, [
            messagingPackageRoot + "/Tests/scripts/noise_peer.py", String(listener.port),
            hexString(Array(X25519PrivateKey().rawRepresentation)), hexString(try keys.publicKey()), "1", "00"])
        do {
            _ = try await NoiseSession.establish(over: try await listener.accept(), initiator: false,
                                                 options: SessionOptions(userName: "swift", service: .mailbox, keys: keys, clock: TimerClock(TestClock())))
            Issue.record("an untrusted peer was accepted")
        } catch let failure as SessionFailure {
            #expect(failure.seedName == "FAIL_INVALID_AUTHORIZATION")
        }
        try await process.awaitExit("noise_peer.py's end")
        let text = process.stdoutText + process.stderrText
        #expect(process.status != 0)
        #expect(text.contains("expected ACCEPT, got kind 0x02"), "\(text)")  // our REJECT, nothing else
    }
}
