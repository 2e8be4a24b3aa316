import Foundation
import ModemWormhole
import ProcessTestSupport
import Testing

/// `wss://` through the public API against `openssl s_server -www` (a separate process, TLS with a
/// self-signed certificate made by `openssl req` in a temporary folder; it answers HTTP, not a WebSocket
/// upgrade, so a connection that got through TLS and verification ends in the upgrade's `.server` error).
@Suite struct TLSClientTests {
    static let openssl = Peer.tool("openssl")

    /// A temporary folder with a self-signed certificate for `localhost` only (no IP address) in
    /// `localhost.crt`/`.key`, and one for `other.example` and 127.0.0.1 in `other.crt`/`.key`.
    final class Certificates: Sendable {
        let folder: String
        var localhost: String { folder + "/localhost.crt" }
        var other: String { folder + "/other.crt" }

        init() async throws {
            folder = NSTemporaryDirectory() + "tls-client-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (name, cn, sans) in [("localhost", "localhost", "DNS:localhost"), ("other", "other.example", "DNS:other.example,IP:127.0.0.1")] {
                let r = try await runProcess(try TLSClientTests.openssl.path(), [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                    "-keyout", "\(folder)/\(name).key", "-out", "\(folder)/\(name).crt", "-subj", "/CN=\(cn)", "-addext", "subjectAltName=\(sans)",
                ])
                #expect(r.status == 0, "\(r)")
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: folder) }

        /// `openssl s_server -www` on a free port of 127.0.0.1 with the certificate `name`; it and its port.
        func server(_ name: String) async throws -> (ChildProcess, Int) {
            let child = try await ChildProcess(try TLSClientTests.openssl.path(), [
                "s_server", "-www", "-accept", "127.0.0.1:0", "-cert", "\(folder)/\(name).crt", "-key", "\(folder)/\(name).key",
            ], name: "s_server")
            return (child, try await child.announcedNumber(after: "ACCEPT 127.0.0.1:", on: .stdout))
        }
    }

    private func connectError(_ url: String, trust: TLSTrust) async -> WormholeError? {
        var u: WebSocketURL
        do { u = try WebSocketURL(url) } catch { return error }
        u.trust = trust
        do {
            let client = try await WebSocketClient.connect(u, timeout: 60)
            await client.close()
            return nil
        } catch {
            return error
        }
    }

    @Test(.requires(openssl), .timeLimit(.minutes(2)))
    func trustedCertificateGetsThroughTLS() async throws {
        let certs = try await Certificates()
        let (server, port) = try await certs.server("localhost")
        defer { server.kill() }
        let e = await connectError("wss://localhost:\(port)/v1", trust: TLSTrust(certificateFiles: [certs.localhost]))
        #expect(e?.kind == .server && e?.description.contains("is not a WebSocket endpoint") == true, "\(String(describing: e))")
        #expect(e?.description.contains("wss://localhost:\(port)/v1") == true, "\(String(describing: e))")
    }

    @Test(.requires(openssl), .timeLimit(.minutes(2)))
    func untrustedCertificateIsRefused() async throws {
        let certs = try await Certificates()
        let (server, port) = try await certs.server("localhost")
        defer { server.kill() }
        let e = await connectError("wss://localhost:\(port)/v1", trust: TLSTrust(certificateFiles: [certs.other]))
        #expect(e?.kind == .certificate, "\(String(describing: e))")
        #expect(e?.description == "wss://localhost:\(port): certificate verify failed: self-signed certificate", "\(String(describing: e))")
    }

    @Test(.requires(openssl), .timeLimit(.minutes(2)))
    func certificateForAnotherNameOrAddressIsRefused() async throws {
        let certs = try await Certificates()
        // A trusted certificate for other.example (and 127.0.0.1), reached as localhost.
        let (other, otherPort) = try await certs.server("other")
        defer { other.kill() }
        let byName = await connectError("wss://localhost:\(otherPort)/v1", trust: TLSTrust(certificateFiles: [certs.other]))
        #expect(byName?.kind == .certificateNotForHost && byName?.description.contains("hostname mismatch (the certificate is not for localhost)") == true,
                "\(String(describing: byName))")
        // The same certificate reached by its IP address gets through TLS.
        let byIP = await connectError("wss://127.0.0.1:\(otherPort)/v1", trust: TLSTrust(certificateFiles: [certs.other]))
        #expect(byIP?.kind == .server, "\(String(describing: byIP))")
        // A trusted certificate for localhost alone, reached by its IP address.
        let (local, localPort) = try await certs.server("localhost")
        defer { local.kill() }
        let ip = await connectError("wss://127.0.0.1:\(localPort)/v1", trust: TLSTrust(certificateFiles: [certs.localhost]))
        #expect(ip?.kind == .certificateNotForHost && ip?.description.contains("IP address mismatch") == true, "\(String(describing: ip))")
    }

    @Test func certificateFilesAreChecked() throws {
        let e = #expect(throws: WormholeError.self) { try TLSTrust(certificateFiles: ["/nonexistent/ca.pem"]).validate() }
        #expect(e?.kind == .local && e?.description.contains("/nonexistent/ca.pem") == true)
        try TLSTrust.system.validate()
    }
}
