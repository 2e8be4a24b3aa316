import Testing
import ModemTestSupport
import ModemCodecs
import ModemLink

/// One way of an in-memory byte stream: writes queue up; each read takes a random number of bytes
/// (1...`maximumPiece`), so writes arrive chopped and merged. Junk may be slipped in before a write
/// (between frames) or into the middle of one (damaging that frame, as a stream fault would).
struct BytePipe {
    private(set) var queue: [UInt8] = []
    var random: TestRandom
    var maximumPiece: Int
    /// Probability that junk goes in before a write.
    var junkBetween = 0.0
    /// Probability that junk goes into the middle of a write.
    var junkInside = 0.0
    private(set) var junkInjected = 0
    private(set) var bytesCarried = 0

    init(seed: UInt64, maximumPiece: Int = 700) {
        random = TestRandom(seed: seed)
        self.maximumPiece = maximumPiece
    }

    var isEmpty: Bool { queue.isEmpty }

    mutating func write(_ bytes: [UInt8]) {
        if chance(junkBetween) { queue += junk() }
        if bytes.count > 1 && chance(junkInside) {
            let cut = 1 + Int(random.next() % UInt64(bytes.count - 1))
            queue += bytes[..<cut] + junk() + bytes[cut...]
        } else {
            queue += bytes
        }
    }

    mutating func read() -> [UInt8] {
        guard !queue.isEmpty else { return [] }
        let n = min(queue.count, 1 + Int(random.next() % UInt64(maximumPiece)))
        defer { queue.removeFirst(n) }
        bytesCarried += n
        return Array(queue[..<n])
    }

    private mutating func chance(_ p: Double) -> Bool {
        p > 0 && Double(random.next() % 1_000_000) / 1_000_000 < p
    }

    /// 1...40 random bytes, now and then with a sync word and a plausible header in them.
    private mutating func junk() -> [UInt8] {
        var j = random.bytes(1 + Int(random.next() % 40))
        if random.next() % 3 == 0 { j += [0x53, 0x4D, 0x11, 0, 0x5A, 0, 1, 0, 0, 0, 1, 0, UInt8(random.next() % 200)] }
        junkInjected += j.count
        return j
    }
}

/// A phone and a device `StreamLinkStation` joined by two ``BytePipe``s, on a fake clock advanced in
/// 10 ms steps. Each step: each side reads what its pipe gives it (a side whose writes have all been
/// read is told `transmitted` first), then both tick. The device application echoes: a master-slave
/// request is answered with its bytes; a duplex message is sent back with `send` (queued while a
/// message of the device is still on its way).
struct StreamLink {
    var phone: StreamLinkStation<PhoneStateMachine>
    var device: StreamLinkStation<DeviceStateMachine>
    var toDevice: BytePipe
    var toPhone: BytePipe
    private(set) var now = 0.0
    let step = 0.01
    /// Phone events not yet taken.
    var phoneEvents: [LinkEvent] = []
    /// Every device event.
    private(set) var deviceEvents: [LinkEvent] = []
    private(set) var phoneReleases = 0
    private var phoneWriting = false
    private var deviceWriting = false
    private var echoQueue: [[UInt8]] = []

    init(phone: PhoneStateMachine, device: DeviceStateMachine, seed: UInt64, maximumPiece: Int = 700) {
        self.phone = StreamLinkStation(machine: phone)
        var d = device
        d.attach()
        self.device = StreamLinkStation(machine: d)
        toDevice = BytePipe(seed: seed &* 3 &+ 1, maximumPiece: maximumPiece)
        toPhone = BytePipe(seed: seed &* 3 &+ 2, maximumPiece: maximumPiece)
    }

    /// Whether nothing is in flight: both pipes empty and the device not sending.
    var isQuiet: Bool { toDevice.isEmpty && toPhone.isEmpty && !device.machine.isSending && echoQueue.isEmpty }

    mutating func performPhone(_ actions: [StreamLinkAction]) {
        for a in actions {
            switch a {
            case .write(let b): toDevice.write(b); phoneWriting = true
            case .event(let e): phoneEvents.append(e)
            case .releaseResources: phoneReleases += 1
            }
        }
    }

    mutating func performDevice(_ actions: [StreamLinkAction]) {
        for a in actions {
            switch a {
            case .write(let b): toPhone.write(b); deviceWriting = true
            case .event(let e): deviceEvents.append(e); deviceApplication(e)
            case .releaseResources: break
            }
        }
    }

    private mutating func deviceApplication(_ e: LinkEvent) {
        switch e {
        case .received(let m, let data):
            if device.machine.mode == .masterSlave {
                let (code, actions) = device.machine.reply(data, to: m, now: now)
                #expect(code == 0)
                performDevice(device.perform(actions))
            } else {
                echoQueue.append(data)
                sendNextEcho()
            }
        case .sendOK, .timeout:
            sendNextEcho()
        default:
            break
        }
    }

    private mutating func sendNextEcho() {
        guard !echoQueue.isEmpty, !device.machine.isSending else { return }
        let data = echoQueue.removeFirst()
        let (code, actions) = device.machine.send(data, now: now)
        #expect(code == 0)
        performDevice(device.perform(actions))
    }

    mutating func advance() {
        now += step
        // A side's writes have left once its pipe is empty: it is told so before the peer can
        // answer them (as a transport's queue drains before the bytes reach the peer).
        let forPhone = toPhone.read()
        if deviceWriting && toPhone.isEmpty { deviceWriting = false; performDevice(device.transmitted(now: now)) }
        performPhone(phone.received(bytes: forPhone, now: now))
        let forDevice = toDevice.read()
        if phoneWriting && toDevice.isEmpty { phoneWriting = false; performPhone(phone.transmitted(now: now)) }
        performDevice(device.received(bytes: forDevice, now: now))
        performPhone(phone.tick(now: now))
        performDevice(device.tick(now: now))
    }

    /// Advances until `done` (checked after each step) or `seconds` passed; returns whether `done`.
    @discardableResult
    mutating func run(for seconds: Double, until done: (inout StreamLink) -> Bool = { _ in false }) -> Bool {
        let end = now + seconds
        while now < end {
            advance()
            if done(&self) { return true }
        }
        return false
    }

    mutating func takePhoneEvents() -> [LinkEvent] {
        defer { phoneEvents.removeAll() }
        return phoneEvents
    }

    /// Opens the link; returns `open`'s code.
    mutating func open(session: UInt8 = 0x5A) -> Int32? {
        performPhone(phone.perform(phone.machine.open(session: session, now: now)))
        var code: Int32?
        run(for: 30) { link in
            for case .opened(let c, _) in link.takePhoneEvents() { code = c }
            return code != nil
        }
        return code
    }
}

/// What the phone application saw over a run of exchanges.
struct RunResult {
    var completed = 0
    var corrupt = 0
    var duplicates = 0
    var timedOut = 0
}

/// Runs `count` exchanges of `size` random bytes against the echoing device, as an application would,
/// checking every delivery against what was sent.
private func runExchanges(_ link: inout StreamLink, count: Int, size: Int, timeout: Double = 10, seed: UInt64) -> RunResult {
    var random = TestRandom(seed: seed)
    var result = RunResult()
    var sent: [[UInt8]: Int] = [:]
    var delivered: Set<Int> = []
    /// The exchange a delivery belongs to, if intact and new.
    func check(_ data: [UInt8]) -> Int? {
        guard let i = sent[data] else { result.corrupt += 1; return nil }
        guard delivered.insert(i).inserted else { result.duplicates += 1; return nil }
        return i
    }
    let mode = link.phone.machine.configuration.mode
    for index in 0..<count {
        let data = random.bytes(size)
        sent[data] = index
        let (code, actions) = link.phone.machine.exchange(data, timeout: timeout, now: link.now)
        #expect(code == 0)
        link.performPhone(link.phone.perform(actions))
        var acknowledged = false, echoed = false, ended = false
        link.run(for: timeout + 1) { link in
            for e in link.takePhoneEvents() {
                switch e {
                case .received(_, let d):
                    if check(d) == index { echoed = true }
                    if mode == .masterSlave { ended = true }
                case .sendOK: acknowledged = true; if mode == .duplex && echoed { ended = true }
                case .timeout: result.timedOut += 1; ended = true
                case .error: ended = true
                default: break
                }
            }
            if mode == .duplex && acknowledged && echoed { ended = true }
            return ended
        }
        if acknowledged && echoed { result.completed += 1 }
    }
    // Let anything late arrive, and check it too.
    link.run(for: 5) { $0.isQuiet }
    for case .received(_, let d) in link.takePhoneEvents() { _ = check(d) }
    return result
}

@Suite("The channel protocol over a byte stream (StreamLinkStation, fake clock)")
struct StreamLinkStationTests {
    @Test("byteStream(mode:): 1024-byte fragments, window 16, no preamble, 1 s acknowledgement timeout; audio timing unchanged")
    func byteStreamConfiguration() {
        for mode in CommunicationMode.allCases {
            let c = LinkConfiguration.byteStream(mode: mode)
            #expect(c.mode == mode && c.framePayload == 1024 && c.windowFrames == 16)
            #expect(c.preambleSeconds == 0)
            #expect(c.acknowledgementTimeout == 1)
            #expect(c.suggestedTimeout(bytes: 64) > 10 && c.suggestedTimeout(bytes: 64) < 11)
        }
        // The audio figures are the formula's, as before the timing field existed: plain frames without
        // FEC, coded frames (their line levels and three flags) otherwise.
        let plain = LinkConfiguration(forwardErrorCorrection: .off)
        #expect(plain.timing == .audio)
        #expect(abs(plain.acknowledgementTimeout - (256.0 / 1200 + 0.08 + plain.airtime(payload: 64) + 0.25 + 40.0 / 1200)) < 1e-12)
        #expect(abs(plain.airtime(payload: 64) - Double(17 + 2 + 64 + 1) * 8 * 1.02 / 1200) < 1e-12)
        let audio = LinkConfiguration()
        #expect(audio.forwardErrorCorrection == .auto)
        #expect(abs(audio.airtime(payload: 64) - Double(CodedFrame.lineLevels(payloadLength: 17 + 2 + 64) + 24) / 1200) < 1e-12)
        #expect(audio.airtime(payload: 64) > 2 * plain.airtime(payload: 64))
    }

    @Test("the hello carries the duplex flag in duplex mode only")
    func helloFlag() {
        for mode in CommunicationMode.allCases {
            var phone = PhoneStateMachine(configuration: .byteStream(mode: mode))
            let actions = phone.open(session: 9, now: 0)
            guard case .transmit(let frames)? = actions.last, let hello = frames.first else {
                Issue.record("no hello"); continue
            }
            #expect(hello.kind == .hello)
            #expect(hello.flags.contains(.duplex) == (mode == .duplex))
        }
    }

    @Test("a device following the phone takes the mode of each hello; a configured device keeps its own")
    func followPhone() {
        var following = DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), mode: .followPhone)
        var fixed = DeviceStateMachine(configuration: .byteStream(mode: .masterSlave))
        following.attach()
        fixed.attach()
        for (session, flags, expected) in [(UInt8(1), LinkFrame.Flags.duplex, CommunicationMode.duplex),
                                          (2, [], .masterSlave), (3, .duplex, .duplex)] {
            let hello = LinkFrame(kind: .hello, flags: flags, session: session, payload: Array("phone".utf8))
            #expect(following.receive(hello, now: 0).count == 1)
            #expect(fixed.receive(hello, now: 0).count == 1)
            #expect(following.mode == expected && following.session == session)
            #expect(fixed.mode == .masterSlave)
        }
        // A change of mode within a session starts afresh: a pending request is dropped.
        var device = DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), mode: .followPhone)
        device.attach()
        _ = device.receive(LinkFrame(kind: .hello, session: 4), now: 0)
        _ = device.receive(LinkFrame(kind: .data, flags: .poll, session: 4, message: 1, payload: [1, 2]), now: 0)
        #expect(device.pendingRequest == 1)
        _ = device.receive(LinkFrame(kind: .hello, flags: .duplex, session: 4), now: 0)
        #expect(device.mode == .duplex && device.pendingRequest == nil && device.state == .idle)
    }

    @Test("200 master-slave exchanges over a chopped and merged stream: all complete, nothing corrupt or duplicated")
    func masterSlave200() {
        var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: .masterSlave)),
                              device: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), name: "echo"),
                              seed: 1)
        #expect(link.open() == 0)
        #expect(link.phone.machine.deviceName == "echo")
        let r = runExchanges(&link, count: 200, size: 300, seed: 11)
        #expect(r.completed == 200 && r.corrupt == 0 && r.duplicates == 0 && r.timedOut == 0)
        #expect(link.phone.decoder.junkBytes == 0 && link.device.decoder.junkBytes == 0)
        // A reliable stream: nothing sent again, and the exchanges took one round trip each.
        #expect(link.phone.machine.statistics.retransmissions == 0 && link.device.machine.statistics.retransmissions == 0)
        #expect(link.now < 200 * 0.2)
    }

    @Test("200 duplex exchanges with the device following the phone's mode through the hello flag: acknowledged and echoed")
    func duplex200FollowingPhone() {
        // The device is configured master-slave: only the hello's duplex flag makes it run duplex.
        var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: .duplex)),
                              device: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), mode: .followPhone),
                              seed: 2)
        #expect(link.open() == 0)
        #expect(link.device.machine.mode == .duplex)
        let r = runExchanges(&link, count: 200, size: 300, seed: 12)
        #expect(r.completed == 200 && r.corrupt == 0 && r.duplicates == 0 && r.timedOut == 0)
        #expect(link.device.machine.statistics.messagesDelivered == 200)
        #expect(link.phone.machine.statistics.messagesDelivered == 200)
    }

    @Test("the same device, reopened by a master-slave phone, follows back to master-slave")
    func followBack() {
        var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: .duplex)),
                              device: DeviceStateMachine(configuration: .byteStream(mode: .duplex), mode: .followPhone),
                              seed: 3)
        #expect(link.open(session: 1) == 0)
        #expect(link.device.machine.mode == .duplex)
        #expect(runExchanges(&link, count: 5, size: 10, seed: 1).completed == 5)
        // A new phone (master-slave) on the same device station.
        link.phone = StreamLinkStation(machine: PhoneStateMachine(configuration: .byteStream(mode: .masterSlave)))
        #expect(link.open(session: 2) == 0)
        #expect(link.device.machine.mode == .masterSlave)
        #expect(runExchanges(&link, count: 5, size: 10, seed: 2).completed == 5)
    }

    @Test("messages of several fragments (up to 5000 bytes) both modes, one byte per read")
    func fragmentsByteByByte() {
        for mode in CommunicationMode.allCases {
            var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: mode)),
                                  device: DeviceStateMachine(configuration: .byteStream(mode: mode)), seed: 4, maximumPiece: 1)
            #expect(link.open() == 0)
            // One byte per 10 ms step is slow (100 B/s): a long timeout.
            let r = runExchanges(&link, count: 2, size: 2100, timeout: 200, seed: 4)
            #expect(r.completed == 2 && r.corrupt == 0 && r.duplicates == 0, "\(mode)")
        }
        var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: .duplex)),
                              device: DeviceStateMachine(configuration: .byteStream(mode: .duplex)), seed: 5, maximumPiece: 4000)
        #expect(link.open() == 0)
        let r = runExchanges(&link, count: 20, size: 5000, seed: 5)
        #expect(r.completed == 20 && r.corrupt == 0 && r.duplicates == 0)
    }

    @Test("junk on the pipe, between and inside writes, is survived in both modes: all complete, nothing corrupt or duplicated")
    func junkSurvived() {
        for (mode, seed) in [(CommunicationMode.masterSlave, UInt64(6)), (.duplex, 7)] {
            var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: mode)),
                                  device: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave), mode: .followPhone),
                                  seed: seed)
            for pipe in [\StreamLink.toDevice, \.toPhone] {
                link[keyPath: pipe].junkBetween = 0.3
                link[keyPath: pipe].junkInside = 0.05
            }
            #expect(link.open() == 0)
            let r = runExchanges(&link, count: 200, size: 200, timeout: 20, seed: seed)
            #expect(r.completed == 200 && r.corrupt == 0 && r.duplicates == 0, "\(mode) \(r) \(link.phone.machine.statistics) \(link.device.machine.statistics)")
            // The junk really was there, and was seen; frames damaged by it were recovered by the ARQ.
            #expect(link.toDevice.junkInjected > 1000 && link.toPhone.junkInjected > 1000)
            #expect(link.phone.decoder.junkBytes > 1000 && link.device.decoder.junkBytes > 1000)
            let resent = link.phone.machine.statistics.polls + link.device.machine.statistics.polls
            #expect(resent > 0, "\(mode)")
        }
    }

    @Test("a false header followed by silence does not hold back the hello behind it (the stall is given up)")
    func stalledHeader() {
        var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: .masterSlave)),
                              device: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave)), seed: 8)
        // Junk promising a 2000-byte frame reaches the device before the hello.
        link.toDevice.write([0x53, 0x4D, 0x11, 0, 1, 0, 1, 0, 0, 0, 1, 0x07, 0xD0])
        link.performPhone(link.phone.perform(link.phone.machine.open(session: 7, now: link.now)))
        var opened: Int32?
        link.run(for: 3) { link in
            for case .opened(let c, _) in link.takePhoneEvents() { opened = c }
            return opened != nil
        }
        #expect(opened == 0)
        // Given up after the stall timeout (0.5 s), not after the hello was sent again (1.3 s).
        #expect(link.now < 1.0)
        #expect(link.phone.machine.statistics.framesSent == 1)
    }

    @Test("junk alone answering the hello makes open fail with -3 (something not speaking the protocol), silence with -4")
    func handshakeCodes() {
        var phone = StreamLinkStation(machine: PhoneStateMachine(configuration: .byteStream(mode: .masterSlave)))
        _ = phone.perform(phone.machine.open(session: 1, now: 0))
        _ = phone.transmitted(now: 0)
        var random = TestRandom(seed: 9)
        var code: Int32?
        var t = 0.0
        while code == nil && t < 60 {
            t += 0.01
            var actions = phone.received(bytes: random.bytes(3), now: t)
            actions += phone.tick(now: t)
            for a in actions {
                if case .event(.opened(let c, _)) = a { code = c }
                if case .write = a { _ = phone.transmitted(now: t) }
            }
        }
        #expect(code == ReturnCode.handshakeFailedOrCancelling)

        var silent = StreamLinkStation(machine: PhoneStateMachine(configuration: .byteStream(mode: .masterSlave)))
        _ = silent.perform(silent.machine.open(session: 1, now: 0))
        _ = silent.transmitted(now: 0)
        code = nil
        t = 0
        while code == nil && t < 60 {
            t += 0.01
            for a in silent.tick(now: t) {
                if case .event(.opened(let c, _)) = a { code = c }
                if case .write = a { _ = silent.transmitted(now: t) }
            }
        }
        #expect(code == ReturnCode.noDevice)
    }

    @Test("close: the close signal goes out as bytes, the device answers, the phone asks for the transport to be released")
    func close() {
        var link = StreamLink(phone: PhoneStateMachine(configuration: .byteStream(mode: .masterSlave)),
                              device: DeviceStateMachine(configuration: .byteStream(mode: .masterSlave)), seed: 10)
        #expect(link.open() == 0)
        link.performPhone(link.phone.perform(link.phone.machine.close(now: link.now)))
        #expect(link.run(for: 5) { $0.phoneReleases > 0 })
        #expect(link.phone.releaseRequested)
        #expect(link.takePhoneEvents().contains(.closed))
        #expect(link.device.machine.state == .deviceReady)
        #expect(link.deviceEvents.contains(.closed))
    }
}
