#if canImport(Glibc)
import Glibc
import Foundation
import ModemLinkProtocol
import Synchronization

/// Runs a phone's state machine on the kernel's RFCOMM socket (the ``BluetoothManager`` without an
/// HCI transport): connects on its own thread (SDP, RFCOMM), then writes the machine's frames on the
/// stream and feeds it what arrives (``ModemLinkProtocol/StreamLinkStation``, as the host-stack
/// driver does on our own RFCOMM); reports error 20 when the stream ends.
///
/// `@unchecked Sendable`: `station` and `ended` are used on the driver's thread only; other threads
/// reach the machine through ``withMachine(_:)`` (the ``DriverThread``'s queue); the stream is under a `Mutex`.
final class BlueZPhoneDriver: BluetoothPhoneWay, @unchecked Sendable {
    /// Opens the stream (blocking; on the driver's thread).
    typealias Connect = @Sendable () throws(BluetoothError) -> BlueZRFCOMMStream

    weak var owner: (any BluetoothPhoneChannelOwner)?
    private let connect: Connect
    private let address: BDAddress
    private var station: StreamLinkStation<PhoneStateMachine>
    private var ended = false
    private let stream = Mutex<BlueZRFCOMMStream?>(nil)
    private let thread = DriverThread<@Sendable (inout PhoneStateMachine, Double) -> [LinkAction]>(name: "modem-bluez-phone")

    init(address: BDAddress, machine: PhoneStateMachine, connect: @escaping Connect) {
        self.address = address
        self.connect = connect
        station = StreamLinkStation(machine: machine)
    }

    func start() { thread.start { [self] in run() } }

    func withMachine(_ body: @escaping @Sendable (inout PhoneStateMachine, Double) -> [LinkAction]) { thread.enqueue(body) }

    func stop() {
        thread.requestStop()
        stream.withLock { $0 }?.close()
        thread.waitUntilStopped()
    }

    private func now() -> Double { thread.now }

    private func run() {
        let opened: BlueZRFCOMMStream
        do {
            opened = try connect()
        } catch {
            if !thread.stopRequested {
                ended = true
                owner?.phoneChannel(failed: .connect(address: address, reason: "\(error)", code: error.seedOpenCode))
            }
            return
        }
        stream.withLock { $0 = opened }
        defer { opened.close() }
        while !thread.stopRequested && !ended {
            let readable = thread.wait(for: opened.fileDescriptor, milliseconds: 10)
            for body in thread.takeRequests() {
                carry(station.perform(body(&station.machine, now())), on: opened)
            }
            if ended { break }
            if readable {
                let bytes: [UInt8]
                do {
                    bytes = try opened.read(timeout: 0)
                } catch {
                    lost(Self.words(for: error, on: opened))
                    break
                }
                if !bytes.isEmpty {
                    carry(station.received(bytes: bytes, now: now()), on: opened)
                } else if opened.isClosed {
                    lost("the device closed RFCOMM channel \(opened.channel)")
                    break
                }
            }
            var actions = station.tick(now: now())
            if let owner { actions += station.perform(owner.phoneChannel(service: &station.machine, now: now())) }
            carry(actions, on: opened)
        }
    }

    /// Carries out the station's actions: writes go on the stream (the kernel takes them: they have
    /// left, and the machine is told so), events to the session.
    private func carry(_ actions: [StreamLinkAction], on stream: BlueZRFCOMMStream) {
        var queue = actions[...]
        while let action = queue.popFirst(), !ended {
            switch action {
            case .write(let bytes):
                do {
                    try stream.write(bytes)
                } catch {
                    lost(Self.words(for: error, on: stream))
                    return
                }
                queue.append(contentsOf: station.transmitted(now: now()))
            case .event(let e):
                owner?.phoneChannel(observe: station.machine)
                owner?.phoneChannel(event: e, machine: station.machine, now: now())
            case .releaseResources:
                break
            }
        }
        owner?.phoneChannel(observe: station.machine)
    }

    /// Why the stream ended, in the words of the end of the stream when the device reset it (a
    /// device that goes with bytes unread resets instead of closing: the same event for the user).
    private static func words(for error: BluetoothError, on stream: BlueZRFCOMMStream) -> String {
        if case .disconnected(let detail) = error { return "the device closed RFCOMM channel \(stream.channel) (\(detail))" }
        return "\(error)"
    }

    private func lost(_ reason: String) {
        guard !ended else { return }
        ended = true
        if !thread.stopRequested {
            owner?.phoneChannel(failed: .closed(reason))
        }
    }
}
#endif
