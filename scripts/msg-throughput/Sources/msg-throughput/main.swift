// Moves BYTES of records (BODY-byte bodies, default 64,000) from one NoiseSession to another over
// loopback TCP and prints MB/s. Usage:
//   msg-throughput [BYTES] [BODY]                 both ends in this process
//   msg-throughput --two-process [BYTES] [BODY]   the receiver in a child process (as in the 1 GiB check)
import Foundation
import ModemMessaging

var arguments = Array(CommandLine.arguments.dropFirst())

/// Receives until the session ends; returns the byte count.
func receiveAll(_ session: NoiseSession) async -> Int {
    var received = 0
    while true {
        switch await session.receive() {
        case .record(_, let got): received += got.count
        case .peerClosing: await session.close()
        case .ended: return received
        }
    }
}

if arguments.first == "--child-receive" {
    // Child: --child-receive PORTFILE KEYDIR
    let keys = try KeyStore(folder: arguments[2])
    let listener = try TCPListener(host: "127.0.0.1", port: 0)
    try String(listener.port).write(toFile: arguments[1], atomically: true, encoding: .utf8)
    let session = try await NoiseSession.establish(over: try await listener.accept(), initiator: false,
                                                   options: SessionOptions(userName: "b", service: .data, keys: keys))
    print(await receiveAll(session))
    exit(0)
}

let twoProcess = arguments.first == "--two-process"
if twoProcess { arguments.removeFirst() }
let total = arguments.count > 0 ? Int(arguments[0]) ?? (1 << 30) : (1 << 30)
let bodySize = arguments.count > 1 ? Int(arguments[1]) ?? 64_000 : 64_000
let base = NSTemporaryDirectory() + "msg-throughput-\(getpid())"
let a = try KeyStore(folder: base + "/a"), b = try KeyStore(folder: base + "/b")
try a.trust(name: "b", publicKey: b.publicKey())
try b.trust(name: "a", publicKey: a.publicKey())
defer { try? FileManager.default.removeItem(atPath: base) }

let body = [UInt8](repeating: 0x5A, count: bodySize)
let records = (total + bodySize - 1) / bodySize
let start: ContinuousClock.Instant
var received = 0
if twoProcess {
    let portFile = base + "/port"
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["--child-receive", portFile, base + "/b"]
    let output = Pipe()
    child.standardOutput = output
    try child.run()
    var port = 0
    while port == 0 {
        try await Task.sleep(for: .milliseconds(20))
        port = Int((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "") ?? 0
    }
    let sender = try await NoiseSession.establish(over: try await TCPTransport.dial(host: "127.0.0.1", port: port),
                                                  initiator: true, options: SessionOptions(userName: "a", service: .data, keys: a))
    start = ContinuousClock.now
    for _ in 0..<records { try await sender.send(kind: 0x20, body: body) }
    await sender.close()
    _ = await receiveAll(sender)
    child.waitUntilExit()
    received = Int(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
} else {
    let listener = try TCPListener(host: "127.0.0.1", port: 0)
    async let responder = NoiseSession.establish(over: try await listener.accept(), initiator: false,
                                                 options: SessionOptions(userName: "b", service: .data, keys: b))
    let sender = try await NoiseSession.establish(over: try await TCPTransport.dial(host: "127.0.0.1", port: listener.port),
                                                  initiator: true, options: SessionOptions(userName: "a", service: .data, keys: a))
    let receiver = try await responder
    start = ContinuousClock.now
    let sending = Task {
        for _ in 0..<records { try await sender.send(kind: 0x20, body: body) }
        await sender.close()
    }
    received = await receiveAll(receiver)
    try await sending.value
}
let elapsed = ContinuousClock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
print(String(format: "%@: %d bytes in %d records of %d: %.2f s, %.1f MB/s", twoProcess ? "two processes" : "one process",
             received, records, bodySize, seconds, Double(received) / seconds / 1e6))
