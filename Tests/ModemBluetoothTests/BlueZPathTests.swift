import Foundation
@testable import ModemBluetooth
import ModemLinkProtocol
import ModemLinkTransport
import ModemTestSupport
import ModemTransport
import Synchronization
import ProcessTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs a blocking call (the seed's facade waits on async work) on a thread of its own, not on the
/// concurrency pool that work needs.
private func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { c in Thread { c.resume(returning: body()) }.start() }
}

/// A flag shared with threads.
private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}

/// The kernel way down (BlueZ) without a kernel that has Bluetooth: the kernel's structures as
/// bytes, the ioctl numbers, the name requests as a value, and the SDP look-up, the serial-port
/// bridge and the Bluetooth manager on Unix socket pairs standing in for the L2CAP and RFCOMM sockets.
/// Frames a stand-in device received, read by the test.
private final class FrameLog: Sendable {
    let value = Mutex<[[UInt8]]>([])
}

@Suite("BlueZ way down (no kernel Bluetooth needed)", .serialized)
struct BlueZPathTests {
    fileprivate let device = BDAddress("00:1B:DC:00:00:0B")!
    private let other = BDAddress("00:1B:DC:00:01:02")!

    /// Whether this kernel refuses AF_BLUETOOTH (the case these no-kernel checks are about).
    fileprivate static var kernelHasNoBluetooth: Bool {
        let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)
        if fd >= 0 { close(fd); return false }
        return errno == EAFNOSUPPORT
    }

    fileprivate static let noKernelLine =
        "no Bluetooth: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); use --hci tcp:HOST:PORT or --hci serial:DEVICE"

    // MARK: The kernel's structures

    @Test("ioctl numbers are the kernel headers' _IOR('H', 211/240, int)")
    func ioctlNumbers() {
        // Values printed by a C program with <linux/ioctl.h>: _IOR('H', 211, int), _IOR('H', 240, int).
        #expect(BlueZIoctl.getDeviceInfo == 0x8004_48D3)
        #expect(BlueZIoctl.inquiry == 0x8004_48F0)
        // The builder itself, on another of the headers' numbers (HCIGETDEVLIST = _IOR('H', 210, int)).
        #expect(BlueZIoctl.read(type: UInt8(ascii: "H"), number: 210, size: 4) == 0x8004_48D2)
    }

    @Test("hci_inquiry_req: device, cache flush, GIAC least significant byte first, length in 1.28 s units, 255 responses")
    func inquiryRequestLayout() {
        let request = BlueZInquiry.request(device: 0x0102, seconds: 5)
        #expect(request.count == 10 + 255 * 14)
        #expect(Array(request[0..<10]) == [0x02, 0x01, 0x01, 0x00, 0x33, 0x8B, 0x9E, 4, 255, 0])
        #expect(request[10...].allSatisfy { $0 == 0 })
        #expect(BlueZInquiry.length(seconds: 1) == 1)
        #expect(BlueZInquiry.length(seconds: 1.28) == 1)
        #expect(BlueZInquiry.length(seconds: 1.3) == 2)
        #expect(BlueZInquiry.length(seconds: 60) == 47)
        #expect(BlueZInquiry.length(seconds: 1000) == 48)
        #expect(BlueZInquiry.length(seconds: .nan) == 1)
    }

    /// One packed `inquiry_info` record.
    private func record(_ address: BDAddress, repetition: UInt8, classOfDevice: UInt32, clock: UInt16) -> [UInt8] {
        var bytes = address.wire + [repetition, 0x02, 0x00]
        bytes += [UInt8(classOfDevice & 0xFF), UInt8(classOfDevice >> 8 & 0xFF), UInt8(classOfDevice >> 16 & 0xFF)]
        bytes += [UInt8(clock & 0xFF), UInt8(clock >> 8)]
        return bytes
    }

    @Test("inquiry_info records read from the ioctl's buffer, as many as num_rsp says")
    func inquiryResponses() throws {
        var buffer = BlueZInquiry.request(device: 0, seconds: 2)
        buffer[8] = 3
        let records = record(device, repetition: 1, classOfDevice: 0x5A020C, clock: 0x1234)
            + record(other, repetition: 2, classOfDevice: 0x001F00, clock: 0x7FFF)
            + record(device, repetition: 1, classOfDevice: 0x5A020C, clock: 0x1234)   // the same device again
        buffer.replaceSubrange(10..<(10 + records.count), with: records)
        let found = try BlueZInquiry.responses(in: buffer)
        #expect(found == [HCIInquiryResponse(address: device, pageScanRepetitionMode: 1, classOfDevice: 0x5A020C, clockOffset: 0x1234),
                          HCIInquiryResponse(address: other, pageScanRepetitionMode: 2, classOfDevice: 0x001F00, clockOffset: 0x7FFF)])
        // num_rsp 0: nothing answered.
        buffer[8] = 0
        #expect(try BlueZInquiry.responses(in: buffer).isEmpty)
        // A count the buffer cannot hold, and a buffer shorter than the request, are malformed.
        #expect(throws: MalformedPacket.self) { try BlueZInquiry.responses(in: Array(buffer[0..<(10 + 14)]) .enumerated().map { $0.offset == 8 ? 2 : $0.element }) }
        #expect(throws: MalformedPacket.self) { try BlueZInquiry.responses(in: [0, 0, 1]) }
    }

    @Test("hci_dev_info: name, address, flags (HCI_UP is bit 0), ACL buffers at their offsets")
    func adapterInfo() throws {
        #expect(Array(BlueZAdapterInfo.request(device: 3)[0..<2]) == [3, 0])
        #expect(BlueZAdapterInfo.request(device: 3).count == 92)
        var bytes = [UInt8](repeating: 0, count: 92)
        bytes[0] = 1
        bytes.replaceSubrange(2..<6, with: Array("hci1".utf8))
        bytes.replaceSubrange(10..<16, with: device.wire)
        bytes.replaceSubrange(16..<20, with: [0x05, 0x00, 0x00, 0x00])   // UP | RUNNING
        bytes[20] = 0x01
        bytes.replaceSubrange(44..<48, with: [0xFD, 0x03, 0x08, 0x00])   // 1021 bytes × 8
        let up = try BlueZAdapterInfo(parsing: bytes)
        #expect(up.device == 1 && up.name == "hci1" && up.address == device && up.flags == 5)
        #expect(up.aclMTU == 1021 && up.aclPackets == 8)
        #expect(up.isUp)
        bytes[16] = 0x04   // RUNNING without UP
        #expect(try !BlueZAdapterInfo(parsing: bytes).isUp)
        #expect(throws: MalformedPacket.self) { try BlueZAdapterInfo(parsing: Array(bytes[0..<91])) }
    }

    // MARK: Names over the raw HCI socket

    private func nameComplete(_ address: BDAddress, status: UInt8 = 0, name: String) -> HCIPacket {
        var name248 = Array(name.utf8)
        name248 += [UInt8](repeating: 0, count: 248 - name248.count)
        return .event(code: HCIEvent.Code.remoteNameRequestComplete, parameters: [status] + address.wire + name248)
    }

    @Test("names: one request at a time, only the asked device's answer counts, refusals and silence move on")
    func nameRequests() {
        let first = HCIInquiryResponse(address: device, pageScanRepetitionMode: 2, clockOffset: 0x0123)
        let second = HCIInquiryResponse(address: other, pageScanRepetitionMode: 1, clockOffset: 0)
        var names = BlueZNameRequests(devices: [first, second], nameTimeout: 5)
        #expect(names.start(now: 0) == [.send(HCICommand.remoteNameRequest(device, pageScanRepetitionMode: 2, clockOffset: 0x8123))])
        // bluetoothd's traffic on the shared socket, another device's name, damage: ignored.
        #expect(names.received(nameComplete(other, name: "not asked yet"), now: 0.1).isEmpty)
        #expect(names.received(.event(code: HCIEvent.Code.remoteNameRequestComplete, parameters: [0, 1]), now: 0.1).isEmpty)
        #expect(names.received(.event(code: HCIEvent.Code.commandStatus, parameters: [0x00, 1, 0x19, 0x04]), now: 0.1).isEmpty)
        #expect(names.tick(now: 4.9).isEmpty)
        // The asked device answers: its name, then the next request.
        #expect(names.received(nameComplete(device, name: "Bumble Echo"), now: 1) ==
                [.named(device, "Bumble Echo"), .send(HCICommand.remoteNameRequest(other, pageScanRepetitionMode: 1, clockOffset: 0x8000))])
        // The second never answers: cancelled at its deadline, and the requests are done.
        #expect(names.tick(now: 5.9).isEmpty)
        #expect(names.tick(now: 6.0) == [.send(HCICommand.remoteNameRequestCancel(other)), .finished])
        #expect(names.isFinished)
        #expect(names.tick(now: 60).isEmpty)
        #expect(names.received(nameComplete(other, name: "late"), now: 61).isEmpty)

        // The controller refuses a request (Command Status with an error): the next device.
        var refused = BlueZNameRequests(devices: [first, second])
        _ = refused.start(now: 0)
        #expect(refused.received(.event(code: HCIEvent.Code.commandStatus, parameters: [0x0C, 1, 0x19, 0x04]), now: 0.1) ==
                [.send(HCICommand.remoteNameRequest(other, pageScanRepetitionMode: 1, clockOffset: 0x8000))])
        // A failed or empty name is no name.
        #expect(refused.received(nameComplete(other, status: 0x04, name: ""), now: 0.2) == [.finished])
        var none = BlueZNameRequests(devices: [])
        #expect(none.start(now: 0) == [.finished])
    }

    // MARK: SDP over a packet socket

    /// A sequenced-packet socket pair: [ours, the stand-in device's].
    private func packetPair() throws -> (BlueZSocket, Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
        return (BlueZSocket(adopting: fds[0]), fds[1])
    }

    /// Answers each request packet on `fd` with `answer` until the peer goes; closes `fd` after `limit` answers.
    private func serve(_ fd: Int32, limit: Int = .max, answer: @escaping @Sendable ([UInt8]) -> [UInt8]) -> Thread {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var answered = 0
            while answered < limit {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { break }
                let reply = answer(Array(buffer[0..<n]))
                if send(fd, reply, reply.count, Int32(MSG_NOSIGNAL)) < 0 { break }
                answered += 1
            }
            close(fd)
        }
        thread.start()
        return thread
    }

    @Test("SDP over a packet socket: our SDPClient against our SDPServer finds the channel, through continuations")
    func sdpFindsTheChannel() throws {
        for mtu in [48, 672] {
            let (socket, far) = try packetPair()
            let server = SDPServer(records: [ServiceRecord.serialPort(channel: 7, name: "A rather long service name to need continuations at 48 bytes")], mtu: mtu)
            let requests = Mutex(0)
            _ = serve(far) { request in
                requests.withLock { $0 += 1 }
                return server.respond(to: request)
            }
            #expect(try BlueZSDP.serialPortChannel(over: socket, device: "dev", timeout: 60) == 7)
            if mtu == 48 { #expect(requests.withLock { $0 } > 1, "continuations expected at MTU 48") }
        }
    }

    @Test("SDP over a packet socket: no Serial Port record, a malformed answer, a closed channel, silence")
    func sdpFailures() throws {
        func failure(_ body: () throws(BluetoothError) -> UInt8) -> String {
            do { _ = try body(); return "no error" } catch { return "\(error)" }
        }
        let (a, farA) = try packetPair()
        let empty = SDPServer(records: [])
        _ = serve(farA) { empty.respond(to: $0) }
        #expect(failure { () throws(BluetoothError) in try BlueZSDP.serialPortChannel(over: a, device: "dev", timeout: 60) }
                == "connection failed: dev has no Serial Port service (SDP)")

        let (b, farB) = try packetPair()
        _ = serve(farB) { _ in [0x07, 0x00] }
        #expect(failure { () throws(BluetoothError) in try BlueZSDP.serialPortChannel(over: b, device: "dev", timeout: 60) }
                .hasPrefix("connection failed: SDP with dev failed: malformed SDP answer"))

        let (c, farC) = try packetPair()
        close(farC)
        let closed = failure { () throws(BluetoothError) in try BlueZSDP.serialPortChannel(over: c, device: "dev", timeout: 60) }
        #expect(closed.contains("SDP with dev failed") || closed.contains("disconnected"), "\(closed)")

        let (d, farD) = try packetPair()
        defer { close(farD) }
        #expect(failure { () throws(BluetoothError) in try BlueZSDP.serialPortChannel(over: d, device: "dev", timeout: 0.2) }
                == "connection failed: SDP with dev failed: no answer within 0 s")
    }

    // MARK: The serial-port bridge on a stream socket

    /// A stream socket pair standing in for RFCOMM: the bridge's stream, the device's descriptor.
    fileprivate func streamPair() throws -> (BlueZRFCOMMStream, Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (BlueZRFCOMMStream(socket: BlueZSocket(adopting: fds[0]), address: device, channel: 1), fds[1])
    }

    /// A file holding `bytes`, opened for reading, and an empty output file.
    private func files(_ bytes: [UInt8]) throws -> (input: Int32, output: Int32, outputPath: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("bluez-bridge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let inPath = dir.appendingPathComponent("in").path
        let outPath = dir.appendingPathComponent("out").path
        try Data(bytes).write(to: URL(fileURLWithPath: inPath))
        return (open(inPath, O_RDONLY), open(outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600), outPath)
    }

    fileprivate func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = TestRandom(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    @Test("bridge: 100 KB echoed back byte-exact, then the quiet time, then finished")
    func bridgeEcho() throws {
        let payload = randomBytes(100_000, seed: 9)
        let (stream, far) = try streamPair()
        let (_, output, outPath) = try files([])
        defer { close(output) }
        // Input is a pipe that ends only once the device has echoed everything: the quiet time then
        // starts with every echoed byte already there to read, however late the echo thread ran.
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let input = fds[0], feed = fds[1]
        defer { close(input) }
        let echoed = Mutex(0)
        let echo = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(far, &buffer, buffer.count)
                if n <= 0 { break }
                var offset = 0
                while offset < n {
                    let w = buffer[offset..<n].withUnsafeBytes { write(far, $0.baseAddress, $0.count) }
                    if w <= 0 { break }
                    offset += w
                }
                echoed.withLock { $0 += n }
            }
            close(far)
        }
        echo.start()
        let feeder = Thread {
            var offset = 0
            while offset < payload.count {
                let w = payload[offset...].withUnsafeBytes { write(feed, $0.baseAddress, $0.count) }
                if w <= 0 { break }
                offset += w
            }
            // Input ends once everything came back (a hang guard of 60 s, then it ends anyway).
            let deadline = Date().addingTimeInterval(60)
            while echoed.withLock({ $0 }) < payload.count && Date() < deadline { usleep(1_000) }
            close(feed)
        }
        feeder.start()
        let outcome = BlueZSerialBridge.run(stream: stream, input: input, output: output, quietSeconds: 0.5)
        #expect(outcome == .finished)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: outPath))) == payload)
        #expect(echoed.withLock { $0 } == payload.count)
    }

    @Test("bridge: the device closes first: every byte it sent is written, the reason names the channel")
    func bridgeDeviceClosesFirst() throws {
        let payload = randomBytes(20_000, seed: 4)
        let (stream, far) = try streamPair()
        let (input, output, outPath) = try files(payload)
        defer { close(input); close(output) }
        let device = Thread {
            // Echo the first 5,000 bytes, take the rest (so the bridge is done sending), then go away.
            var got: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 5000)
            while got.count < 5000 {
                let n = read(far, &buffer, 5000 - got.count)
                if n <= 0 { break }
                got += buffer[0..<n]
            }
            _ = got.withUnsafeBytes { write(far, $0.baseAddress, $0.count) }
            var taken = got.count
            while taken < payload.count {
                let n = read(far, &buffer, buffer.count)
                if n <= 0 { break }
                taken += n
            }
            close(far)
        }
        device.start()
        // The quiet time is a hang guard here: the device's close ends the bridge.
        let outcome = BlueZSerialBridge.run(stream: stream, input: input, output: output, quietSeconds: 60)
        guard case .deviceDisconnected(let reason) = outcome else {
            Issue.record("expected the device to disconnect first, got \(outcome)")
            return
        }
        #expect(reason.contains("channel 1"), "\(reason)")
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: outPath))) == Array(payload[0..<5000]))
    }

    @Test("bridge: interrupted ends it with that outcome")
    func bridgeInterrupted() async throws {
        let (stream, far) = try streamPair()
        defer { close(far) }
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)   // input that never ends
        defer { close(fds[0]); close(fds[1]) }
        let (_, output, _) = try files([])
        defer { close(output) }
        let stop = Flag()
        // The bridge's turns (each asks whether it is interrupted) and its outcome: each wakes the waits.
        let progress = Observed<(polls: Int, outcome: SerialPortBridge.Outcome?)>((0, nil))
        let readEnd = fds[0]
        let runner = Thread {
            let o = BlueZSerialBridge.run(stream: stream, input: readEnd, output: output, quietSeconds: 0.1,
                                          isInterrupted: { progress.update { $0.polls += 1 }; return stop.value.load(ordering: .relaxed) })
            progress.update { $0.outcome = o }
        }
        runner.start()
        // The bridge asks once per turn of its loop (a read of up to 10 ms): 30 turns, several times its
        // 0.1-s quiet time, and it still waits while input is open.
        let turned = try await progress.wait(for: "30 turns of the bridge's loop") { $0.polls >= 30 || $0.outcome != nil }
        #expect(turned.outcome == nil, "the bridge waits while input is open")
        stop.value.store(true, ordering: .relaxed)
        let ended = try await progress.wait(for: "the interrupted bridge's end") { $0.outcome != nil }
        #expect(ended.outcome == .interrupted)
    }

    // MARK: The Bluetooth manager on the kernel way

    /// The channel protocol's device on the far end of a stream socket. Master-slave: echoes each
    /// request. Duplex: records each message in `log` and sends it back reversed on its own initiative.
    fileprivate func runDevice(on fd: Int32, duplex: Bool = false, log: FrameLog = FrameLog(), until done: Flag) -> Thread {
        let thread = Thread {
            var machine = duplex
                ? DeviceStateMachine(configuration: .byteStream(mode: .duplex), name: "Stand-in")
                : DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), name: "Stand-in", mode: .followPhone)
            machine.attach()
            var station = StreamLinkStation(machine: machine)
            let origin = Date()
            var outbox: [[UInt8]] = []
            func carry(_ actions: [StreamLinkAction]) {
                var queue = actions[...]
                while let action = queue.popFirst() {
                    let now = Date().timeIntervalSince(origin)
                    switch action {
                    case .write(let bytes):
                        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        queue.append(contentsOf: station.transmitted(now: now))
                    case .event(.received(let message, let data)):
                        if duplex {
                            log.value.withLock { $0.append(data) }
                            outbox.append(data.reversed())
                        } else {
                            queue.append(contentsOf: station.perform(station.machine.reply(data, to: message, now: now).actions))
                        }
                    default:
                        break
                    }
                }
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !done.value.load(ordering: .relaxed) {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&p, 1, 10) > 0 {
                    let n = recv(fd, &buffer, buffer.count, 0)
                    if n <= 0 { break }
                    carry(station.received(bytes: buffer[0..<n], now: Date().timeIntervalSince(origin)))
                }
                let now = Date().timeIntervalSince(origin)
                if let next = outbox.first {
                    let (code, actions) = station.machine.send(next, now: now)
                    if code == 0 { outbox.removeFirst(); carry(station.perform(actions)) }
                }
                carry(station.tick(now: now))
            }
            close(fd)
        }
        thread.start()
        return thread
    }

    @Test("manager over a stand-in RFCOMM stream: handshake, exchanges, error 20 when the device goes")
    func managerOverTheKernelWay() async throws {
        let waited = try await managerOverTheKernelWay(exchanges: 20)
        print("kernel way: error 20 came \(waited) after the device went")
    }

    /// The manager on a stand-in RFCOMM stream: open, `exchanges` exchanges, then the device goes and
    /// error 20 comes (waited for with a hang guard only); how long after the device went it came.
    fileprivate func managerOverTheKernelWay(exchanges: Int) async throws -> Duration {
        let (stream, far) = try streamPair()
        let stopDevice = Flag()
        _ = runDevice(on: far, until: stopDevice)
        let asked = Mutex<(BDAddress, UInt8?)?>(nil)
        let manager = BluetoothManager(configuration: .byteStream(mode: .masterSlave), gap: GAPConfiguration(role: .central),
                                       way: .kernel(check: {}, connect: { address, channel in
                                           asked.withLock { $0 = (address, channel) }
                                           return stream
                                       }))
        try await manager.open(identifier: "00:1B:DC:00:00:0B/3")
        #expect(asked.withLock { $0 }?.0 == device)
        #expect(asked.withLock { $0 }?.1 == 3)
        #expect(manager.deviceName == "Stand-in")
        for i in 0..<exchanges {
            let payload = randomBytes(1 + i * 50, seed: UInt64(i))
            #expect(try await manager.exchange(payload, timeout: .seconds(60)) == payload)
        }
        // Error 20's message and the time it came, noted as the event arrives.
        let seen = Observed<(message: String, at: ContinuousClock.Instant)?>(nil)
        let watcher = Task {
            for await event in manager.events {
                if case .error(let code, let message) = event, code == .bluetoothDisconnected {
                    seen.set((message, .now))
                    return
                }
            }
        }
        defer { watcher.cancel() }
        stopDevice.value.store(true, ordering: .relaxed)
        let gone = ContinuousClock.now
        // A hang guard; BlueZPathRealTimeTests asserts the figure.
        let error = try #require(try await seen.wait(for: "error 20 after the device went", hangGuard: 60) { $0 != nil })
        #expect(error.message.contains("RFCOMM channel 1"), "\(error.message)")
        // PhoneSession is in WAITING DEVICE before it tells error 20 (it told it first once: a race).
        #expect(manager.state == .waitingDevice)
        await manager.closeResources()
        return error.at - gone
    }

    @Test("manager codes on the kernel way: -4 no Bluetooth, -5 not powered, -2 connection failed, -1 bad address")
    func managerCodes() async {
        func code(check: @escaping @Sendable () throws(BluetoothError) -> Void,
                  connect: @escaping @Sendable (BDAddress, UInt8?) throws(BluetoothError) -> BlueZRFCOMMStream,
                  identifier: String = "00:1B:DC:00:00:0B") async -> Int32 {
            let manager = BluetoothManager(configuration: .byteStream(mode: .masterSlave), gap: GAPConfiguration(role: .central),
                                           way: .kernel(check: check, connect: connect))
            return await offThePool { manager.openDevice(identifier) }
        }
        let never: @Sendable (BDAddress, UInt8?) throws(BluetoothError) -> BlueZRFCOMMStream = { _, _ throws(BluetoothError) in
            throw .unknown("connect must not be reached")
        }
        #expect(await code(check: { () throws(BluetoothError) in throw .noBluetooth("no Bluetooth adapter") }, connect: never) == -4)
        #expect(await code(check: { () throws(BluetoothError) in throw .notPowered("hci0 is down") }, connect: never) == -5)
        #expect(await code(check: {}, connect: { _, _ throws(BluetoothError) in throw .connectionFailed("refused") }) == -2)
        #expect(await code(check: {}, connect: never, identifier: "nonsense") == -1)
    }

    @Test("link phone (messaging) over a stand-in RFCOMM stream: dial, frames both ways, the device going ends the transport")
    func linkPhoneOverTheKernelWay() async throws {
        let (stream, far) = try streamPair()
        let stopDevice = Flag()
        let received = FrameLog()
        _ = runDevice(on: far, duplex: true, log: received, until: stopDevice)
        let phone = BluetoothLinkPhone(kernelAddress: device, configuration: .byteStream(mode: .duplex),
                                       options: LinkTransportOptions()) { () throws(BluetoothError) in stream }
        phone.start()
        defer { phone.stop() }
        let transport = try await phone.dial()
        let frames = (0..<5).map { randomBytes(10 + $0 * 300, seed: UInt64(40 + $0)) }
        for frame in frames { try await transport.send(frame) }
        var back: [[UInt8]] = []
        receiving: while back.count < frames.count {
            switch await transport.receive() {
            case .frame(let f): back.append(f)
            case .peerHeard: continue
            case .ended(let why):
                Issue.record("the transport ended after \(back.count) frames: \(why)")
                break receiving
            }
        }
        #expect(received.value.withLock { $0 } == frames, "the device got \(received.value.withLock { $0.map(\.count) }) bytes")
        #expect(back == frames.map { Array($0.reversed()) }, "the phone got \(back.map(\.count)) bytes back")
        stopDevice.value.store(true, ordering: .relaxed)
        var end: TransportInput = .peerHeard
        while case .peerHeard = end { end = await transport.receive() }
        guard case .ended(let why) = end else {
            Issue.record("expected the transport to end when the device went, got \(end)")
            return
        }
        // The device's end closed: the next read sees the end, or the next write EPIPE; both name the channel.
        #expect("\(why)".contains("channel 1"), "\(why)")
    }

    @Test("link phone on the kernel way without kernel Bluetooth: noBluetooth at once", .enabled(if: kernelHasNoBluetooth, "this kernel has Bluetooth sockets: the no-kernel-Bluetooth path cannot be seen here"))
    func linkPhoneWithoutKernelBluetooth() throws {
        #expect(throws: BluetoothError.noBluetooth(String(Self.noKernelLine.dropFirst("no Bluetooth: ".count)))) {
            try BluetoothLinkPhone(kernelAddress: device)
        }
    }
}

/// The real-time figures of the kernel way (what a busy machine could stretch): scripts/test.sh runs
/// `...RealTimeTests` suites alone, one at a time. The same paths' behaviour is checked, with hang
/// guards only, in ``BlueZPathTests``.
@Suite("BlueZ way down: real-time figures (real time)", .serialized)
struct BlueZPathRealTimeTests {
    private let device = BDAddress("00:1B:DC:00:00:0B")!

    @Test("manager over a stand-in RFCOMM stream: error 20 within 5 s of the device going (real time)")
    func managerErrorTwentyInTime() async throws {
        let waited = try await BlueZPathTests().managerOverTheKernelWay(exchanges: 2)
        #expect(waited < .seconds(5), "error 20 came \(waited) after the device went")
    }

    @Test("on this kernel (no AF_BLUETOOTH) the manager without a transport fails at once (under 5 s) with -4 and the kernel's line (real time)", .enabled(if: BlueZPathTests.kernelHasNoBluetooth, "this kernel has Bluetooth sockets: the no-kernel-Bluetooth path cannot be seen here"))
    func managerWithoutKernelBluetooth() async throws {
        let manager = BluetoothManager(transport: nil)
        let start = ContinuousClock.now
        #expect(await offThePool { manager.openDevice("00:1B:DC:00:00:0B") } == -4)
        do {
            try await manager.open(identifier: "00:1B:DC:00:00:0B")
            Issue.record("open succeeded without kernel Bluetooth")
        } catch {
            guard case .transportUnavailable(let code, let message) = error else { Issue.record("\(error)"); return }
            #expect(code == -4)
            #expect(message == BlueZPathTests.noKernelLine)
        }
        #expect(ContinuousClock.now - start < .seconds(5))   // at once: not the 10-s connection timeout
        // The scan, the adapter check and the connection say the same.
        #expect(throws: BluetoothError.noBluetooth(String(BlueZPathTests.noKernelLine.dropFirst("no Bluetooth: ".count)))) {
            try BlueZ.scan(seconds: 1)
        }
        #expect(throws: BluetoothError.noBluetooth(String(BlueZPathTests.noKernelLine.dropFirst("no Bluetooth: ".count)))) {
            try BlueZSerialBridge.connect(to: device, channel: nil)
        }
    }
}
