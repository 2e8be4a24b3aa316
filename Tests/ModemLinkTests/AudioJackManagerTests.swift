import Foundation
import ModemLink
import Synchronization
import ProcessTestSupport
import Testing

/// Collects callback-facade calls.
private final class Recorder: CommunicationCallback {
    /// The callbacks so far; each wakes the waits.
    let calls = Observed<[String]>([])
    func onSendOK() { calls.append("sendOK") }
    func onReceive(_ data: [UInt8]) { calls.append("receive \(data.count)") }
    func onTimeout() { calls.append("timeout") }
    func onError(_ code: Int32, message: String) { calls.append("error \(code)") }
    func onProgress(bytes: Int, total: Int) {}
}

/// Runs a blocking facade call on a thread of its own: blocking a thread of Swift concurrency's small
/// cooperative pool (2 threads on 2 cores, shared by tests running in parallel) can deadlock.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
        Thread { c.resume(returning: body()) }.start()
    }
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
        try await phone.open()
        #expect(phone.state == .idle)
        let request: [UInt8] = Array(0..<200).map { UInt8($0) }
        let reply = try await phone.exchange(request, timeout: .seconds(30))
        #expect(reply == request.reversed())
        #expect(device.requestsHandled == 1)
        await phone.close()
        #expect(phone.state == .waitingDevice)
        await #expect(throws: LinkError.notOpened) { try await phone.exchange([1], timeout: .seconds(5)) }
    }

    @Test("return codes of calls in the wrong state, and oversized data")
    func badCalls() async throws {
        let config = LinkConfiguration(maximumMessageSize: 100)
        // The device answers only once the test lets it, so the first facade exchange is surely still
        // under way when the second is refused (on the fast in-memory line it could otherwise finish first).
        let gate = DispatchSemaphore(value: 0)
        let (phone, device) = try rig(config, handler: { data in _ = gate.wait(timeout: .now() + 20); return data })
        defer { gate.signal(); device.stop() }
        await #expect(throws: LinkError.notOpened) { try await phone.cancel() }
        #expect(await onThread { phone.cancelExchange() } == -2)
        await #expect(throws: LinkError.notOpened) { try await phone.exchange([1], timeout: .seconds(5)) }
        try await phone.open()
        await #expect(throws: LinkError.nothingToCancel) { try await phone.cancel() }
        #expect(await onThread { phone.cancelExchange() } == -1)
        await #expect(throws: LinkError.messageTooLarge(size: 101, maximum: 100)) {
            try await phone.exchange(Array(repeating: 0, count: 101), timeout: .seconds(5))
        }
        await #expect(throws: LinkError.invalidTimeout) { try await phone.exchange([1], timeout: .zero) }
        let recorder0 = Recorder()
        #expect(await onThread { phone.exchangeData(Array(repeating: 0, count: 101), timeout: 5, callback: recorder0) } == -3)
        #expect(await onThread { phone.exchangeData([1], timeout: -1, callback: recorder0) } == -1)
        #expect(recorder0.calls.value.isEmpty)
        // The facade: one exchange at a time.
        let recorder = Recorder()
        #expect(await onThread { phone.exchangeData(Array(repeating: 7, count: 50), timeout: 30, callback: recorder) } == 0)
        #expect(await onThread { phone.exchangeData([1], timeout: 30, callback: recorder) } == -1)
        gate.signal()
        try await recorder.calls.wait(for: "the reply to the exchange") { $0.contains("receive 50") }
        #expect(recorder.calls.value == ["sendOK", "receive 50"])
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
        await #expect(throws: LinkError.noDevice) { try await phone.open() }
        await #expect(throws: LinkError.noDevice) { try await phone.exchange([1], timeout: .seconds(5)) }
        #expect(await onThread { phone.cancelExchange() } == -4)
    }

    @Test("an output that cannot be opened gives -1, an input -2")
    func openFailures() async {
        struct Failure: Error {}
        let a = AudioJackManager(configuration: LinkConfiguration(), openOutput: { throw Failure() }, openInput: { AudioPipe(sampleRate: 16000).source })
        await #expect(throws: LinkError.outputUnavailable("Failure()")) { try await a.open() }
        #expect(await onThread { a.openDevice() } == -1)
        let b = AudioJackManager(configuration: LinkConfiguration(), openOutput: { AudioPipe(sampleRate: 16000).sink }, openInput: { throw Failure() })
        await #expect(throws: LinkError.inputUnavailable("Failure()")) { try await b.open() }
        #expect(await onThread { b.openDevice() } == -2)
        #expect(b.state == .waitingDevice)
    }

    @Test("duplex: the device sends on its own initiative, the phone's message is acknowledged")
    func duplex() async throws {
        let config = LinkConfiguration(mode: .duplex)
        let (phone, device) = try rig(config)
        defer { device.stop() }
        try await phone.open()
        device.send(Array("hello phone".utf8), timeout: 30)
        let reply = try await phone.exchange(Array("hello device".utf8), timeout: .seconds(30))
        #expect(reply.isEmpty)
        var got: [UInt8]?
        for await e in phone.events {
            if case .received(_, let d) = e { got = d; break }
        }
        #expect(got == Array("hello phone".utf8))
        await phone.close()
    }

    @Test("concurrent opens create one transport: one open succeeds, the others are refused as busy",
          .timeLimit(.minutes(2)))
    func concurrentOpens() async throws {
        let toDevice = AudioPipe(sampleRate: 16000), toPhone = AudioPipe(sampleRate: 16000)
        let config = LinkConfiguration()
        let device = try DeviceEmulator(configuration: config, sink: toPhone.sink, source: toDevice.source)
        device.start()
        defer { device.stop() }
        // Opening the output is slow and waits a little for a second caller, so that opens that
        // both got past the check would both get here (as a sound card's open can take a while).
        let outputs = Atomic<Int>(0), inputs = Atomic<Int>(0)
        let phone = AudioJackManager(configuration: config, openOutput: {
            let n = outputs.add(1, ordering: .sequentiallyConsistent).newValue
            for _ in 0..<50 where n == 1 && outputs.load(ordering: .sequentiallyConsistent) == 1 { Thread.sleep(forTimeInterval: 0.002) }
            return toDevice.sink
        }, openInput: {
            inputs.add(1, ordering: .sequentiallyConsistent)
            return toPhone.source
        })
        let callers = 64
        let results = await withTaskGroup(of: LinkError?.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    do throws(LinkError) { try await phone.open(); return nil } catch { return error }
                }
            }
            var all: [LinkError?] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(outputs.load(ordering: .sequentiallyConsistent) == 1)
        #expect(inputs.load(ordering: .sequentiallyConsistent) == 1)
        #expect(results.filter { $0 == nil }.count >= 1)
        #expect(results.allSatisfy { $0 == nil || $0 == .busy })
        #expect(phone.state == .idle)
        // The one transport works.
        let reply = try await phone.exchange([1, 2, 3], timeout: .seconds(30))
        #expect(reply == [1, 2, 3])
        await phone.close()
        #expect(phone.state == .waitingDevice)
    }

    @Test("LinkError keeps the seed's integer codes")
    func returnCodes() {
        #expect(LinkError.outputUnavailable("x").returnCode == -1)
        #expect(LinkError.busy.returnCode == -1)
        #expect(LinkError.nothingToCancel.returnCode == -1)
        #expect(LinkError.inputUnavailable("x").returnCode == -2)
        #expect(LinkError.notOpened.returnCode == -2)
        #expect(LinkError.handshakeFailed.returnCode == -3)
        #expect(LinkError.alreadyCancelling.returnCode == -3)
        #expect(LinkError.messageTooLarge(size: 2, maximum: 1).returnCode == -3)
        #expect(LinkError.noDevice.returnCode == -4)
        #expect(LinkError.timedOut.returnCode == 5)
        #expect(LinkError.cancelled.returnCode == 12)
        #expect(LinkError.failed(.captureRead, "x").returnCode == 10)
    }
}
