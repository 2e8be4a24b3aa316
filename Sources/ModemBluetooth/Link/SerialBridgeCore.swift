#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import ModemSockets
import ModemRuntime

/// What a serial port over Bluetooth (`modem bt connect`) does whatever the way down (our own host
/// stack in ``SerialPortBridge``, the kernel's RFCOMM socket in ``BlueZSerialBridge``): reads
/// `input` on a thread of its own at most ``SerialPortBridge/maximumInFlight`` bytes ahead of
/// what left, writes the device's bytes to `output` as they arrive, counts the quiet time after
/// input ended and everything left, and keeps the first outcome. The driver of the way down calls
/// it from one thread (its own), except where noted.
///
/// `@unchecked Sendable`: the input reader thread shares only `inFlight`, `inputEnded`,
/// `readerStopped` and `sendFailure`, under the `flow` condition lock, and the outcome is under a
/// `Mutex`; `lastActivity` and `closingSince` are used on the driver's thread only.
final class SerialBridgeCore: @unchecked Sendable {
    typealias Outcome = SerialPortBridge.Outcome

    /// What the driver should do about the channel now.
    enum Step: Equatable {
        /// Nothing.
        case wait
        /// Input ended, everything left, the device was quiet for the quiet time: close the channel.
        case close
        /// The device did not confirm our close in time: drop the link (the outcome is set to finished).
        case drop
    }

    /// How long the device may take to confirm our close, in seconds.
    static let closeTimeout = 2.0

    private let input: Int32
    private let output: Int32
    private let quietSeconds: Double
    private let isInterrupted: @Sendable () -> Bool
    private let onFinish: @Sendable () -> Void
    private let result = Mutex<Outcome?>(nil)
    private let flow = NSCondition()
    private var inFlight = 0
    private var inputEnded = false
    private var readerStopped = false
    private var sendFailure: String?
    private var lastActivity = 0.0
    private var closingSince: Double?

    /// - Parameter onFinish: called once, with the first outcome (to stop the driver).
    init(input: Int32, output: Int32, quietSeconds: Double, isInterrupted: @escaping @Sendable () -> Bool,
         onFinish: @escaping @Sendable () -> Void) {
        self.input = input
        self.output = output
        self.quietSeconds = quietSeconds
        self.isInterrupted = isInterrupted
        self.onFinish = onFinish
    }

    /// The first outcome (any thread).
    var outcome: Outcome? { result.withLock { $0 } }

    /// Keeps `outcome` if it is the first (any thread); true when it was.
    @discardableResult
    func finish(_ outcome: Outcome) -> Bool {
        let first = result.withLock { r -> Bool in
            guard r == nil else { return false }
            r = outcome
            return true
        }
        if first { onFinish() }
        return first
    }

    /// Asks the interruption check; true (and the outcome ``SerialPortBridge/Outcome/interrupted``) when it says stop.
    func interrupted() -> Bool {
        guard isInterrupted() else { return false }
        finish(.interrupted)
        return true
    }

    /// The channel opened at `now`: the reader starts, handing each chunk of input to `send` (on the
    /// reader's thread), which must later be matched by ``sent(_:)`` or end in ``sendFailed(_:)``.
    func opened(now: Double, send: @escaping @Sendable ([UInt8]) -> Void) {
        lastActivity = now
        DedicatedThread.start(name: "modem-bt-input") { [self] in
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                flow.lock()
                while inFlight >= SerialPortBridge.maximumInFlight && !readerStopped { flow.wait() }
                let stopped = readerStopped || sendFailure != nil
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
                flow.lock()
                inFlight += n
                flow.unlock()
                send(Array(buffer[0..<n]))
            }
        }
    }

    /// `count` bytes of input left for the device (any thread).
    func sent(_ count: Int) {
        flow.lock()
        inFlight = max(0, inFlight - count)
        flow.broadcast()
        flow.unlock()
    }

    /// Sending input failed (any thread): the reader stops; the driver decides what it means.
    func sendFailed(_ reason: String) {
        flow.lock()
        if sendFailure == nil { sendFailure = reason }
        flow.broadcast()
        flow.unlock()
    }

    /// Why sending failed, if it did.
    var sendFailureReason: String? {
        flow.lock()
        defer { flow.unlock() }
        return sendFailure
    }

    /// Stops the reader (it ends after its current read).
    func stopReader() {
        flow.lock()
        readerStopped = true
        flow.broadcast()
        flow.unlock()
    }

    /// The device's bytes: written to `output` whole. False (and the outcome
    /// ``SerialPortBridge/Outcome/outputFailed(_:)``) when writing failed.
    func deliver(_ bytes: [UInt8], now: Double) -> Bool {
        lastActivity = now
        if let failure = writeAll(bytes) {
            finish(.outputFailed(failure))
            return false
        }
        return true
    }

    /// The channel closed: by the device (or lost) unless it is the answer to our close.
    func closed(reason: String, byPeer: Bool) -> Outcome {
        let outcome: Outcome = byPeer || closingSince == nil ? .deviceDisconnected(reason) : .finished
        finish(outcome)
        return outcome
    }

    /// What to do at `now` with `queuedBytes` still waiting below us to leave.
    func step(now: Double, queuedBytes: Int) -> Step {
        if let since = closingSince {
            guard now - since > Self.closeTimeout else { return .wait }
            finish(.finished)
            return .drop
        }
        flow.lock()
        let drained = inputEnded && inFlight == 0
        flow.unlock()
        // Until input ended and all left, sending counts as activity: the quiet time starts after.
        guard drained, queuedBytes == 0 else {
            lastActivity = now
            return .wait
        }
        guard now - lastActivity >= quietSeconds else { return .wait }
        closingSince = now
        return .close
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
                    SocketWaiter.shared.block(&fds, timeoutMilliseconds: 100)
                    continue
                }
                return String(cString: strerror(errno))
            }
            offset += n
        }
        return nil
    }
}
