// Moves N bytes of records (64,000-byte bodies by default) through two NoiseSessions over loopback
// TCP in this one process and prints MB/s. Usage: msg-throughput [BYTES] [BODY]
import Foundation
import ModemMessaging

let total = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? (1 << 30) : (1 << 30)
let bodySize = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 64_000 : 64_000
let base = NSTemporaryDirectory() + "msg-throughput-\(getpid())"
let a = try KeyStore(folder: base + "/a"), b = try KeyStore(folder: base + "/b")
try a.trust(name: "b", publicKey: b.publicKey())
try b.trust(name: "a", publicKey: a.publicKey())
defer { try? FileManager.default.removeItem(atPath: base) }

let listener = try TCPListener(host: "127.0.0.1", port: 0)
async let responder = NoiseSession.establish(over: try await listener.accept(), initiator: false,
                                             options: SessionOptions(userName: "b", service: .data, keys: b))
let sender = try await NoiseSession.establish(over: try await TCPTransport.dial(host: "127.0.0.1", port: listener.port),
                                              initiator: true, options: SessionOptions(userName: "a", service: .data, keys: a))
let receiver = try await responder
let body = [UInt8](repeating: 0x5A, count: bodySize)
let records = (total + bodySize - 1) / bodySize
let start = ContinuousClock.now
let sending = Task {
    for _ in 0..<records { try await sender.send(kind: 0x20, body: body) }
    await sender.close()
}
var received = 0
loop: while true {
    switch await receiver.receive() {
    case .record(_, let got): received += got.count
    case .peerClosing: await receiver.close()
    case .ended: break loop
    }
}
try await sending.value
let elapsed = ContinuousClock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
print(String(format: "%d bytes in %d records of %d: %.2f s, %.1f MB/s", received, records, bodySize, seconds, Double(received) / seconds / 1e6))
