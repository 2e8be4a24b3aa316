@testable import ModemBluetooth

/// Two host stacks on a ``VirtualAir``, pumped in lockstep on a fake clock.
struct HostPair {
    var air: VirtualAir
    var hosts: [HostStack]
    var now = 0.0
    /// Every non-send action each host reported, in order.
    var reported: [[HostAction]] = [[], []]

    init(central: HostConfiguration, device: HostConfiguration, aclLength: Int = 1021, aclCount: Int = 8) {
        air = VirtualAir(addresses: [BDAddress("00:1B:DC:00:00:01")!, BDAddress("00:1B:DC:00:00:0B")!], aclLength: aclLength, aclCount: aclCount)
        hosts = [HostStack(configuration: central), HostStack(configuration: device)]
        for side in 0..<2 { apply(side, hosts[side].start(now: now)) }
    }

    /// Sees each packet a host sends before the air does: may change it, or return nil to drop it.
    var tamper: ((Int, HCIPacket) -> HCIPacket?)?

    mutating func apply(_ side: Int, _ actions: [HostAction]) {
        for action in actions {
            if case .send(var packet) = action {
                if let tamper {
                    guard let changed = tamper(side, packet) else { continue }
                    packet = changed
                }
                air.send(side, packet)
            } else {
                reported[side].append(action)
            }
        }
    }

    /// Delivers what the controllers sent and lets `seconds` of time pass in 10 ms steps,
    /// calling `react` with each side's new actions (its answers are applied).
    mutating func run(seconds: Double, react: (Int, HostAction, inout HostStack, Double) -> [HostAction] = { _, _, _, _ in [] }) {
        let end = now + seconds
        while now < end {
            var busy = true
            var rounds = 0
            while busy && rounds < 10_000 {
                busy = false
                rounds += 1
                for side in 0..<2 {
                    for packet in air.take(side) {
                        busy = true
                        let before = reported[side].count
                        apply(side, hosts[side].received(packet, now: now))
                        reactTo(side, from: before, react)
                    }
                }
            }
            now += 0.01
            for side in 0..<2 {
                let before = reported[side].count
                apply(side, hosts[side].tick(now: now))
                reactTo(side, from: before, react)
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
