import Foundation
import ModemLink
import Synchronization
import Testing

/// Collects callback-facade calls.
private final class Recorder: CommunicationCallback {
    let calls = Mutex<[String]>([])
    func onSendOK() { calls.withLock { $0.append("sendOK") } }
    func onReceive(_ data: [UInt8]) { calls.withLock { $0.append("receive \(data.count)") } }
    func onTimeout() { calls.withLock { $0.append("timeout") } }
    func onError(_ code: Int32, message: String) { calls.withLock { $0.append("error \(code)") } }
    func onProgress(bytes: Int, total: Int) {}
}

/// A phone manager and a device emulator joined by two in-memory audio lines (lockstep, channel time).
private func rig(_ config: LinkConfiguration, handler: @escaping DeviceEmulator.Handler = { $0 }) throws
    -> (AudioJackManager, DeviceEmulator) {
    let toDevice = AudioPipe(sampleRate: 16000), toPhone = AudioPipe(sampleRate: 16000)
    let device = try DeviceEmulator(configuration: config, sink: toPhone.sink, source: toDevice.source, handler: handler)
    device.start()
    let phone = AudioJackManager(configuration: config, openOutput: { toDevice.sink }, openInput: { toPhone.source })
    return (phone, device)
}

@Suite("AudioJackManager over in-memory audio")
struct AudioJackManagerTests {
    @Test("open, exchange, close: the reply is the handler's answer")
    func exchangeRoundTrip() async throws {
        let (phone, device) = try rig(LinkConfiguration()) { Array($0.reversed()) }
        defer { device.stop() }
        #expect(phone.state == .waitingDevice)
        #expect(await phone.open() == 0)
        #expect(phone.state == .idle)
        let request: [UInt8] = Array(0..<200).map { UInt8($0) }
        let reply = try await phone.exchange(request, timeout: 30)
        #expect(reply == request.reversed())
        #expect(device.requestsHandled == 1)
        await phone.close()
        #expect(phone.state == .waitingDevice)
        await #expect(throws: ExchangeFailure.refused(-2)) { try await phone.exchange([1], timeout: 5) }
    }

    @Test("return codes of calls in the wrong state, and oversized data")
    func badCalls() async throws {
        let config = LinkConfiguration(maximumMessageSize: 100)
        let (phone, device) = try rig(config)
        defer { device.stop() }
        #expect(await phone.cancel() == -2)
        await #expect(throws: ExchangeFailure.refused(-2)) { try await phone.exchange([1], timeout: 5) }
        #expect(await phone.open() == 0)
        #expect(await phone.cancel() == -1)
        await #expect(throws: ExchangeFailure.refused(-3)) { try await phone.exchange(Array(repeating: 0, count: 101), timeout: 5) }
        // The facade: one exchange at a time.
        let recorder = Recorder()
        #expect(phone.exchangeData(Array(repeating: 7, count: 50), timeout: 30, callback: recorder) == 0)
        #expect(phone.exchangeData([1], timeout: 30, callback: recorder) == -1)
        for _ in 0..<2000 where !recorder.calls.withLock({ $0.contains("receive 50") }) { try await Task.sleep(for: .milliseconds(5)) }
        #expect(recorder.calls.withLock { $0 } == ["sendOK", "receive 50"])
        await phone.closeResources()
        #expect(phone.state == .waitingDevice)
    }

    @Test("no device: open returns -4 and later calls -4")
    func noDevice() async throws {
        let toDevice = AudioPipe(sampleRate: 16000), silence = AudioPipe(sampleRate: 16000)
        // Nobody answers: the phone's input is a line fed silence, its output is drained (on threads:
        // blocking calls must not hold the cooperative pool).
        let stop = Atomic<Bool>(false)
        let feeder = Thread {
            let zeros = [Float](repeating: 0, count: 320)
            let sink = silence.sink
            while !stop.load(ordering: .relaxed) { try? zeros.withUnsafeBufferPointer { try sink.write($0) } }
        }
        let drain = Thread {
            var buffer = [Float](repeating: 0, count: 4096)
            let source = toDevice.source
            while (try? buffer.withUnsafeMutableBufferPointer({ try source.read(into: $0) })) ?? 0 > 0 {}
        }
        feeder.start()
        drain.start()
        defer { stop.store(true, ordering: .relaxed); silence.close(); toDevice.close() }
        let phone = AudioJackManager(configuration: LinkConfiguration(), openOutput: { toDevice.sink }, openInput: { silence.source })
        #expect(await phone.open() == -4)
        await #expect(throws: ExchangeFailure.refused(-4)) { try await phone.exchange([1], timeout: 5) }
    }

    @Test("an output that cannot be opened gives -1, an input -2")
    func openFailures() async {
        struct Failure: Error {}
        let a = AudioJackManager(configuration: LinkConfiguration(), openOutput: { throw Failure() }, openInput: { AudioPipe(sampleRate: 16000).source })
        #expect(await a.open() == -1)
        let b = AudioJackManager(configuration: LinkConfiguration(), openOutput: { AudioPipe(sampleRate: 16000).sink }, openInput: { throw Failure() })
        #expect(await b.open() == -2)
    }

    @Test("duplex: the device sends on its own initiative, the phone's message is acknowledged")
    func duplex() async throws {
        let config = LinkConfiguration(mode: .duplex)
        let (phone, device) = try rig(config)
        defer { device.stop() }
        #expect(await phone.open() == 0)
        device.send(Array("hello phone".utf8), timeout: 30)
        let reply = try await phone.exchange(Array("hello device".utf8), timeout: 30)
        #expect(reply.isEmpty)
        var got: [UInt8]?
        for await e in phone.events {
            if case .received(_, let d) = e { got = d; break }
        }
        #expect(got == Array("hello phone".utf8))
        await phone.close()
    }
}
