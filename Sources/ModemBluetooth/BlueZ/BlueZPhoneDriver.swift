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
/// reach the machine through ``withMachine(_:)`` (a `Mutex`-guarded queue and a wake-up pipe); the
/// stream is under a `Mutex`; the thread's end is guarded by a condition lock.
final class BlueZPhoneDriver: PhoneDriver, @unchecked Sendable {
    /// Opens the stream (blocking; on the driver's thread).
    typealias Connect = @Sendable () throws(BluetoothError) -> BlueZRFCOMMStream

    private let connect: Connect
    private let hooks: PhoneDriverHooks
    private let device: String
    private var station: StreamLinkStation<PhoneStateMachine>
    private var ended = false
    private let requests = Mutex<[@Sendable (inout PhoneStateMachine, Double) -> [LinkAction]]>([])
    private let stream = Mutex<BlueZRFCOMMStream?>(nil)
    private let stopFlag = Atomic<Bool>(false)
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = NSCondition()
    private var started = false
    private var done = false
    private let origin = DispatchTime.now().uptimeNanoseconds

    init(device: String, configuration: LinkConfiguration, hooks: PhoneDriverHooks, connect: @escaping Connect) {
        self.device = device
        self.connect = connect
        self.hooks = hooks
        station = StreamLinkStation(machine: PhoneStateMachine(configuration: configuration))
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        } else {
            fds = [-1, -1]
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        if wakeRead >= 0 { Glibc.close(wakeRead) }
        if wakeWrite >= 0 { Glibc.close(wakeWrite) }
    }

    func start() {
        finished.lock()
        started = true
        finished.unlock()
        let thread = Thread { [self] in
            run()
            finished.lock()
            done = true
            finished.broadcast()
            finished.unlock()
        }
        thread.name = "modem-bluez-phone"
        thread.start()
    }

    func withMachine(_ body: @escaping @Sendable (inout PhoneStateMachine, Double) -> [LinkAction]) {
        requests.withLock { $0.append(body) }
        wake()
    }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        stream.withLock { $0 }?.close()
        wake()
        finished.lock()
        while started && !done { finished.wait() }
        finished.unlock()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds - origin) / 1e9 }

    private func run() {
        let opened: BlueZRFCOMMStream
        do {
            opened = try connect()
        } catch {
            if !stopFlag.load(ordering: .relaxed) {
                ended = true
                hooks.onOpenFailure(.transportUnavailable(code: error.seedOpenCode, "cannot connect to \(device): \(error)"))
            }
            return
        }
        stream.withLock { $0 = opened }
        defer { opened.close() }
        var fds = [pollfd(fd: opened.fileDescriptor, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        var drain = [UInt8](repeating: 0, count: 64)
        while !stopFlag.load(ordering: .relaxed) && !ended {
            fds[0].revents = 0
            fds[1].revents = 0
            _ = poll(&fds, 2, 10)
            if fds[1].revents != 0 { _ = Glibc.read(wakeRead, &drain, drain.count) }
            for body in requests.withLock({ r in defer { r.removeAll() }; return r }) {
                carry(station.perform(body(&station.machine, now())), on: opened)
            }
            if ended { break }
            if fds[0].revents != 0 {
                let bytes: [UInt8]
                do {
                    bytes = try opened.read(timeout: 0)
                } catch {
                    lost("\(error)")
                    break
                }
                if !bytes.isEmpty {
                    carry(station.received(bytes: bytes, now: now()), on: opened)
                } else if opened.isClosed {
                    lost("the device closed RFCOMM channel \(opened.channel)")
                    break
                }
            }
            carry(station.tick(now: now()), on: opened)
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
                    lost("\(error)")
                    return
                }
                queue.append(contentsOf: station.transmitted(now: now()))
            case .event(let e):
                hooks.observe(station.machine)
                hooks.onEvent(e)
            case .releaseResources:
                break
            }
        }
        hooks.observe(station.machine)
    }

    private func lost(_ reason: String) {
        guard !ended else { return }
        ended = true
        if !stopFlag.load(ordering: .relaxed) {
            hooks.onFailure(.bluetoothDisconnected, "Bluetooth channel disconnected: \(reason)")
        }
    }
}
#endif
