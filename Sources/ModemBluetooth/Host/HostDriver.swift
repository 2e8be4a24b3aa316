#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// What runs on top of a ``HostDriver``: a command, the Bluetooth manager, the device emulator.
/// Its methods are called on the driver's thread only, one at a time, with the stack to act on;
/// the actions they return are carried out in turn (``HostAction/send(_:)`` by the driver, the
/// others handed back to the client).
public protocol HostClient: AnyObject {
    /// An action of the stack (never ``HostAction/send(_:)``).
    func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction]
    /// Time passes (about every ``HostDriver/tickInterval``).
    func host(_ stack: inout HostStack, tick now: Double) -> [HostAction]
    /// The driver stopped: `failure` names why when it was not asked to (the transport closed).
    func hostStopped(failure: String?)
}

/// Runs a ``HostStack`` on its own thread over an ``HCITransport``: waits (`poll`) for packets from
/// the controller or calls from other threads, keeps the timers on a monotonic clock, sends what the
/// stack asks for and hands every other action to its ``HostClient``.
///
/// `@unchecked Sendable`: the stack and the client are used on the driver thread only (the client's
/// methods run there; other threads reach the stack through ``perform(_:)``, the ``DriverThread``'s
/// `Mutex`-guarded queue and wake-up pipe).
public final class HostDriver: @unchecked Sendable {
    /// How often the stack's timers are looked at, in seconds.
    public let tickInterval: Double
    private let transport: any HCITransport
    private var stack: HostStack
    private let client: any HostClient
    private let thread = DriverThread<@Sendable (inout HostStack, Double) -> [HostAction]>(name: "modem-bt-host")

    /// Creates a driver (not started). The transport and the client are used from the driver thread only from now on.
    public init(transport: any HCITransport, stack: HostStack, client: any HostClient, tickInterval: Double = 0.01) {
        self.transport = transport
        self.stack = stack
        self.client = client
        self.tickInterval = tickInterval
    }

    /// Seconds since the driver was created (the stack's clock).
    public var now: Double { thread.now }

    /// Starts the thread (once) and the stack (Reset and the controller's set-up).
    public func start() { thread.start { [self] in loop() } }

    /// Runs `body` on the driver thread with the stack and the clock; its actions are carried out.
    public func perform(_ body: @escaping @Sendable (inout HostStack, Double) -> [HostAction]) { thread.enqueue(body) }

    /// Asks the thread to stop and waits until it has; the transport is closed.
    public func stop() { thread.stop() }

    /// Asks the thread to stop without waiting (from the driver thread itself).
    public func requestStop() { thread.requestStop() }

    /// Waits until the thread ended (by ``stop()``, ``requestStop()`` or a transport failure).
    public func waitUntilStopped() { thread.waitUntilStopped() }

    /// Carries out actions until none are left; a failed send ends the loop with that failure.
    private func run(_ initial: [HostAction], now: Double) throws(BluetoothError) {
        var queue = initial[...]
        while let action = queue.popFirst() {
            if case .send(let packet) = action {
                try transport.send(packet)
            } else {
                let more = client.host(&stack, did: action, now: now)
                if !more.isEmpty { queue = queue + more }
            }
        }
    }

    private func loop() {
        var failure: String?
        var nextTick = 0.0
        do throws(BluetoothError) {
            try run(stack.start(now: now), now: now)
            while !thread.stopRequested {
                let wait = Int32(((nextTick - now) * 1000).rounded(.up))
                if thread.wait(for: transport.fileDescriptor, milliseconds: wait) {
                    let packets = try transport.receive()
                    for packet in packets {
                        let t = now
                        try run(stack.received(packet, now: t), now: t)
                    }
                }
                for body in thread.takeRequests() {
                    let t = now
                    try run(body(&stack, t), now: t)
                }
                let t = now
                if t >= nextTick {
                    nextTick = t + tickInterval
                    try run(stack.tick(now: t), now: t)
                    try run(client.host(&stack, tick: t), now: t)
                }
            }
        } catch {
            failure = error.description
        }
        transport.close()
        client.hostStopped(failure: thread.stopRequested ? nil : failure)
    }
}
