#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A serial port over Bluetooth between two file descriptors and a device: what arrives on `input`
/// goes to the device, the device's bytes go to `output` as they arrive. This is `modem bt connect`.
///
/// After `input` ends and everything was sent, the bridge waits until `quietSeconds` pass with
/// nothing arriving, closes the channel and the link, and ends with ``Outcome/finished``. When the
/// device goes first, every byte that arrived has been written and the outcome names the reason.
///
/// `@unchecked Sendable`: the input reader thread shares only `inFlight`, `inputEnded` and
/// `readerStopped`, under the `flow` condition lock; everything else is used on the host driver's thread.
public final class SerialPortBridge: HostClient, @unchecked Sendable {
    /// How a bridge ended.
    public enum Outcome: Sendable, Equatable {
        /// Input ended, the device went quiet, the link was closed by us.
        case finished
        /// The device (or the link) went away first; the reason in words.
        case deviceDisconnected(String)
        /// The channel could not be opened (page timeout, no Serial Port service, RFCOMM refused).
        case openFailed(String)
        /// The controller or its transport failed.
        case controllerFailed(String)
        /// Writing the device's bytes to `output` failed.
        case outputFailed(String)
        /// ``run(transport:address:channel:input:output:quietSeconds:gap:isInterrupted:onOpened:)``'s interruption check said stop.
        case interrupted
    }

    /// Bytes the input reader may have handed over that have not yet left for the controller.
    public static let maximumInFlight = 64 * 1024

    private let address: BDAddress
    private let channel: UInt8?
    private let input: Int32
    private let output: Int32
    private let quietSeconds: Double
    private let isInterrupted: @Sendable () -> Bool
    private let onOpened: @Sendable (SerialChannelID) -> Void
    private weak var driver: HostDriver?
    private var request: Int?
    private var open: SerialChannelID?
    /// When bytes last arrived, or input was last still being sent: the quiet time counts from here.
    private var lastActivity = 0.0
    private var closingSince: Double?
    private let result = Mutex<Outcome?>(nil)
    /// Shared with the input reader: bytes in flight and whether input ended.
    private let flow = NSCondition()
    private var inFlight = 0
    private var inputEnded = false
    private var readerStopped = false

    private init(address: BDAddress, channel: UInt8?, input: Int32, output: Int32, quietSeconds: Double,
                 isInterrupted: @escaping @Sendable () -> Bool, onOpened: @escaping @Sendable (SerialChannelID) -> Void) {
        self.address = address
        self.channel = channel
        self.input = input
        self.output = output
        self.quietSeconds = quietSeconds
        self.isInterrupted = isInterrupted
        self.onOpened = onOpened
    }

    /// Runs a bridge to the end (blocking the calling thread).
    /// - Parameters:
    ///   - transport: the controller.
    ///   - address: the device.
    ///   - channel: its RFCOMM server channel; nil looks it up by SDP (Serial Port, 0x1101).
    ///   - input: read until it ends; its bytes go to the device.
    ///   - output: the device's bytes are written here.
    ///   - quietSeconds: how long to wait for more bytes after `input` ended and all was sent.
    ///   - gap: controller options (ACL overrides); the role is always central.
    ///   - isInterrupted: polled; true ends the bridge (``Outcome/interrupted``).
    ///   - onOpened: called once the channel is open.
    public static func run(transport: any HCITransport, address: BDAddress, channel: UInt8?, input: Int32, output: Int32,
                           quietSeconds: Double = 2, gap: GAPConfiguration = GAPConfiguration(role: .central),
                           isInterrupted: @escaping @Sendable () -> Bool = { false },
                           onOpened: @escaping @Sendable (SerialChannelID) -> Void = { _ in }) -> Outcome {
        var gap = gap
        gap.role = .central
        let bridge = SerialPortBridge(address: address, channel: channel, input: input, output: output, quietSeconds: quietSeconds,
                                      isInterrupted: isInterrupted, onOpened: onOpened)
        let driver = HostDriver(transport: transport, stack: HostStack(configuration: HostConfiguration(gap: gap)), client: bridge)
        bridge.driver = driver
        driver.start()
        driver.waitUntilStopped()
        bridge.flow.lock()
        bridge.readerStopped = true
        bridge.flow.broadcast()
        bridge.flow.unlock()
        return bridge.result.withLock { $0 } ?? .controllerFailed("the host stopped without a result")
    }

    public func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction] {
        switch action {
        case .ready:
            let (id, actions) = stack.openSerialPort(to: address, channel: channel, now: now)
            request = id
            return actions
        case .failed(let reason):
            finish(.controllerFailed(reason))
        case .openFailed(let id, let reason) where id == request:
            finish(.openFailed(reason))
        case .opened(let id, _, let incoming) where !incoming && open == nil:
            open = id
            lastActivity = now
            onOpened(id)
            startReader(channel: id)
        case .received(let id, let bytes) where id == open:
            lastActivity = now
            if let failure = writeAll(bytes) {
                finish(.outputFailed(failure))
                return stack.disconnect(handle: id.handle, now: now)
            }
        case .sent(let id, let bytes) where id == open:
            flow.lock()
            inFlight = max(0, inFlight - bytes)
            flow.broadcast()
            flow.unlock()
        case .closed(let id, let reason, let byPeer) where id == open:
            if byPeer || closingSince == nil {
                finish(.deviceDisconnected(reason))
            } else {
                finish(.finished)
                return stack.disconnect(handle: id.handle, now: now)
            }
        default:
            break
        }
        return []
    }

    public func host(_ stack: inout HostStack, tick now: Double) -> [HostAction] {
        if isInterrupted() {
            finish(.interrupted)
            if let open { return stack.disconnect(handle: open.handle, now: now) }
            return []
        }
        guard let open else { return [] }
        if let since = closingSince {
            // The device did not confirm our close within 2 s: drop the link.
            if now - since > 2 {
                finish(.finished)
                return stack.disconnect(handle: open.handle, now: now)
            }
            return []
        }
        flow.lock()
        let drained = inputEnded && inFlight == 0
        flow.unlock()
        // Until input ended and all left, sending counts as activity: the quiet time starts after.
        guard drained, stack.queuedBytes(open) == 0 else {
            lastActivity = now
            return []
        }
        if now - lastActivity >= quietSeconds {
            closingSince = now
            return stack.close(open, now: now)
        }
        return []
    }

    public func hostStopped(failure: String?) {
        if let failure { finish(.controllerFailed(failure)) }
    }

    private func finish(_ outcome: Outcome) {
        let first = result.withLock { r -> Bool in
            guard r == nil else { return false }
            r = outcome
            return true
        }
        if first { driver?.requestStop() }
    }

    /// Writes every byte to `output` (retrying short writes and interruptions); nil, or why it failed.
    private func writeAll(_ bytes: [UInt8]) -> String? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    var fds = [pollfd(fd: output, events: Int16(POLLOUT), revents: 0)]
                    _ = Glibc.poll(&fds, 1, 100)
                    continue
                }
                return String(cString: strerror(errno))
            }
            offset += n
        }
        return nil
    }

    /// Reads `input` on a thread of its own and hands its bytes to the host, at most
    /// ``maximumInFlight`` bytes ahead of what left for the controller.
    private func startReader(channel: SerialChannelID) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                flow.lock()
                while inFlight >= Self.maximumInFlight && !readerStopped { flow.wait() }
                let stopped = readerStopped
                flow.unlock()
                if stopped { return }
                let n = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    flow.lock()
                    inputEnded = true
                    flow.unlock()
                    return
                }
                let chunk = Array(buffer[0..<n])
                flow.lock()
                inFlight += n
                flow.unlock()
                driver?.perform { stack, now in stack.write(channel, chunk, now: now) }
            }
        }
        thread.name = "modem-bt-input"
        thread.start()
    }
}
