import Foundation
import Testing
import ModemAudio
import ModemCodecs
@testable import SwiftModem
#if canImport(Glibc)
import Glibc
#endif

/// A KISS client for the tests: a TCP connection to 127.0.0.1, non-blocking after connect.
final class TNCTestClient {
    private(set) var fd: Int32
    private var decoder = KISSDecoder()
    /// KISS frames received so far.
    private(set) var frames: [KISSFrame] = []
    /// Whether the server closed the connection.
    private(set) var closedByServer = false

    /// Connects; `receiveBufferBytes` shrinks the kernel's receive buffer (before connecting).
    init(port: Int, receiveBufferBytes: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TNCTestFailure("socket: errno \(errno)") }
        if let bytes = receiveBufferBytes {
            var value = Int32(bytes)
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TNCTestFailure("connect to 127.0.0.1:\(port): errno \(code)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close() }

    /// Sends all of `bytes` (the kernel buffer is large enough for the tests' amounts).
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        let deadline = Date().addingTimeInterval(5)
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { offset += n; continue }
            if n < 0, errno == EAGAIN || errno == EINTR, Date() < deadline { usleep(1000); continue }
            throw TNCTestFailure("send: errno \(errno)")
        }
    }

    /// Reads what has arrived; returns the number of bytes.
    @discardableResult
    func receive() -> Int {
        guard fd >= 0 else { return 0 }
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                total += n
                frames += decoder.decode(buffer[0..<n])
                continue
            }
            if n == 0 { closedByServer = true }
            if n < 0, errno != EAGAIN, errno != EINTR { closedByServer = true }
            return total
        }
    }

    /// The payloads of the data frames received.
    var dataPayloads: [[UInt8]] { frames.filter { $0.command == .dataFrame }.map(\.payload) }

    /// Closes the connection; `reset` makes it abortive (RST, as a crashed client).
    func close(reset: Bool = false) {
        guard fd >= 0 else { return }
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        Glibc.close(fd)
        fd = -1
    }
}

struct TNCTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Audio in memory, as a source.
final class TNCMemorySource: AudioSource {
    let sampleRate: Int
    private let samples: [Float]
    private(set) var position = 0
    init(_ samples: [Float], sampleRate: Int) {
        self.samples = samples
        self.sampleRate = sampleRate
    }
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let n = min(buffer.count, samples.count - position)
        for i in 0..<n { buffer[i] = samples[position + i] }
        position += n
        return n
    }
}

/// Audio in memory, as a sink.
final class TNCMemorySink: AudioSink {
    let sampleRate: Int
    private(set) var samples: [Float] = []
    private(set) var finished = false
    init(sampleRate: Int) { self.sampleRate = sampleRate }
    func write(_ samples: UnsafeBufferPointer<Float>) throws {
        precondition(!finished, "write after finish")
        self.samples.append(contentsOf: samples)
    }
    func finish() throws { finished = true }
}

enum TNCFixtures {
    static let settings = try! ModemSettings(profile: "bell202", framing: "ax25")
    static let lines = [
        "N0CALL>APRS:first frame of the tnc test",
        "WB2OSZ-15>TEST,WIDE1-1,WIDE2-2:The quick brown fox jumps over the lazy dog 0123456789",
        "K1ABC-7>APZ123,RELAY*,WIDE2-1:!4237.14N/07120.83W>mobile",
        "Q1XYZ>CQ:binary <0x01><0x02><0xc0><0xdb>",
        "N0CALL-9>APRS:fifth and last",
    ]
    static var frames: [AX25Frame] { lines.map { try! AX25Frame(monitorLine: $0) } }

    /// A WAV file of `lines` made with ``PacketTransmitter``; returns its path (caller removes it).
    static func wav(lines: [String] = lines, sampleRate: Int = 44100, name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("swiftmodem-tnc-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wav").path
        let writer = try AudioFileWriter(path: path, sampleRate: sampleRate)
        let tx = try PacketTransmitter(settings: settings, sink: writer, gapSeconds: 0.3)
        for line in lines { try tx.send(try AX25Frame(monitorLine: line)) }
        try tx.finish()
        return path
    }

    /// The frames (monitor lines) our receiver finds in `samples`.
    static func decode(_ samples: [Float], sampleRate: Int) throws -> [String] {
        let receiver = try PacketReceiver(settings: settings, source: TNCMemorySource([], sampleRate: sampleRate))
        var lines = samples.withUnsafeBufferPointer { receiver.process($0) }.map(\.monitorLine)
        let tail = [Float](repeating: 0, count: sampleRate / 2)
        lines += tail.withUnsafeBufferPointer { receiver.process($0) }.map(\.monitorLine)
        _ = receiver.finish()
        return lines
    }
}

/// Steps `tnc` (and lets `clients` read) until `done` holds or `seconds` pass; returns whether it held.
@discardableResult
func tncPump(_ tnc: TNC, clients: [TNCTestClient] = [], seconds: Double = 5, until done: () -> Bool) throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        try tnc.step(timeoutMilliseconds: 2)
        for c in clients { c.receive() }
        if done() { return true }
    }
    return done()
}

/// Polls `server` (and lets `clients` read) until `done` holds or `seconds` pass; returns the events.
func tncPump(_ server: KISSServer, clients: [TNCTestClient] = [], seconds: Double = 5,
          until done: ([KISSServerEvent]) -> Bool) throws -> [KISSServerEvent] {
    let deadline = Date().addingTimeInterval(seconds)
    var events: [KISSServerEvent] = []
    while Date() < deadline {
        events += try server.poll(timeoutMilliseconds: 2)
        for c in clients { c.receive() }
        if done(events) { break }
    }
    return events
}
