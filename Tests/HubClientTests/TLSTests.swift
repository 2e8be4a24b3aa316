import Foundation
import HubClient
import HubTestSupport
import ProcessTestSupport
import Testing

/// `allowInvalidCertificates`: a hub on HTTPS with a self-signed certificate made here by openssl.
@Suite struct TLSTests {
    @Test("a self-signed certificate is refused by default and accepted (REST and wss) after allowInvalidCertificates",
          .requires(.executable("/usr/bin/openssl", name: "openssl", remedy: "apt-get install openssl")))
    func selfSignedCertificate() async throws {
        let dir = try TestProcess.tempDir()
        let o = try await TestProcess.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem",
            "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        try #require(o.status == 0, "openssl: \(o.stderrText)")
        let hub = try await LiveHub.start(tls: (dir + "/cert.pem", dir + "/key.pem"))
        do {
            #expect(hub.base.hasPrefix("https://"))
            let c = try HubClient(baseURL: hub.base, clientID: hub.plain.id, clientSecret: hub.plain.secret)
            #expect(!c.allowsInvalidCertificates)  // off by default
            #expect(await c.isReachable() == false)
            do {
                try await c.authenticateClientCredentials()
                Issue.record("an untrusted certificate was accepted by default")
            } catch let e as HubClientError {
                guard case .transport = e else { Issue.record("got \(e)"); return }
            }
            c.allowInvalidCertificates()
            #expect(await c.isReachable())
            try await c.authenticateClientCredentials()
            #expect(try await c.me().clientID == hub.plain.id)
            // The groups socket over wss takes the same setting.
            let conn = try await c.connectGroups()
            try conn.join("secure")
            var it = conn.makeAsyncIterator()
            #expect(try await it.next() == .hello(user: conn.user))
            guard case .user(let u)? = try await it.next() else { Issue.record("no presence over wss"); return }
            #expect(u.group == "secure" && u.user == conn.user)
            await conn.close()
            // And without it, the socket is refused too.
            await #expect(throws: HubClientError.self) {
                _ = try await HubGroupsConnection.connect(baseURL: hub.base, accessToken: c.credentials.client?.accessToken ?? "")
            }
        } catch {
            await hub.stop()
            throw error
        }
        await hub.stop()
    }
}
