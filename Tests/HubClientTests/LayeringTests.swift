import Foundation
import HubTestSupport
import Testing

/// `modem` and the Modem* libraries stay free of the hub: no hub target, HTTP or WebSocket library is
/// imported there (`modem hub` runs the separate `modem-hub` executable instead).
@Test("Sources/modem and Sources/Modem* import no hub, NIO, HTTP or database module")
func modemStaysLean() throws {
    let sources = TestProcess.packageRoot + "/Sources"
    // ModemFuzzTargets is left out on purpose: the fuzz registry covers every parser of outside bytes,
    // HubCore's included, and nothing of the modem links it (a library for the Fuzz/ package only).
    let folders = try FileManager.default.contentsOfDirectory(atPath: sources)
        .filter { ($0 == "modem" || $0.hasPrefix("Modem") || $0 == "SwiftModem") && $0 != "ModemFuzzTargets" }
    #expect(folders.contains("modem") && folders.contains("ModemMessaging"))
    let forbidden = ["HubClient", "HubCore", "HubStore", "HubServer", "AsyncHTTPClient", "Hummingbird", "HummingbirdWSClient",
                     "NIOCore", "NIOPosix", "NIOSSL", "PostgresNIO", "SQLiteNIO", "WSClient"]
    var files = 0
    for folder in folders {
        let root = sources + "/" + folder
        for case let file as String in FileManager.default.enumerator(atPath: root) ?? NSEnumerator() where file.hasSuffix(".swift") {
            files += 1
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.contains(" import ") {
                let module = line.split(separator: " ").last.map(String.init) ?? ""
                #expect(!forbidden.contains(module), "\(folder)/\(file) imports \(module)")
            }
        }
    }
    #expect(files > 20)
}
