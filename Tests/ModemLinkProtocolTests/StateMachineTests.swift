import Testing
import ModemTestSupport
import ModemCodecs
import ModemLinkProtocol

/// A link whose handshake has completed (checked), with a device application that answers each
/// request with its bytes reversed followed by 0xEE (so a reply is never mistaken for an echo).
private func openedLink(_ configuration: LinkConfiguration = LinkConfiguration(), autoReply: Bool = true) -> FrameLevelLink {
    let link = FrameLevelLink(configuration: configuration)
    if autoReply { link.deviceApplication = { _, data in answer(data) } }
    link.open()
    link.run(for: 30) { link.openCode() != nil }
    #expect(link.openCode() == 0)
    #expect(link.phone.state == .idle)
    return link
}

private func answer(_ request: [UInt8]) -> [UInt8] { request.reversed() + [0xEE] }

/// Whether the phone reported an outcome (reply, timeout, error) for the exchange under way.
private func exchangeEnded(_ link: FrameLevelLink, after count: Int) -> Bool {
    link.phoneOutcomes.dropFirst(count).contains {
        switch $0 {
        case .received, .timeout, .error: return true
        default: return false
        }
    }
}

@Suite("Phone and device state machines against each other (frame level, no audio)")
struct StateMachineTests {
    // MARK: Open

    @Test("open: the handshake gives opened(0) with the device's name; states follow the seed")
    func openHandshake() {
        let link = FrameLevelLink(attachDevice: false)
        #expect(link.device.state == .notReady)
        link.device.attach()
        #expect(link.device.state == .deviceReady)
        #expect(link.phone.state == .waitingDevice)
        link.open(session: 0x42)
        #expect(link.run(for: 10) { link.openCode() != nil })
        #expect(link.phoneOutcomes == [.opened(code: 0, deviceName: "test device")])
        #expect(link.phone.deviceName == "test device")
        #expect(link.phone.session == 0x42)
        #expect(link.device.session == 0x42)
        #expect(link.phoneStates == [.waitingDevice, .idle])
        #expect(link.deviceStates == [.notReady, .deviceReady, .idle])
        #expect(link.framesSent(.toDevice, .hello).count == 1)
        #expect(link.framesSent(.toPhone, .helloAck).count == 1)
        // Nothing more happens on an idle link.
        link.run(for: 20)
        #expect(link.phoneOutcomes.count == 1 && link.deviceOutcomes.isEmpty)
        #expect(link.log.count == 2)
    }

    @Test("open: a lost hello or a lost helloAck is recovered by the next attempt")
    func openRetries() {
        for lost in [FrameDirection.toDevice, .toPhone] {
            let link = FrameLevelLink()
            let filter = FrameFilter([(lost, lost == .toDevice ? .hello : .helloAck, [1], .drop)])
            link.channel = filter.fate
            link.open()
            #expect(link.run(for: 30) { link.openCode() != nil })
            #expect(link.openCode() == 0)
            #expect(link.framesSent(.toDevice, .hello).count == 2)
            #expect(link.phone.state == .idle && link.device.state == .idle)
        }
    }

    @Test("open with no device: opened(-4) after the handshake attempts, exchange then says -4", arguments: [1, 3, 5])
    func openNoDevice(attempts: Int) {
        // signalAttempts (cancel, close) must not matter for the hellos.
        let configuration = LinkConfiguration(signalAttempts: 2, handshakeAttempts: attempts)
        let link = FrameLevelLink(configuration: configuration)
        link.channel = { direction, _ in direction == .toDevice ? .drop : .deliver }
        link.open()
        #expect(link.run(for: 60) { link.openCode() != nil })
        #expect(link.phoneOutcomes == [.opened(code: ReturnCode.noDevice, deviceName: nil)])
        #expect(link.framesSent(.toDevice, .hello).count == attempts)
        #expect(link.phone.state == .waitingDevice)
        // Each attempt waits at least an acknowledgement timeout after its transmission.
        #expect(link.now >= Double(attempts) * configuration.acknowledgementTimeout)
        #expect(link.exchange([1, 2, 3], timeout: 5) == ReturnCode.noDevice)
        #expect(link.cancel() == ReturnCode.noDevice)
        // No further hellos once it gave up.
        link.run(for: 20)
        #expect(link.framesSent(.toDevice, .hello).count == attempts)
    }

    @Test("open: a device not attached to the audio never answers")
    func openUnattachedDevice() {
        let link = FrameLevelLink(attachDevice: false)
        link.open()
        #expect(link.run(for: 60) { link.openCode() != nil })
        #expect(link.openCode() == ReturnCode.noDevice)
        #expect(link.device.state == .notReady)
        #expect(link.framesSent(.toPhone, .helloAck).isEmpty)
    }

    @Test("open: something heard that is not a valid answer gives opened(-3), handshake failed")
    func openHandshakeFailed() {
        let link = FrameLevelLink()
        link.channel = { direction, _ in direction == .toDevice ? .drop : .deliver }
        link.open()
        link.phone.heardSignal()
        #expect(link.phone.state == .deviceDetected)
        #expect(link.run(for: 60) { link.openCode() != nil })
        #expect(link.openCode() == ReturnCode.handshakeFailedOrCancelling)
        #expect(link.phone.state == .waitingDevice)
    }

    // MARK: Master-slave exchanges

    @Test("master-slave: the request reaches the device, the reply comes back, with sendOK")
    func masterSlaveExchange() {
        let link = openedLink()
        var random = TestRandom(seed: 1)
        let request = random.bytes(200)
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: 30) == ReturnCode.ok)
        #expect(link.phone.state == .dataExchange)
        #expect(link.run(for: 40) { exchangeEnded(link, after: before) })
        #expect(link.deviceReceived.count == 1)
        #expect(link.deviceReceived.first?.data == request)
        let message = link.deviceReceived.first!.message
        #expect(Array(link.phoneOutcomes.dropFirst(before)) == [.sendOK(message: message),
                                                               .received(message: message, data: answer(request))])
        #expect(link.deviceReplyCodes == [ReturnCode.ok])
        #expect(link.phone.state == .idle)
        #expect(link.phoneStates == [.waitingDevice, .idle, .dataExchange, .idle])
        #expect(link.deviceStates.contains(.dataProcess))
        // The device's reply gets acknowledged: the device reports sendOK and goes back to IDLE.
        link.runUntilQuiet()
        #expect(link.deviceOutcomes.last == .sendOK(message: message))
        #expect(link.device.state == .idle)
        #expect(link.phone.statistics.retransmissions == 0 && link.device.statistics.retransmissions == 0)
        // A second exchange uses a new message number and works the same way.
        let second = random.bytes(10)
        let before2 = link.phoneOutcomes.count
        #expect(link.exchange(second, timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 40) { exchangeEnded(link, after: before2) })
        #expect(link.deviceReceived.count == 2)
        let m2 = link.deviceReceived[1].message
        #expect(m2 != message)
        #expect(link.phoneReceived.last?.message == m2 && link.phoneReceived.last?.data == answer(second))
    }

    @Test("master-slave: an empty request and an empty reply")
    func emptyExchange() {
        let link = openedLink(autoReply: false)
        link.deviceApplication = { _, _ in [] }
        #expect(link.exchange([], timeout: 20) == ReturnCode.ok)
        #expect(link.run(for: 30) { !link.phoneReceived.isEmpty })
        #expect(link.deviceReceived.map(\.data) == [[]])
        #expect(link.phoneReceived.map(\.data) == [[]])
    }

    @Test("master-slave: a 64 KiB request and reply are fragmented and reassembled")
    func largeExchange() {
        let configuration = LinkConfiguration()
        let link = openedLink(configuration)
        var random = TestRandom(seed: 64)
        let request = random.bytes(64 * 1024)
        let fragments = request.count / configuration.framePayload
        let timeout = configuration.suggestedTimeout(bytes: request.count)
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: timeout) == ReturnCode.ok)
        #expect(link.run(for: timeout + 10) { exchangeEnded(link, after: before) })
        #expect(link.deviceReceived.map(\.data) == [request])
        #expect(link.phoneReceived.map(\.data) == [answer(request)])
        // Fragmentation: each fragment sent once, all declaring the same count.
        let requestFrames = link.framesSent(.toDevice, .data)
        #expect(requestFrames.count == fragments)
        #expect(Set(requestFrames.map(\.fragment)) == Set((0..<fragments).map(UInt16.init)))
        #expect(requestFrames.allSatisfy { $0.fragmentCount == UInt16(fragments) && $0.payload.count == configuration.framePayload })
        // Bursts of windowFrames, each ending with a poll.
        #expect(requestFrames.filter { $0.flags.contains(.poll) }.count == fragments / configuration.windowFrames)
        let replyFrames = link.framesSent(.toPhone, .data)
        #expect(replyFrames.count == fragments + 1)  // one extra byte in the reply
        #expect(replyFrames.allSatisfy { $0.flags.contains(.reply) && $0.flags.contains(.fromDevice) })
        // Progress of the request as the phone saw it: increasing, never beyond the total.
        let requestAcknowledged = link.phoneEvents.firstIndex { if case .sendOK = $0.event { true } else { false } }!
        let progress = link.phoneEvents[..<requestAcknowledged].compactMap { e -> (Int, Int)? in
            if case .progress(let b, let t) = e.event { return (b, t) } else { return nil }
        }
        #expect(!progress.isEmpty)
        #expect(progress.allSatisfy { $0.1 == request.count && $0.0 <= $0.1 })
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.0 < $1.0 })
        #expect(link.phone.statistics.retransmissions == 0)
    }

    @Test("master-slave: the first data frame lost is sent again; the device gets the request once")
    func lostDataFrame() {
        let link = openedLink()
        link.channel = FrameFilter([(.toDevice, .data, [1], .drop)]).fate
        let request: [UInt8] = Array(0..<100)
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 40) { exchangeEnded(link, after: before) })
        #expect(link.deviceReceived.map(\.data) == [request])
        #expect(link.phoneReceived.map(\.data) == [answer(request)])
        #expect(link.framesSent(.toDevice, .data).count == 2)
        #expect(link.phone.statistics.polls >= 1)
        #expect(link.phone.statistics.retransmissions == 1)
        #expect(link.phoneOutcomes.dropFirst(before).filter { if case .sendOK = $0 { true } else { false } }.count == 1)
    }

    @Test("master-slave: one lost fragment of several is the only one sent again")
    func lostMiddleFragment() {
        let configuration = LinkConfiguration(framePayload: 64)
        let link = openedLink(configuration)
        link.channel = FrameFilter([(.toDevice, .data, [3], .drop)]).fate
        var random = TestRandom(seed: 3)
        let request = random.bytes(300)  // 5 fragments
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 40) { exchangeEnded(link, after: before) })
        #expect(link.deviceReceived.map(\.data) == [request])
        #expect(link.phoneReceived.map(\.data) == [answer(request)])
        let sent = link.framesSent(.toDevice, .data).map(\.fragment)
        #expect(sent == [0, 1, 2, 3, 4, 2])
        #expect(link.phone.statistics.retransmissions == 1)
    }

    @Test("master-slave: a lost acknowledgement, reply at once: the reply proves delivery")
    func lostAckImmediateReply() {
        let link = openedLink()
        link.channel = FrameFilter([(.toPhone, .ack, [1], .drop)]).fate
        let request: [UInt8] = [1, 2, 3, 4]
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 40) { exchangeEnded(link, after: before) })
        let m = link.deviceReceived.first?.message ?? 0
        #expect(link.deviceReceived.map(\.data) == [request])
        #expect(Array(link.phoneOutcomes.dropFirst(before)) == [.sendOK(message: m), .received(message: m, data: answer(request))])
    }

    @Test("master-slave: a lost acknowledgement, slow reply: the phone polls, nothing is delivered twice")
    func lostAckSlowReply() {
        let configuration = LinkConfiguration()
        let link = openedLink(configuration, autoReply: false)
        link.channel = FrameFilter([(.toPhone, .ack, [1], .drop)]).fate
        let request: [UInt8] = Array(repeating: 0x42, count: 50)
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: 60) == ReturnCode.ok)
        // Wait well past the acknowledgement timeout before replying.
        #expect(link.run(for: 20) { link.phoneOutcomes.dropFirst(before).contains { if case .sendOK = $0 { true } else { false } } })
        #expect(link.phone.statistics.polls >= 1)
        #expect(link.framesSent(.toDevice, .data).count == 1)  // a poll, not a resend
        #expect(link.deviceReceived.count == 1)
        let m = link.deviceReceived[0].message
        #expect(link.deviceReply([7, 7, 7], to: m) == ReturnCode.ok)
        #expect(link.run(for: 20) { exchangeEnded(link, after: before) })
        #expect(Array(link.phoneOutcomes.dropFirst(before)) == [.sendOK(message: m), .received(message: m, data: [7, 7, 7])])
        #expect(link.deviceReceived.count == 1)
    }

    @Test("master-slave: every frame delivered twice; each application gets each message once")
    func duplicatedFrames() {
        let configuration = LinkConfiguration(framePayload: 32)
        let link = openedLink(configuration)
        link.channel = { _, _ in .duplicate }
        var random = TestRandom(seed: 8)
        for round in 1...3 {
            let request = random.bytes(100)  // 4 fragments
            let before = link.phoneOutcomes.count
            #expect(link.exchange(request, timeout: 30) == ReturnCode.ok)
            #expect(link.run(for: 40) { exchangeEnded(link, after: before) })
            link.runUntilQuiet()
            #expect(link.deviceReceived.count == round)
            #expect(link.deviceReceived.last?.data == request)
            #expect(link.phoneReceived.count == round)
            #expect(link.phoneReceived.last?.data == answer(request))
            #expect(link.phoneOutcomes.dropFirst(before).filter { if case .sendOK = $0 { true } else { false } }.count == 1)
        }
        #expect(link.device.statistics.duplicateFrames >= 12)
        #expect(link.phone.statistics.duplicateFrames >= 12)
        #expect(link.device.statistics.messagesDelivered == 3)
        #expect(link.phone.statistics.messagesDelivered == 3)
    }

    @Test("master-slave: a lost reply frame is sent again by the device")
    func lostReplyFrame() {
        let link = openedLink()
        link.channel = FrameFilter([(.toPhone, .data, [1], .drop)]).fate
        let request: [UInt8] = [9, 8, 7]
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 40) { exchangeEnded(link, after: before) })
        #expect(link.phoneReceived.map(\.data) == [answer(request)])
        #expect(link.device.statistics.polls >= 1)
        #expect(link.device.statistics.retransmissions == 1)
        #expect(link.deviceReceived.count == 1)
    }

    @Test("master-slave: a device that never answers gives timeout at the exchange deadline")
    func timeoutAtDeadline() {
        let link = openedLink(autoReply: false)
        let timeout = 4.0
        let start = link.now
        let before = link.phoneOutcomes.count
        #expect(link.exchange([1, 2, 3], timeout: timeout) == ReturnCode.ok)
        #expect(link.run(for: 30) { exchangeEnded(link, after: before) })
        let m = link.deviceReceived.first?.message ?? 0
        #expect(Array(link.phoneOutcomes.dropFirst(before)) == [.sendOK(message: m), .timeout(message: m)])
        let at = link.phoneEvents.last!.time
        #expect(at >= start + timeout - 1e-9)
        #expect(at <= start + timeout + link.step + 1e-9)
        #expect(link.phone.state == .idle)
        // A new exchange may start; the device's late reply to the old one is not delivered as its reply.
        #expect(link.deviceReply([0xAA], to: m) == ReturnCode.ok)
        let before2 = link.phoneOutcomes.count
        #expect(link.exchange([4, 5], timeout: 5) == ReturnCode.ok)
        link.run(for: 10) { exchangeEnded(link, after: before2) }
        #expect(!link.phoneReceived.contains { $0.data == [0xAA] })
    }

    @Test("master-slave: a request that never gets through times out; the phone keeps polling until then")
    func timeoutWithoutDevice() {
        let link = openedLink()
        link.channel = { direction, frame in direction == .toDevice && frame.kind != .hello ? .drop : .deliver }
        let before = link.phoneOutcomes.count
        let start = link.now
        #expect(link.exchange([1], timeout: 10) == ReturnCode.ok)
        #expect(link.run(for: 20) { exchangeEnded(link, after: before) })
        #expect(link.phoneOutcomes.dropFirst(before).map { $0 } == [.timeout(message: 1)])
        #expect(abs(link.phoneEvents.last!.time - (start + 10)) <= link.step + 1e-9)
        #expect(link.phone.statistics.polls >= 2)
        // No polls after the exchange ended.
        let polls = link.framesSent(.toDevice, .poll).count
        link.run(for: 20)
        #expect(link.framesSent(.toDevice, .poll).count == polls)
    }

    @Test("device: a reply nobody acknowledges is given up after maximumPolls polls")
    func deviceGivesUpReply() {
        let configuration = LinkConfiguration(maximumPolls: 3)
        let link = openedLink(configuration)
        link.channel = { direction, frame in direction == .toPhone && (frame.kind == .data || frame.kind == .poll) ? .drop : .deliver }
        let before = link.phoneOutcomes.count
        #expect(link.exchange([5, 5], timeout: 60) == ReturnCode.ok)
        #expect(link.run(for: 60) { link.deviceOutcomes.contains { if case .timeout = $0 { true } else { false } } })
        #expect(link.framesSent(.toPhone, .poll).count == 3)
        #expect(link.device.state == .idle)
        #expect(link.phoneReceived.isEmpty)
        #expect(link.phoneOutcomes.dropFirst(before).allSatisfy { if case .sendOK = $0 { true } else { false } })
    }

    // MARK: Return codes

    @Test("exchange return codes: -2 before open, -1 while one is under way, -3 too large, 0 otherwise")
    func exchangeReturnCodes() {
        let configuration = LinkConfiguration(framePayload: 64, maximumMessageSize: 256)
        let link = FrameLevelLink(configuration: configuration)
        link.deviceApplication = { _, data in data }
        #expect(link.exchange([1], timeout: 5) == ReturnCode.notOpenedOrInput)
        #expect(link.log.isEmpty)
        link.open()
        // Not opened until the handshake has completed.
        #expect(link.exchange([1], timeout: 5) == ReturnCode.notOpenedOrInput)
        link.run(for: 10) { link.openCode() != nil }
        #expect(link.openCode() == 0)
        #expect(link.exchange(Array(repeating: 1, count: 257), timeout: 5) == ReturnCode.handshakeFailedOrCancelling)
        #expect(link.phone.state == .idle)
        #expect(link.framesSent(.toDevice, .data).isEmpty)
        var random = TestRandom(seed: 256)
        let largest = random.bytes(256)
        let before = link.phoneOutcomes.count
        #expect(link.exchange(largest, timeout: 30) == ReturnCode.ok)
        #expect(link.exchange([2], timeout: 5) == ReturnCode.busyOrOutput)
        #expect(link.exchange(Array(repeating: 1, count: 257), timeout: 5) == ReturnCode.busyOrOutput)
        #expect(link.run(for: 40) { exchangeEnded(link, after: before) })
        #expect(link.deviceReceived.map(\.data) == [largest])
        #expect(link.phoneReceived.map(\.data) == [largest])
        #expect(link.framesSent(.toDevice, .data).count == 4)
        link.runUntilQuiet()
        #expect(link.exchange([3], timeout: 5) == ReturnCode.ok)
    }

    @Test("device reply return codes: -2 not connected, -1 not the pending request, -3 too large")
    func deviceReplyCodes() {
        let configuration = LinkConfiguration(framePayload: 64, maximumMessageSize: 128)
        var device = DeviceStateMachine(configuration: configuration)
        #expect(device.reply([1], to: 1, now: 0).code == ReturnCode.notOpenedOrInput)
        #expect(device.send([1], now: 0).code == ReturnCode.notOpenedOrInput)
        let link = openedLink(configuration, autoReply: false)
        #expect(link.exchange([1, 2], timeout: 30) == ReturnCode.ok)
        link.run(for: 10) { !link.deviceReceived.isEmpty }
        let m = link.deviceReceived[0].message
        #expect(link.device.pendingRequest == m)
        #expect(link.deviceReply([0], to: m &+ 1) == ReturnCode.busyOrOutput)
        #expect(link.deviceReply(Array(repeating: 0, count: 129), to: m) == ReturnCode.handshakeFailedOrCancelling)
        #expect(link.deviceReply(Array(repeating: 0, count: 128), to: m) == ReturnCode.ok)
        #expect(link.deviceReply([0], to: m) == ReturnCode.busyOrOutput)  // already answered
    }

    // MARK: Cancel

    @Test("cancel return codes: -2 before open, -1 with no exchange, 0 during one, -3 on a second cancel")
    func cancelReturnCodes() {
        let link = FrameLevelLink()
        #expect(link.cancel() == ReturnCode.notOpenedOrInput)
        link.open()
        link.run(for: 10) { link.openCode() != nil }
        #expect(link.cancel() == ReturnCode.busyOrOutput)
        #expect(link.exchange([1, 2, 3], timeout: 30) == ReturnCode.ok)
        #expect(link.cancel() == ReturnCode.ok)
        #expect(link.phone.isCancelling)
        #expect(link.cancel() == ReturnCode.handshakeFailedOrCancelling)
        // While cancelling, no new exchange.
        #expect(link.exchange([4], timeout: 30) == ReturnCode.busyOrOutput)
    }

    @Test("cancel answered by the device: error(cancelSucceeded), device reports cancelled")
    func cancelSucceeds() {
        let link = openedLink(autoReply: false)
        let before = link.phoneOutcomes.count
        #expect(link.exchange([1, 2, 3], timeout: 60) == ReturnCode.ok)
        #expect(link.run(for: 10) { !link.deviceReceived.isEmpty })
        let m = link.deviceReceived[0].message
        #expect(link.device.state == .dataProcess)
        #expect(link.cancel() == ReturnCode.ok)
        #expect(link.run(for: 20) { exchangeEnded(link, after: before) })
        let outcomes = Array(link.phoneOutcomes.dropFirst(before))
        #expect(outcomes.count == 2)
        #expect(outcomes.first == .sendOK(message: m))
        if case .error(let code, _)? = outcomes.last { #expect(code == .cancelSucceeded) } else { Issue.record("\(outcomes)") }
        #expect(link.deviceOutcomes.contains(.cancelled(message: m)))
        #expect(link.phone.state == .idle && !link.phone.isCancelling)
        #expect(link.device.state == .idle)
        #expect(link.framesSent(.toDevice, .cancel).count == 1)
        // The cancelled request can no longer be answered; the link works on.
        #expect(link.deviceReply([0], to: m) == ReturnCode.busyOrOutput)
        #expect(link.cancel() == ReturnCode.busyOrOutput)
        link.deviceApplication = { _, data in answer(data) }
        let before2 = link.phoneOutcomes.count
        #expect(link.exchange([4, 5], timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 30) { exchangeEnded(link, after: before2) })
        #expect(link.phoneReceived.last?.data == answer([4, 5]))
    }

    @Test("cancel with every cancel frame lost: error(cancelFailed) after the signal attempts")
    func cancelFails() {
        let configuration = LinkConfiguration()
        let link = openedLink(configuration, autoReply: false)
        link.channel = { direction, frame in direction == .toDevice && frame.kind == .cancel ? .drop : .deliver }
        #expect(link.exchange([1, 2, 3], timeout: 120) == ReturnCode.ok)
        #expect(link.run(for: 10) { link.phoneOutcomes.contains { if case .sendOK = $0 { true } else { false } } })
        #expect(link.deviceReceived.count == 1)
        let before = link.phoneOutcomes.count
        #expect(link.cancel() == ReturnCode.ok)
        #expect(link.run(for: 60) { !link.phoneErrors().isEmpty })
        #expect(link.phoneErrors() == [.cancelFailed])
        #expect(link.phoneOutcomes.dropFirst(before).count == 1)
        #expect(link.framesSent(.toDevice, .cancel).count == configuration.signalAttempts)
        #expect(!link.phone.isCancelling)
        #expect(link.now < 120)  // before the exchange deadline
        #expect(!link.deviceOutcomes.contains { if case .cancelled = $0 { true } else { false } })
    }

    @Test("cancel still unconfirmed at the exchange deadline: cancelFailed and timeout")
    func cancelPendingAtDeadline() {
        let link = openedLink(autoReply: false)
        link.channel = { direction, frame in direction == .toDevice && frame.kind == .cancel ? .drop : .deliver }
        let before = link.phoneOutcomes.count
        #expect(link.exchange([1], timeout: 2) == ReturnCode.ok)
        #expect(link.run(for: 1.5) { !link.deviceReceived.isEmpty })
        #expect(link.cancel() == ReturnCode.ok)
        link.run(for: 10) { link.phoneOutcomes.dropFirst(before).contains { if case .timeout = $0 { true } else { false } } }
        let outcomes = link.phoneOutcomes.dropFirst(before).filter { if case .sendOK = $0 { false } else { true } }
        #expect(outcomes.count == 2)
        if case .error(.cancelFailed, _)? = outcomes.first {} else { Issue.record("\(outcomes)") }
        if case .timeout? = outcomes.last {} else { Issue.record("\(outcomes)") }
        link.run(for: 10)
        #expect(link.phoneErrors() == [.cancelFailed])  // reported once
    }

    @Test("cancel while the reply is already on its way: one cancel outcome, the reply at most once")
    func cancelRacesReply() {
        let link = openedLink(autoReply: false)
        var random = TestRandom(seed: 21)
        let reply = random.bytes(600)  // one long frame (about 4 s on the air)
        link.deviceApplication = { _, _ in reply }
        #expect(link.exchange([1, 2, 3], timeout: 60) == ReturnCode.ok)
        #expect(link.run(for: 10) { !link.deviceReceived.isEmpty })
        #expect(link.deviceTransmitting)  // the reply is on the air
        #expect(link.cancel() == ReturnCode.ok)
        // The device's cancel-ack queues behind the reply, so the phone's attempts run out first
        // (cancelFailed) and the exchange goes on: the reply is then delivered.
        link.run(for: 30) { !link.phoneReceived.isEmpty && !link.phoneErrors().isEmpty }
        link.runUntilQuiet()
        link.run(for: 10)
        #expect(link.phoneErrors() == [.cancelFailed])
        #expect(link.phoneReceived.map(\.data) == [reply])
        #expect(link.phone.state == .idle && !link.phone.isCancelling)
        #expect(!link.phoneOutcomes.contains { if case .timeout = $0 { true } else { false } })
        #expect(link.exchange([4], timeout: 5) == ReturnCode.ok)
    }

    @Test("a confirmed cancel: a reply still on its way afterwards is not delivered")
    func lateReplyAfterCancel() {
        let link = openedLink(autoReply: false)
        #expect(link.exchange([1, 2, 3], timeout: 60) == ReturnCode.ok)
        #expect(link.run(for: 10) { !link.deviceReceived.isEmpty })
        let m = link.deviceReceived[0].message
        #expect(link.cancel() == ReturnCode.ok)
        #expect(link.run(for: 20) { !link.phoneErrors().isEmpty })
        #expect(link.phoneErrors() == [.cancelSucceeded])
        // The device application answers anyway (refused: the request was cancelled), and a stray
        // reply frame of that message is acknowledged but never delivered.
        #expect(link.deviceReply([0xBB], to: m) == ReturnCode.busyOrOutput)
        let stray = LinkFrame(kind: .data, flags: [.fromDevice, .reply, .poll], session: link.phone.session, message: m,
                              payload: [0xBB])
        let actions = link.phone.receive(stray, now: link.now)
        #expect(actions.count == 1)
        if case .transmit(let frames)? = actions.first {
            #expect(frames.map(\.kind) == [.ack])
            #expect(frames.first?.flags.contains(.complete) == true)
        } else {
            Issue.record("\(actions)")
        }
        #expect(link.phoneReceived.isEmpty)
    }

    @Test("open again during an exchange ends it with error(exchangeState), and the new session works")
    func reopenDuringExchange() {
        let link = openedLink(autoReply: false)
        #expect(link.exchange([1, 2], timeout: 30) == ReturnCode.ok)
        link.run(for: 10) { !link.deviceReceived.isEmpty }
        let before = link.phoneOutcomes.count
        link.open(session: 0x77)
        #expect(link.phone.state == .waitingDevice)
        #expect(link.run(for: 20) { link.phoneOutcomes.dropFirst(before).contains { if case .opened = $0 { true } else { false } } })
        let outcomes = Array(link.phoneOutcomes.dropFirst(before)).filter { if case .sendOK = $0 { false } else { true } }
        if case .error(.exchangeState, _)? = outcomes.first {} else { Issue.record("\(outcomes)") }
        #expect(outcomes.last == .opened(code: 0, deviceName: "test device"))
        #expect(link.device.session == 0x77)
        #expect(link.device.pendingRequest == nil)  // the old session's request is forgotten
        link.deviceApplication = { _, data in answer(data) }
        let before2 = link.phoneOutcomes.count
        #expect(link.exchange([3], timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 30) { exchangeEnded(link, after: before2) })
        #expect(link.phoneReceived.map(\.data) == [answer([3])])
        link.run(for: 40)
        #expect(!link.phoneOutcomes.contains { if case .timeout = $0 { true } else { false } })
    }

    @Test("closeResources and transportFailed: no frames, the link must be opened again")
    func localShutdown() {
        let link = openedLink(autoReply: false)
        var phone = link.phone
        let frames = link.log.count
        #expect(phone.closeResources() == [.releaseResources, .event(.closed)])
        #expect(phone.state == .waitingDevice)
        #expect(phone.exchange([1], timeout: 5, now: link.now).code == ReturnCode.notOpenedOrInput)
        #expect(link.log.count == frames)

        var phone2 = link.phone
        #expect(phone2.exchange([1], timeout: 5, now: link.now).code == ReturnCode.ok)
        #expect(phone2.transportFailed(.playbackWrite, "write failed") == [.event(.error(.playbackWrite, "write failed"))])
        #expect(phone2.state == .waitingDevice)
        #expect(phone2.exchange([1], timeout: 5, now: link.now).code == ReturnCode.notOpenedOrInput)
        #expect(phone2.tick(now: link.now + 100).isEmpty)  // the abandoned exchange does not time out later
    }

    // MARK: Close

    @Test("close: closed and releaseResources after the close signal; device back to DEVICE READY")
    func close() {
        let link = openedLink()
        #expect(link.exchange([1], timeout: 10) == ReturnCode.ok)
        link.run(for: 20) { !link.phoneReceived.isEmpty }
        link.runUntilQuiet()
        let before = link.phoneOutcomes.count
        link.close()
        #expect(link.exchange([2], timeout: 10) == ReturnCode.notOpenedOrInput)  // while closing
        #expect(link.phoneReleaseRequests == 0)
        #expect(link.run(for: 20) { link.phoneOutcomes.count > before })
        #expect(Array(link.phoneOutcomes.dropFirst(before)) == [.closed])
        #expect(link.phoneReleaseRequests == 1)
        #expect(link.deviceOutcomes.last == .closed)
        #expect(link.device.state == .deviceReady)
        #expect(link.device.session == nil)
        #expect(link.phone.state == .waitingDevice)
        #expect(link.framesSent(.toDevice, .close).count == 1)
        #expect(link.framesSent(.toPhone, .closeAck).count == 1)
        #expect(link.exchange([3], timeout: 10) == ReturnCode.notOpenedOrInput)
        #expect(link.cancel() == ReturnCode.notOpenedOrInput)
        // It opens again.
        link.open(session: 0x11)
        #expect(link.run(for: 20) { link.phoneOutcomes.count > before + 1 })
        #expect(link.phoneOutcomes.last == .opened(code: 0, deviceName: "test device"))
        #expect(link.device.state == .idle)
    }

    @Test("close with every close frame lost: closed and releaseResources after the signal attempts")
    func closeUnconfirmed() {
        let configuration = LinkConfiguration()
        let link = openedLink(configuration)
        link.channel = { direction, frame in direction == .toDevice && frame.kind == .close ? .drop : .deliver }
        link.close()
        #expect(link.run(for: 30) { link.phoneOutcomes.contains(.closed) })
        #expect(link.framesSent(.toDevice, .close).count == configuration.signalAttempts)
        #expect(link.phoneReleaseRequests == 1)
        #expect(link.phone.state == .waitingDevice)
        #expect(link.device.state == .idle)  // never heard it
        #expect(link.exchange([1], timeout: 5) == ReturnCode.notOpenedOrInput)
    }

    @Test("close during an exchange ends it with error(exchangeState)")
    func closeDuringExchange() {
        let link = openedLink(autoReply: false)
        #expect(link.exchange([1, 2], timeout: 30) == ReturnCode.ok)
        link.run(for: 0.2)
        let before = link.phoneOutcomes.count
        link.close()
        #expect(link.run(for: 20) { link.phoneOutcomes.contains(.closed) })
        let outcomes = Array(link.phoneOutcomes.dropFirst(before))
        if case .error(.exchangeState, _)? = outcomes.first {} else { Issue.record("\(outcomes)") }
        #expect(outcomes.last == .closed)
        #expect(!outcomes.contains { if case .timeout = $0 { true } else { false } })
        link.run(for: 40)
        #expect(!link.phoneOutcomes.contains { if case .timeout = $0 { true } else { false } })
    }

    // MARK: Duplex

    @Test("duplex: both sides send at once; each receives the other's message and gets sendOK")
    func duplexBothWays() {
        let configuration = LinkConfiguration(mode: .duplex, framePayload: 128)
        let link = openedLink(configuration, autoReply: false)
        var random = TestRandom(seed: 2)
        for _ in 0..<3 {
            let fromPhone = random.bytes(300), fromDevice = random.bytes(500)
            let phoneBefore = link.phoneOutcomes.count, deviceBefore = link.deviceOutcomes.count
            #expect(link.exchange(fromPhone, timeout: 30) == ReturnCode.ok)
            #expect(link.deviceSend(fromDevice, timeout: 30) == ReturnCode.ok)
            #expect(link.deviceSend([1], timeout: 30) == ReturnCode.busyOrOutput)
            #expect(link.phoneTransmitting && link.deviceTransmitting)
            #expect(link.run(for: 40) {
                link.phoneOutcomes.count >= phoneBefore + 2 && link.deviceOutcomes.count >= deviceBefore + 2
            })
            link.runUntilQuiet()
            let p = Array(link.phoneOutcomes.dropFirst(phoneBefore)), d = Array(link.deviceOutcomes.dropFirst(deviceBefore))
            #expect(p.count == 2 && d.count == 2)
            #expect(p.contains { if case .received(_, let data) = $0 { data == fromDevice } else { false } })
            #expect(p.contains { if case .sendOK = $0 { true } else { false } })
            #expect(d.contains { if case .received(_, let data) = $0 { data == fromPhone } else { false } })
            #expect(d.contains { if case .sendOK = $0 { true } else { false } })
            #expect(link.phone.state == .idle)
        }
        #expect(link.phone.statistics.messagesDelivered == 3 && link.device.statistics.messagesDelivered == 3)
    }

    @Test("duplex: an exchange ends with sendOK, no reply needed; a message from the device arrives unasked")
    func duplexOneWay() {
        let configuration = LinkConfiguration(mode: .duplex)
        let link = openedLink(configuration, autoReply: false)
        let before = link.phoneOutcomes.count
        #expect(link.exchange([1, 2, 3], timeout: 30) == ReturnCode.ok)
        #expect(link.run(for: 20) { link.phoneOutcomes.count > before })
        #expect(Array(link.phoneOutcomes.dropFirst(before)) == [.sendOK(message: 1)])
        #expect(link.phone.state == .idle)
        #expect(link.deviceReceived.map(\.data) == [[1, 2, 3]])
        #expect(link.cancel() == ReturnCode.busyOrOutput)
        #expect(link.deviceSend([9, 9]) == ReturnCode.ok)
        #expect(link.run(for: 20) { !link.phoneReceived.isEmpty })
        #expect(link.phoneReceived.map(\.data) == [[9, 9]])
        link.runUntilQuiet()
        #expect(link.deviceOutcomes.last == .sendOK(message: 1))
    }

    @Test("duplex: a message nobody acknowledges times out at the deadline")
    func duplexTimeout() {
        let configuration = LinkConfiguration(mode: .duplex)
        let link = openedLink(configuration, autoReply: false)
        link.channel = { direction, frame in direction == .toPhone && frame.kind == .ack ? .drop : .deliver }
        let start = link.now
        let before = link.phoneOutcomes.count
        #expect(link.exchange([1, 2, 3], timeout: 6) == ReturnCode.ok)
        #expect(link.run(for: 20) { link.phoneOutcomes.count > before })
        #expect(Array(link.phoneOutcomes.dropFirst(before)) == [.timeout(message: 1)])
        #expect(abs(link.phoneEvents.last!.time - (start + 6)) <= link.step + 1e-9)
        #expect(link.deviceReceived.count == 1)  // delivered once, despite the polls
    }

    // Bug: DeviceStateMachine.receive(.cancel) compares the cancelled (phone) message number with its own
    // outbound message (`outbound?.message == frame.message`). In master-slave that is the reply, which
    // carries the request's number; in duplex the device numbers its own messages from 1 too, so a
    // phone cancel of its message N drops the device's unrelated message N: the device reports
    // .cancelled(N), never resends it, never reports sendOK or timeout, and the phone never gets it.
    @Test("duplex: cancelling the phone's message leaves the device's own message of the same number alone")
    func duplexCancelDoesNotTouchDeviceMessage() {
        let configuration = LinkConfiguration(mode: .duplex)
        let link = openedLink(configuration, autoReply: false)
        // The phone's message never reaches the device (so its exchange stays open to be cancelled); the
        // device's own message loses its first frame, so the device has to send it again.
        let filter = FrameFilter([(.toDevice, .data, nil, .drop), (.toPhone, .data, [1], .drop)])
        link.channel = filter.fate
        let fromDevice: [UInt8] = [0xD0, 0xD1, 0xD2]
        #expect(link.exchange([1, 2, 3], timeout: 60) == ReturnCode.ok)  // the phone's message 1
        #expect(link.deviceSend(fromDevice) == ReturnCode.ok)             // the device's message 1
        link.run(for: 0.1)
        #expect(link.cancel() == ReturnCode.ok)
        #expect(link.run(for: 30) { !link.phoneErrors().isEmpty })
        #expect(link.phoneErrors() == [.cancelSucceeded])
        // The device's message is unrelated to the cancel: it must still be delivered and acknowledged.
        link.run(for: 30) { link.deviceOutcomes.contains { if case .sendOK = $0 { true } else { false } } }
        #expect(link.phoneReceived.map(\.data) == [fromDevice])
        #expect(link.deviceOutcomes.contains(.sendOK(message: 1)))
        #expect(!link.deviceOutcomes.contains(.cancelled(message: 1)))
        #expect(link.deviceSend([4]) == ReturnCode.ok)
    }

    // Bug: an acknowledgement that brings no news still makes the sender send its whole window of
    // unacknowledged fragments again (PhoneStateMachine.receiveAck and DeviceStateMachine.receive(.ack)
    // ignore the result of OutboundMessage.apply(ack:) and always call burst()). In duplex, while one
    // side plays a long burst of its own message, the other side's polls are answered by acks queued
    // behind that burst; they arrive together later, and every one of them triggers a full resend. The
    // resends keep the transmitters busy, which delays the next acks again. Measured on this lossless
    // channel: 12 (phone) + 128 (device) retransmitted frames, both sendOKs only after 186 s where the
    // 28 fragments need about 57 s of air time. With the default 1024-byte fragments and window 16
    // (48 KiB against 64 KiB, the device starting 51 s later) the device resent 51168 frames and its
    // message timed out after 20000 s.
    @Test("duplex, two in flight: the second goes ahead of the first's acknowledgement and is delivered after it")
    func duplexTwoInFlight() {
        var configuration = LinkConfiguration(mode: .duplex, framePayload: 128, windowFrames: 4)
        configuration.messagesInFlight = 2
        let link = openedLink(configuration, autoReply: false)
        // The first message's second fragment is lost once: the second message completes first.
        link.channel = FrameFilter([(.toDevice, .data, [2], .drop)]).fate
        var random = TestRandom(seed: 5)
        let first = random.bytes(300), second = random.bytes(200), third = random.bytes(10)
        let before = link.phoneOutcomes.count
        #expect(link.exchange(first, timeout: 100) == ReturnCode.ok)
        #expect(link.phone.acceptsMessage)
        #expect(link.exchange(second, timeout: 100) == ReturnCode.ok)
        #expect(!link.phone.acceptsMessage)
        #expect(link.exchange(third, timeout: 100) == ReturnCode.busyOrOutput)
        #expect(link.run(for: 100) { link.phoneOutcomes.count >= before + 2 })
        let outcomes = Array(link.phoneOutcomes.dropFirst(before))
        #expect(outcomes.count == 2 && outcomes.allSatisfy { if case .sendOK = $0 { true } else { false } })
        #expect(link.deviceReceived.map(\.data) == [first, second])
        let data = link.framesSent(.toDevice, .data)
        #expect(data.filter { $0.flags.contains(.follows) }.count == 2 && data.count == 6)
        #expect(link.phone.statistics.retransmissions == 1)
        #expect(link.phone.acceptsMessage && link.phone.state == .idle)
    }

    @Test("duplex: overlapping messages on a lossless channel need no retransmission")
    func duplexOverlappingBursts() {
        let configuration = LinkConfiguration(mode: .duplex, framePayload: 256, windowFrames: 4)
        let link = openedLink(configuration, autoReply: false)
        var random = TestRandom(seed: 1)
        let fromPhone = random.bytes(12 * 256), fromDevice = random.bytes(16 * 256)
        let start = link.now
        #expect(link.exchange(fromPhone, timeout: 1000) == ReturnCode.ok)
        link.run(for: 12.8)  // the device starts while the phone's first burst is on the air
        #expect(link.deviceSend(fromDevice, timeout: 1000) == ReturnCode.ok)
        #expect(link.run(for: 1000) {
            link.phoneOutcomes.contains { if case .sendOK = $0 { true } else { false } }
                && link.deviceOutcomes.contains { if case .sendOK = $0 { true } else { false } }
        })
        #expect(link.phoneReceived.map(\.data) == [fromDevice])
        #expect(link.deviceReceived.map(\.data) == [fromPhone])
        #expect(link.phone.statistics.retransmissions == 0)
        #expect(link.device.statistics.retransmissions == 0)
        #expect(link.phone.statistics.duplicateFrames == 0 && link.device.statistics.duplicateFrames == 0)
        // All 28 fragments fit in about 57 s of air time; the device starts 12.8 s late.
        let airtime = 16 * configuration.airtime(payload: 256)
        #expect(link.now - start < 12.8 + 2 * airtime + 30)
    }

    @Test("a duplicated partial acknowledgement does not make the sender resend its window")
    func duplicatedPartialAck() {
        let configuration = LinkConfiguration(framePayload: 32, windowFrames: 2)
        let link = openedLink(configuration)
        link.channel = { direction, frame in direction == .toPhone && frame.kind == .ack ? .duplicate : .deliver }
        var random = TestRandom(seed: 4)
        let request = random.bytes(128)  // 4 fragments: two bursts of 2
        let before = link.phoneOutcomes.count
        #expect(link.exchange(request, timeout: 60) == ReturnCode.ok)
        #expect(link.run(for: 60) { exchangeEnded(link, after: before) })
        #expect(link.deviceReceived.map(\.data) == [request])
        #expect(link.framesSent(.toDevice, .data).count == 4)
        #expect(link.phone.statistics.retransmissions == 0)
    }

    // MARK: Sessions

    @Test("frames of another session are ignored")
    func otherSession() {
        let link = openedLink(autoReply: false)
        let session = link.phone.session
        let stray = LinkFrame(kind: .data, flags: .poll, session: session &+ 1, message: 1, payload: [1])
        let actions = link.device.receive(stray, now: link.now)
        #expect(actions.isEmpty)
        #expect(link.device.statistics.staleFrames == 1)
        let strayReply = LinkFrame(kind: .data, flags: [.fromDevice, .reply, .poll], session: session &+ 1, message: 1, payload: [1])
        #expect(link.phone.receive(strayReply, now: link.now).isEmpty)
        // The phone ignores frames without the device flag (its own echo) altogether.
        let echo = LinkFrame(kind: .helloAck, session: session, payload: [1])
        #expect(link.phone.receive(echo, now: link.now).isEmpty)
        #expect(link.phone.state == .idle)
    }
}
