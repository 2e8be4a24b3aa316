import Foundation
import Synchronization
import Testing
import ModemTestSupport
import ModemCodecs
import ModemLink

private extension Duration {
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

/// A `CommunicationManager` over a ``StreamLink`` (two stream stations and two byte pipes): each call
/// runs the link on its fake clock until the call's outcome, inside the call. In duplex an exchange
/// also lets the link settle after the acknowledgement, so the device's echo arrives as an event, as
/// it would while a real application awaited its next step.
final class SimulatedStreamManager: CommunicationManager {
    let channel = DeviceCommunicationChannel.bluetooth
    let events: AsyncStream<CommunicationEvent>
    private let continuation: AsyncStream<CommunicationEvent>.Continuation
    private let link: Mutex<StreamLink>
    private let sessions = Mutex<UInt8>(0x30)
    let opens = Atomic<Int>(0)

    init(link: sending StreamLink) {
        self.link = Mutex(link)
        (events, continuation) = AsyncStream.makeStream(of: CommunicationEvent.self)
    }

    var state: PhoneStateMachine.State { link.withLock { $0.phone.machine.state } }
    var deviceName: String? { link.withLock { $0.phone.machine.deviceName } }
    var mode: CommunicationMode { link.withLock { $0.phone.machine.configuration.mode } }

    /// Takes the phone's events and hands them to `events`.
    private func drain(_ l: inout StreamLink) -> [LinkEvent] {
        let e = l.takePhoneEvents()
        for x in e { continuation.yield(x) }
        return e
    }

    func open() async throws(LinkError) {
        opens.add(1, ordering: .relaxed)
        let session = sessions.withLock { s -> UInt8 in s &+= 1; return s }
        let code = link.withLock { l -> Int32? in
            l.performPhone(l.phone.perform(l.phone.machine.open(session: session, now: l.now)))
            var code: Int32?
            l.run(for: 30) { l in
                for case .opened(let c, _) in drain(&l) { code = c }
                return code != nil
            }
            return code
        }
        switch code {
        case ReturnCode.ok?: return
        case ReturnCode.handshakeFailedOrCancelling?: throw .handshakeFailed
        default: throw .noDevice
        }
    }

    func exchange(_ data: [UInt8], timeout: Duration) async throws(LinkError) -> [UInt8] {
        let seconds = timeout.inSeconds
        let mode = self.mode
        let result = link.withLock { l -> Result<[UInt8], LinkError> in
            let (code, actions) = l.phone.machine.exchange(data, timeout: seconds, now: l.now)
            switch code {
            case ReturnCode.ok: break
            case ReturnCode.busyOrOutput: return .failure(.busy)
            case ReturnCode.notOpenedOrInput: return .failure(.notOpened)
            case ReturnCode.noDevice: return .failure(.noDevice)
            default: return .failure(.messageTooLarge(size: data.count, maximum: l.phone.machine.configuration.maximumMessageSize))
            }
            l.performPhone(l.phone.perform(actions))
            var outcome: Result<[UInt8], LinkError>?
            l.run(for: seconds + 1) { l in
                for e in drain(&l) {
                    switch e {
                    case .received(_, let d) where mode == .masterSlave: outcome = .success(d)
                    case .sendOK where mode == .duplex: outcome = .success([])
                    case .timeout: outcome = .failure(.timedOut)
                    case .error(let c, let m): outcome = .failure(.failed(c, m))
                    default: break
                    }
                }
                return outcome != nil
            }
            if mode == .duplex { l.run(for: 5) { l in _ = drain(&l); return l.isQuiet } }
            return outcome ?? .failure(.timedOut)
        }
        switch result {
        case .success(let d): return d
        case .failure(let e): throw e
        }
    }

    func cancel() async throws(LinkError) { throw .nothingToCancel }

    func close() async {
        link.withLock { l in
            l.performPhone(l.phone.perform(l.phone.machine.close(now: l.now)))
            l.run(for: 10) { l in drain(&l).contains(.closed) }
        }
    }

    func closeResources() async {
        link.withLock { l in
            l.performPhone(l.phone.perform(l.phone.machine.closeResources()))
            _ = drain(&l)
        }
    }
}

/// The scripted manager's event queue. Its reader pulls (`next`); a reader that asks for element k+1
/// has handled the first k, which is how `waitUntilHandled` knows, without timing, that the reader
/// has seen every event pushed so far.
final class PulledQueue: Sendable {
    private struct State {
        var items: [CommunicationEvent] = []
        var pushed = 0
        var pulls = 0
        var waiting: CheckedContinuation<CommunicationEvent?, Never>?
        var handled: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func push(_ event: CommunicationEvent) {
        let waiter = state.withLock { s -> CheckedContinuation<CommunicationEvent?, Never>? in
            s.pushed += 1
            if let w = s.waiting { s.waiting = nil; return w }
            s.items.append(event)
            return nil
        }
        waiter?.resume(returning: event)
    }

    func next() async -> CommunicationEvent? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<CommunicationEvent?, Never>) in
                let (item, handled) = state.withLock { s -> (CommunicationEvent??, CheckedContinuation<Void, Never>?) in
                    s.pulls += 1
                    // Asking for the next element: everything pushed so far was handled.
                    var done: CheckedContinuation<Void, Never>?
                    if s.pulls > s.pushed { done = s.handled; s.handled = nil }
                    if !s.items.isEmpty { return (.some(s.items.removeFirst()), done) }
                    if Task.isCancelled { return (.some(nil), done) }
                    s.waiting = c
                    return (.none, done)
                }
                handled?.resume()
                if case .some(let e) = item { c.resume(returning: e) }
            }
        } onCancel: {
            // The reader is gone: its pending pull ends the sequence.
            let waiter = state.withLock { s -> CheckedContinuation<CommunicationEvent?, Never>? in
                defer { s.waiting = nil }
                return s.waiting
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Waits until the reader has asked for the element after the last one pushed (woken by that pull;
    /// the suite's time limit stops a reader that never comes).
    func waitUntilHandled() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.pulls > s.pushed { return true }
                s.handled = c
                return false
            }
            if now { c.resume() }
        }
    }
}

/// A manager whose answers are scripted per exchange (0-based): what `exchange` returns and which
/// `received` events follow. It checks the harness's bookkeeping, not a protocol.
final class ScriptedManager: CommunicationManager {
    struct Answer: Sendable {
        var result: Result<[UInt8], LinkError>
        var events: [[UInt8]] = []
    }

    let channel = DeviceCommunicationChannel.bluetooth
    let events: AsyncStream<CommunicationEvent>
    private let queue: PulledQueue
    private let script: @Sendable (Int, [UInt8]) -> Answer
    private let shared: Mutex<(opened: Bool, exchanges: Int, opens: Int, closes: Int)>
    private let openSucceeds: Bool

    init(opened: Bool = false, openSucceeds: Bool = true, script: @escaping @Sendable (Int, [UInt8]) -> Answer) {
        self.script = script
        self.openSucceeds = openSucceeds
        shared = Mutex((opened, 0, 0, 0))
        let queue = PulledQueue()
        self.queue = queue
        events = AsyncStream(unfolding: { await queue.next() })
    }

    var state: PhoneStateMachine.State { shared.withLock { $0.opened ? .idle : .waitingDevice } }
    var deviceName: String? { nil }
    var counts: (exchanges: Int, opens: Int, closes: Int) { shared.withLock { ($0.exchanges, $0.opens, $0.closes) } }

    func open() async throws(LinkError) {
        let ok = shared.withLock { s -> Bool in s.opens += 1; s.opened = openSucceeds; return openSucceeds }
        if !ok { throw .noDevice }
    }

    func exchange(_ data: [UInt8], timeout: Duration) async throws(LinkError) -> [UInt8] {
        let n = shared.withLock { s -> Int in defer { s.exchanges += 1 }; return s.exchanges }
        let answer = script(n, data)
        for (i, e) in answer.events.enumerated() { queue.push(.received(message: UInt16(i + 1), data: e)) }
        // A real manager's events are in the reader's hands by the time its exchange returns; here
        // the reader is another task, so wait until it has taken (and handled) every event, rather
        // than let the exchange's timeout race the scheduler.
        if !answer.events.isEmpty { await queue.waitUntilHandled() }
        switch answer.result {
        case .success(let d): return d
        case .failure(let e): throw e
        }
    }

    func cancel() async throws(LinkError) { throw .nothingToCancel }
    func close() async { shared.withLock { $0.closes += 1; $0.opened = false } }
    func closeResources() async { shared.withLock { $0.opened = false } }
}

@Suite("RemoteLinkTest: the link test over any CommunicationManager", .timeLimit(.minutes(2)))
struct StreamLinkRemoteTests {
    @Test("master-slave over two stream stations: 200 exchanges complete, nothing corrupt or duplicated, same JSON keys as link-test")
    func masterSlaveOverStations() async throws {
        let manager = SimulatedStreamManager(link: StreamLink(
            phone: PhoneStateMachine(configuration: .byteStream(mode: .masterSlave)),
            device: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), name: "echo"), seed: 21))
        var reports: [LinkTestReport] = []
        let test = RemoteLinkTest(options: RemoteLinkTestOptions(mode: .masterSlave, count: 200, size: 256, seed: 3))
        let report = await test.run(on: manager, progress: { reports.append($0) })
        #expect(report.opened && report.openCode == 0)
        #expect(report.exchanges == 200 && report.completed == 200)
        #expect(report.timedOut == 0 && report.failed == 0)
        #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
        #expect(report.goodputBps > 0 && report.channelSeconds > 0 && report.meanRoundTripMs > 0)
        #expect(reports.count == 200 && reports.last?.completed == 200)
        #expect(manager.opens.load(ordering: .relaxed) == 1)
        #expect(manager.state == .waitingDevice)  // closed when done
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any]
        for key in ["exchanges", "completed", "timedOut", "failed", "corruptDelivered", "duplicatesDelivered",
                    "meanRoundTripMs", "goodputBps", "channelSeconds", "opened", "openCode"] {
            #expect(json?[key] != nil, "\(key)")
        }
    }

    @Test("duplex over two stream stations, the device following the phone's mode, junk on the pipes: 200 complete")
    func duplexOverStations() async {
        var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: .duplex)),
                              device: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), mode: .followPhone),
                              seed: 22)
        link.toDevice.junkBetween = 0.2
        link.toPhone.junkBetween = 0.2
        let manager = SimulatedStreamManager(link: link)
        let test = RemoteLinkTest(options: RemoteLinkTestOptions(mode: .duplex, count: 200, size: 100, timeout: .seconds(20), seed: 4))
        let report = await test.run(on: manager)
        #expect(report.opened)
        #expect(report.completed == 200 && report.timedOut == 0 && report.failed == 0)
        #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
        // The echo proves the message arrived: both directions count.
        #expect(abs(report.goodputBps * report.channelSeconds - Double(200 * 100 * 8 * 2)) < 1)
    }

    @Test("master-slave: a damaged reply is corrupt, another exchange's reply again is a duplicate, a timeout is a timeout")
    func masterSlaveBookkeeping() async {
        let replies = Mutex<[[UInt8]]>([])
        let manager = ScriptedManager { n, data in
            replies.withLock { $0.append(data) }
            switch n {
            case 3: return .init(result: .success(data.map { $0 ^ 1 }))                   // damaged
            case 5: return .init(result: .success(replies.withLock { $0[4] }))            // exchange 4's reply again
            case 7: return .init(result: .failure(.timedOut))
            case 8: return .init(result: .failure(.failed(.bluetoothDisconnected, "gone")))
            default: return .init(result: .success(data))
            }
        }
        let report = await RemoteLinkTest(options: RemoteLinkTestOptions(mode: .masterSlave, count: 10, size: 16, seed: 5))
            .run(on: manager)
        #expect(report.exchanges == 10 && report.completed == 6)
        #expect(report.corruptDelivered == 1 && report.duplicatesDelivered == 1)
        #expect(report.timedOut == 1 && report.failed == 3)
        #expect(manager.counts.opens == 1 && manager.counts.closes == 1)
    }

    @Test("duplex: an echo twice is a duplicate, a damaged echo is corrupt, a missing echo times out; late echoes still count")
    func duplexBookkeeping() async {
        let held = Mutex<[UInt8]?>(nil)
        let manager = ScriptedManager(opened: true) { n, data in
            switch n {
            case 2: return .init(result: .success([]), events: [data, data])             // echoed twice
            case 4: return .init(result: .success([]), events: [data.map { $0 ^ 0x80 }]) // damaged echo only
            case 6: held.withLock { $0 = data }; return .init(result: .success([]))      // echo late
            case 7: return .init(result: .success([]), events: [held.withLock { $0! }, data])
            case 9: return .init(result: .failure(.timedOut))
            default: return .init(result: .success([]), events: [data])
            }
        }
        let report = await RemoteLinkTest(options: RemoteLinkTestOptions(mode: .duplex, count: 10, size: 16,
                                                                          timeout: .milliseconds(100), seed: 6,
                                                                          closeWhenDone: false))
            .run(on: manager)
        #expect(report.exchanges == 10)
        #expect(report.completed == 7)            // 0 1 2 3 5 7 8
        #expect(report.duplicatesDelivered == 1 && report.corruptDelivered == 1)
        #expect(report.timedOut == 3)             // 4 and 6 waited for their echo; 9 timed out
        #expect(manager.counts.opens == 0 && manager.counts.closes == 0)  // already open, left open
    }

    @Test("a device that never answers: not opened, open's code, no exchanges")
    func noDevice() async {
        let manager = ScriptedManager(openSucceeds: false) { _, d in .init(result: .success(d)) }
        let report = await RemoteLinkTest(options: RemoteLinkTestOptions(mode: .masterSlave, count: 5, size: 8)).run(on: manager)
        #expect(!report.opened && report.openCode == ReturnCode.noDevice)
        #expect(report.exchanges == 0 && manager.counts.exchanges == 0)
        #expect(manager.counts.opens == 3)  // three attempts, as an application would
    }
}
