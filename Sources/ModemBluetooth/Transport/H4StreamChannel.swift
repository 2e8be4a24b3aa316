#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ModemSockets
import ModemRuntime

/// A byte-stream file descriptor (a TCP socket, a tty) carrying H4: the system calls of
/// ``H4TCPTransport`` and ``H4SerialTransport``, wrapped once. Non-blocking reads go through an
/// ``H4Decoder``; writes finish whole, waiting for room at most `writeTimeout` seconds.
final class H4StreamChannel: Sendable {
    private struct State {
        var fd: Int32
        var decoder = H4Decoder()
        var endOfStream = false
    }

    private let state: Mutex<State>
    private let isSocket: Bool
    /// "tcp:127.0.0.1:5000", for messages.
    let name: String
    private let writeTimeout: Double = 5

    init(fd: Int32, isSocket: Bool, name: String) {
        state = Mutex(State(fd: fd))
        self.isSocket = isSocket
        self.name = name
    }

    deinit { close() }

    var fileDescriptor: Int32 { state.withLock { $0.fd } }

    func send(_ packet: HCIPacket) throws(BluetoothError) {
        let bytes = packet.h4
        let result: BluetoothError? = state.withLock { state in
            guard state.fd >= 0 else { return .transportClosed("\(name) is closed") }
            var offset = 0
            var waited = 0.0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { raw in
                    isSocket
                        ? Glibc.send(state.fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                        : Glibc.write(state.fd, raw.baseAddress! + offset, raw.count - offset)
                }
                if n >= 0 {
                    offset += n
                    continue
                }
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK:
                    guard waited < writeTimeout else {
                        return .transportClosed("\(name) takes no data (nothing written for \(Int(writeTimeout)) s)")
                    }
                    var p = [pollfd(fd: state.fd, events: Int16(POLLOUT), revents: 0)]
                    SocketWaiter.shared.block(&p, timeoutMilliseconds: 100)
                    waited += 0.1
                case EPIPE, ECONNRESET:
                    return .transportClosed("the controller at \(name) closed the connection")
                default:
                    return .transportClosed("cannot write to \(name): \(String(cString: strerror(errno)))")
                }
            }
            return nil
        }
        if let result { throw result }
    }

    func receive() throws(BluetoothError) -> [HCIPacket] {
        let result: Result<[HCIPacket], BluetoothError> = state.withLock { state in
            guard state.fd >= 0 else { return .failure(.transportClosed("\(name) is closed")) }
            if state.endOfStream { return .failure(.transportClosed("the controller at \(name) closed the connection")) }
            var packets: [HCIPacket] = []
            var buffer = [UInt8](repeating: 0, count: 16384)
            // A bounded number of reads per call, so one busy controller cannot starve the driver.
            for _ in 0..<16 {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(state.fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    do throws(MalformedPacket) {
                        packets += try state.decoder.push(Array(buffer[0..<n]))
                    } catch {
                        return .failure(.transportClosed("\(error.reason) on \(name)"))
                    }
                    if n < buffer.count { break }
                    continue
                }
                if n == 0 {
                    // End of stream: hand over what came before it first.
                    if packets.isEmpty { return .failure(.transportClosed("the controller at \(name) closed the connection")) }
                    state.endOfStream = true
                    break
                }
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { break }
                if code == EIO, !isSocket {
                    // A tty whose other end went away.
                    if packets.isEmpty { return .failure(.transportClosed("\(name) went away (EIO)")) }
                    state.endOfStream = true
                    break
                }
                return .failure(.transportClosed("cannot read from \(name): \(String(cString: strerror(code)))"))
            }
            return .success(packets)
        }
        return try result.get()
    }

    func close() {
        state.withLock { state in
            if state.fd >= 0 { _ = Glibc.close(state.fd) }
            state.fd = -1
        }
    }
}
