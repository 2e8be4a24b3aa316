import Synchronization
import ModemRuntime

/// What a ``RemoteLinkTest`` runs.
public struct RemoteLinkTestOptions: Sendable, Hashable {
    /// The mode the manager runs (a ``CommunicationManager`` does not say; it must match).
    public var mode: CommunicationMode
    /// Exchanges to run.
    public var count: Int
    /// Bytes per exchange (at least 1, at most the manager's maximum message size).
    public var size: Int
    /// The time each exchange may take (duplex: until both the acknowledgement and the echo came).
    public var timeout: Duration
    /// Seed of the payloads.
    public var seed: UInt64
    /// Whether to close the manager (the close signal) when done.
    public var closeWhenDone: Bool

    /// Creates options.
    public init(mode: CommunicationMode, count: Int, size: Int, timeout: Duration = .seconds(10), seed: UInt64 = 1,
                closeWhenDone: Bool = true) {
        self.mode = mode
        self.count = count
        self.size = size
        self.timeout = timeout
        self.seed = seed
        self.closeWhenDone = closeWhenDone
    }
}

/// The link test against a remote device, over any ``CommunicationManager`` (Bluetooth, or any
/// other transport): the phone end is the manager, the device is another process that echoes.
/// The transport-neutral counterpart of `LinkTest`, which runs both ends in one process.
///
/// Master-slave: each exchange sends `size` random bytes (seeded) and completes when the reply equals
/// the request. Duplex: each exchange sends a message and completes when it was acknowledged
/// (``CommunicationManager/exchange(_:timeout:)`` returned) and the device's echo of it arrived as a
/// ``LinkEvent/received(message:data:)`` on ``CommunicationManager/events``. In duplex the test is
/// that stream's reader (an `AsyncStream` has one, and it ends with the reader's task): a manager
/// whose events something else reads, or will read afterwards, needs master-slave or its own run.
///
/// Every payload delivered is checked against what was sent (a 64-bit hash of each): one that
/// matches nothing counts in ``LinkTestReport/corruptDelivered`` (so does another exchange's reply
/// returned as this one's), one delivered twice in ``LinkTestReport/duplicatesDelivered``. A late
/// echo of an earlier exchange is neither. An echo proves that the request arrived intact, so
/// goodput counts the payload both ways. Frame counts (`framesSent`, ...) stay 0: they are the
/// remote machine's.
///
/// The manager is opened (up to three attempts) when it is not, and again when the link went
/// down during the run; the run stops when that fails.
public struct RemoteLinkTest: Sendable {
    /// The options.
    public let options: RemoteLinkTestOptions

    /// Creates a test.
    public init(options: RemoteLinkTestOptions) {
        precondition(options.count >= 0 && options.size >= 1, "a link test needs count >= 0 and size >= 1")
        precondition(options.timeout > .zero, "the exchange timeout must be positive")
        self.options = options
    }

    /// Runs the exchanges.
    /// - Parameters:
    ///   - manager: the phone end, opened or not.
    ///   - shouldStop: polled between exchanges (e.g. on Ctrl-C); the report then covers what ran.
    ///   - progress: called after each exchange with the report so far.
    public func run(on manager: any CommunicationManager, shouldStop: () -> Bool = { false },
                    progress: (LinkTestReport) -> Void = { _ in }) async -> LinkTestReport {
        var report = LinkTestReport()
        var ledger = DeliveryLedger()
        var random = SplitMix64(seed: options.seed)   // the payloads the audio link test draws
        let echoes = Mailbox()
        let listener: Task<Void, Never>? = options.mode == .duplex ? Task { [events = manager.events] in
            for await e in events {
                if case .received(_, let d) = e { echoes.post(d) } else { echoes.wake() }
            }
        } : nil
        defer { listener?.cancel() }

        let openCode = await openIfNeeded(manager)
        report.openCode = openCode
        report.opened = openCode == ReturnCode.ok
        let clock = ContinuousClock()
        let start = clock.now
        var roundTrips = Duration.zero
        if report.opened {
            for index in 0..<options.count {
                if shouldStop() { break }
                if manager.state == .waitingDevice || manager.state == .deviceDetected {
                    guard await openIfNeeded(manager) == ReturnCode.ok else { break }
                }
                report.exchanges += 1
                let data = random.bytes(options.size)
                ledger.sent(data, index: index)
                let t0 = clock.now
                let outcome = options.mode == .masterSlave
                    ? await masterSlaveExchange(data, index: index, manager, &ledger)
                    : await duplexExchange(data, index: index, manager, &ledger, echoes)
                switch outcome {
                case .completed: report.completed += 1; roundTrips += clock.now - t0
                case .timedOut: report.timedOut += 1
                case .failed: report.failed += 1
                }
                progress(report.with(ledger))
            }
        }
        report.channelSeconds = (clock.now - start).inSeconds
        if report.completed > 0 { report.meanRoundTripMs = roundTrips.inSeconds / Double(report.completed) * 1000 }
        if report.channelSeconds > 0 { report.goodputBps = Double(ledger.deliveredBits) / report.channelSeconds }
        if options.closeWhenDone && report.opened { await manager.close() }
        // What arrived after the last exchange is checked as well.
        for d in echoes.take() { _ = ledger.delivered(d) }
        return report.with(ledger)
    }

    // MARK: Internals

    private enum Outcome { case completed, timedOut, failed }

    /// Opens the manager unless it is already open: up to three attempts, as an application would.
    /// - Returns: `open`'s code (0, or the Communication API's negative code of the last failure).
    private func openIfNeeded(_ manager: any CommunicationManager) async -> Int32 {
        if manager.state == .idle || manager.state == .dataExchange { return ReturnCode.ok }
        var code = ReturnCode.noDevice
        for _ in 0..<3 {
            do {
                try await manager.open()
                return ReturnCode.ok
            } catch {
                code = error.returnCode
            }
        }
        return code
    }

    private func masterSlaveExchange(_ data: [UInt8], index: Int, _ manager: any CommunicationManager,
                                     _ ledger: inout DeliveryLedger) async -> Outcome {
        do {
            let reply = try await manager.exchange(data, timeout: options.timeout)
            switch ledger.delivered(reply) {
            case index?:
                // The echo proves the request arrived intact too.
                ledger.deliveredBits += reply.count * 8
                return .completed
            case _?:
                // Another exchange's reply returned as this one's is wrong data for this request.
                ledger.corrupt += 1
                return .failed
            case nil:
                return .failed
            }
        } catch {
            return error == .timedOut ? .timedOut : .failed
        }
    }

    private func duplexExchange(_ data: [UInt8], index: Int, _ manager: any CommunicationManager,
                                _ ledger: inout DeliveryLedger, _ echoes: Mailbox) async -> Outcome {
        let deadline = ContinuousClock.now + options.timeout
        do {
            _ = try await manager.exchange(data, timeout: options.timeout)
        } catch {
            return error == .timedOut ? .timedOut : .failed
        }
        var echoed = false
        while true {
            for d in echoes.take() {
                // Echoes of earlier exchanges that arrive late are checked too.
                guard ledger.delivered(d) == index else { continue }
                ledger.deliveredBits += d.count * 8
                echoed = true
            }
            if echoed { return .completed }
            if ContinuousClock.now >= deadline { return .timedOut }
            if manager.state == .waitingDevice { return .failed }
            // Until an echo or another event of the manager (a lost link changes its state), or the deadline.
            await echoes.waitForNews(until: deadline)
        }
    }
}

/// What was sent and what was delivered, by content.
private struct DeliveryLedger {
    /// Exchange indexes by payload hash (equal payloads share a hash).
    private var sentByHash: [UInt64: [Int]] = [:]
    private var deliveredIndexes: Set<Int> = []
    var deliveredBits = 0
    var corrupt = 0
    var duplicates = 0

    mutating func sent(_ data: [UInt8], index: Int) {
        sentByHash[Self.hash(data), default: []].append(index)
    }

    /// Records a delivery to the phone.
    /// - Returns: the exchange it belongs to when it is intact and new; nil (and counted) otherwise.
    mutating func delivered(_ data: [UInt8]) -> Int? {
        guard let indexes = sentByHash[Self.hash(data)] else { corrupt += 1; return nil }
        guard let i = indexes.first(where: { !deliveredIndexes.contains($0) }) else { duplicates += 1; return nil }
        deliveredIndexes.insert(i)
        deliveredBits += data.count * 8
        return i
    }

    /// FNV-1a over the bytes, mixed with the length.
    static func hash(_ d: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in d { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h ^ UInt64(d.count)
    }
}

private extension LinkTestReport {
    /// The report with the ledger's delivery counts.
    func with(_ ledger: DeliveryLedger) -> LinkTestReport {
        var r = self
        r.corruptDelivered = ledger.corrupt
        r.duplicatesDelivered = ledger.duplicates
        return r
    }
}

/// Payloads collected by the event listener, taken by the test.
/// Echoes as they come, and a wait for news: an echo, another event of the manager, or a deadline.
private final class Mailbox: Sendable {
    private struct State {
        var items: [[UInt8]] = []
        var news = false
        /// The current wait is over (its deadline came): a news wait that starts late returns at once.
        var over = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func post(_ data: [UInt8]) {
        state.withLock { $0.items.append(data) }
        wake()
    }

    /// Something happened that the waiting exchange should look at: wakes it, or is kept for its
    /// next wait.
    func wake() {
        state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter else { s.news = true; return nil }
            s.waiter = nil
            return w
        }?.resume()
    }

    func take() -> [[UInt8]] { state.withLock { s in defer { s.items.removeAll() }; return s.items } }

    /// Returns at the next news (at once if there was news since the last wait) or at `deadline`.
    func waitForNews(until deadline: ContinuousClock.Instant) async {
        state.withLock { $0.over = false }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.nextNews() }
            group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
            await group.next()
            group.cancelAll()
            // The deadline came first: end the news wait (no news is made up).
            state.withLock { s in s.over = true; defer { s.waiter = nil }; return s.waiter }?.resume()
        }
    }

    private func nextNews() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.news { s.news = false; return true }
                if s.over { return true }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
    }
}

private extension Duration {
    /// The duration in seconds.
    var inSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
