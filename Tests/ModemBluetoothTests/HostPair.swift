@testable import ModemBluetooth

/// Two host stacks on an ``HCIFakeAir`` (side 0 the central 00:1B:DC:00:00:01, side 1 the device
/// 00:1B:DC:00:00:0B), on a fake clock: packets are delivered when they fall due, both hosts tick
/// every 10 ms. The air checks that neither host overruns its ACL buffers or length.
struct HostPair {
    var air = HCIFakeAir()
    var hosts: [HostStack]
    var now: Double { air.now }
    /// Every non-send action each host reported, in order.
    var reported: [[HostAction]] = [[], []]
    /// Sees each packet a host sends before the air does: may change it, or return nil to drop it.
    var tamper: ((Int, HCIPacket) -> HCIPacket?)?
    private var nextTick = 0.01

    init(central: HostConfiguration, device: HostConfiguration, aclLength: Int = 1021, aclCount: Int = 8) {
        air.addController("00:1B:DC:00:00:01", aclLength: aclLength, aclCount: aclCount)
        air.addController("00:1B:DC:00:00:0B", aclLength: aclLength, aclCount: aclCount)
        hosts = [HostStack(configuration: central), HostStack(configuration: device)]
        for side in 0..<2 { apply(side, hosts[side].start(now: now)) }
    }

    /// ACL-rule breaches either host committed (more packets in flight than buffers, fragments too long).
    var violations: [String] { air.controllers.flatMap(\.violations) }

    mutating func apply(_ side: Int, _ actions: [HostAction]) {
        for action in actions {
            if case .send(var packet) = action {
                if let tamper {
                    guard let changed = tamper(side, packet) else { continue }
                    packet = changed
                }
                air.fromHost(side, packet)
            } else {
                reported[side].append(action)
            }
        }
    }

    /// Lets `seconds` of time pass, delivering packets as they fall due and ticking both hosts every
    /// 10 ms, calling `react` with each side's new actions (its answers are applied).
    mutating func run(seconds: Double, react: (Int, HostAction, inout HostStack, Double) -> [HostAction] = { _, _, _, _ in [] }) {
        let end = now + seconds
        while now < end {
            air.now = min(end, nextTick, air.nextDueTime ?? .infinity)
            while let (side, packet) = air.nextDue(by: now) {
                let before = reported[side].count
                apply(side, hosts[side].received(packet, now: now))
                reactTo(side, from: before, react)
            }
            if now >= nextTick {
                nextTick += 0.01
                for side in 0..<2 {
                    let before = reported[side].count
                    apply(side, hosts[side].tick(now: now))
                    reactTo(side, from: before, react)
                }
            }
        }
    }

    private mutating func reactTo(_ side: Int, from start: Int, _ react: (Int, HostAction, inout HostStack, Double) -> [HostAction]) {
        var i = start
        while i < reported[side].count {
            let more = react(side, reported[side][i], &hosts[side], now)
            apply(side, more)
            i += 1
        }
    }
}
