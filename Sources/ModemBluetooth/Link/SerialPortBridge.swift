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
/// The way-independent half (input reader, output, quiet time, outcome) is ``SerialBridgeCore``,
/// shared with ``BlueZSerialBridge`` (the same command over the kernel's RFCOMM socket).
///
/// `@unchecked Sendable`: `request` and `open` are used on the host driver's thread only; the
/// core guards what it shares with the input reader; the driver reference is under a `Mutex`.
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
    private let onOpened: @Sendable (SerialChannelID) -> Void
    private let core: SerialBridgeCore
    private let driverBox = DriverBox()
    private var request: Int?
    private var open: SerialChannelID?

    /// The driver, set once before it starts; read by the core's finish from any thread.
    private final class DriverBox: Sendable {
        let driver = Mutex<HostDriver?>(nil)
    }

    private init(address: BDAddress, channel: UInt8?, input: Int32, output: Int32, quietSeconds: Double,
                 isInterrupted: @escaping @Sendable () -> Bool, onOpened: @escaping @Sendable (SerialChannelID) -> Void) {
        self.address = address
        self.channel = channel
        self.onOpened = onOpened
        let box = driverBox
        core = SerialBridgeCore(input: input, output: output, quietSeconds: quietSeconds, isInterrupted: isInterrupted,
                                onFinish: { box.driver.withLock { $0 }?.requestStop() })
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
        bridge.driverBox.driver.withLock { $0 = driver }
        driver.start()
        driver.waitUntilStopped()
        bridge.core.stopReader()
        bridge.driverBox.driver.withLock { $0 = nil }
        return bridge.core.outcome ?? .controllerFailed("the host stopped without a result")
    }

    public func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction] {
        switch action {
        case .ready:
            let (id, actions) = stack.openSerialPort(to: address, channel: channel, now: now)
            request = id
            return actions
        case .failed(let reason):
            core.finish(.controllerFailed(reason))
        case .openFailed(let id, let reason) where id == request:
            core.finish(.openFailed(reason))
        case .opened(let id, _, let incoming) where !incoming && open == nil:
            open = id
            onOpened(id)
            let box = driverBox
            core.opened(now: now) { chunk in
                box.driver.withLock { $0 }?.perform { stack, now in stack.write(id, chunk, now: now) }
            }
        case .received(let id, let bytes) where id == open:
            if !core.deliver(bytes, now: now) { return stack.disconnect(handle: id.handle, now: now) }
        case .sent(let id, let bytes) where id == open:
            core.sent(bytes)
        case .closed(let id, let reason, let byPeer) where id == open:
            if core.closed(reason: reason, byPeer: byPeer) == .finished { return stack.disconnect(handle: id.handle, now: now) }
        default:
            break
        }
        return []
    }

    public func host(_ stack: inout HostStack, tick now: Double) -> [HostAction] {
        if core.interrupted() {
            if let open { return stack.disconnect(handle: open.handle, now: now) }
            return []
        }
        guard let open else { return [] }
        switch core.step(now: now, queuedBytes: stack.queuedBytes(open)) {
        case .wait: return []
        case .close: return stack.close(open, now: now)
        case .drop: return stack.disconnect(handle: open.handle, now: now)
        }
    }

    public func hostStopped(failure: String?) {
        if let failure { core.finish(.controllerFailed(failure)) }
    }
}
