import ModemMessaging
import Testing

@Suite("Endpoints")
struct EndpointTests {
    @Test("valid endpoints", arguments: [
        ("tcp:127.0.0.1:5000", Endpoint.tcp(host: "127.0.0.1", port: 5000)),
        ("tcp:localhost:1", Endpoint.tcp(host: "localhost", port: 1)),
        ("TCP:example.org:65535", Endpoint.tcp(host: "example.org", port: 65535)),
        ("tcp:[::1]:8000", Endpoint.tcp(host: "::1", port: 8000)),
        ("tcp:[fe80::1%eth0]:22", Endpoint.tcp(host: "fe80::1%eth0", port: 22)),
        ("audio:default", Endpoint.audio(device: "default")),
        ("audio:plughw:1,0", Endpoint.audio(device: "plughw:1,0")),
        ("bt:00:1a:7d:da:71:13", Endpoint.bluetooth(address: "00:1A:7D:DA:71:13")),
    ])
    func valid(text: String, expected: Endpoint) throws {
        #expect(try Endpoint.parse(text) == expected)
        #expect(try Endpoint.parse(expected.description) == expected)
    }

    @Test("invalid endpoints name the bad part", arguments: [
        ("localhost:5000", "has no kind: for TCP write tcp:localhost:5000"),
        ("127.0.0.1:9", "for TCP write tcp:127.0.0.1:9"),
        ("5000", "not an endpoint"),
        ("tcp:127.0.0.1", "port is missing"),
        ("tcp:127.0.0.1:", "port is missing"),
        ("tcp::5000", "host is missing"),
        ("tcp:127.0.0.1:0", "'0' is not a number from 1 to 65535"),
        ("tcp:127.0.0.1:70000", "'70000'"),
        ("tcp:127.0.0.1:http", "'http'"),
        ("tcp:::1:5000", "in brackets"),
        ("tcp:[::1:5000", "closing ']'"),
        ("tcp:[::1]5000", "port is missing after ']'"),
        ("tcp:bad host:5", "not a host name"),
        ("audio:", "sound device is missing"),
        ("bt:00:11:22", "not six hex pairs"),
        ("bt:00:11:22:33:44:GG", "'00:11:22:33:44:GG'"),
        ("ftp:x:1", "unknown kind 'ftp'"),
    ])
    func invalid(text: String, fragment: String) {
        do {
            _ = try Endpoint.parse(text)
            Issue.record("'\(text)' parsed")
        } catch {
            #expect(error.description.contains(fragment), "\(error.description)")
        }
    }

    @Test("a missing or unknown kind says so (the CLI then names wormhole:CODE too); a bad part after a kind does not")
    func kindProblems() {
        for (text, isKind) in [("127.0.0.1:9", true), ("5000", true), ("ftp:x:1", true), ("tcp:127.0.0.1", false), ("bt:00:11", false)] {
            do {
                _ = try Endpoint.parse(text)
                Issue.record("'\(text)' parsed")
            } catch {
                #expect(error.isKindProblem == isKind, "\(text): \(error.description)")
            }
        }
    }
}
