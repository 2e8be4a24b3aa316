// The Bluetooth host stack's own CPU cost: two whole HostStack values (GAP, L2CAP, SDP, RFCOMM)
// joined by ModemBluetooth's in-memory VirtualAir, in one thread, no sockets. Each iteration sets up
// both controllers, opens a serial port (SDP, then RFCOMM with credit-based flow control), and moves
// 10 MB of payload from the central to the device in 16 KiB writes with at most 64 KiB queued (as
// `modem bt connect` does). The measured region is the 10 MB transfer only; it covers both hosts
// (segmentation, FCS, credits, reassembly) and the air's packet copies. Custom metric: "payload MB/s"
// (10^6 bytes per wall second). Every byte is checked against what was sent after the transfer.

import Benchmark
import ModemBluetooth

private let transferBytes = 10_000_000

private enum BluetoothMetrics {
    static let payloadMBps = BenchmarkMetric.custom("payload MB/s", polarity: .prefersLarger, useScalingFactor: false)
}

/// Two hosts on a ``VirtualAir``: side 0 the central, side 1 the device.
private struct AirPair {
    var air: VirtualAir
    var hosts: [HostStack]
    var now = 0.0
    var channel: SerialChannelID?
    var received: [UInt8] = []

    init(aclLength: Int, aclCount: Int) {
        air = VirtualAir(addresses: [BDAddress("00:1B:DC:00:00:01")!, BDAddress("00:1B:DC:00:00:0B")!],
                         aclLength: aclLength, aclCount: aclCount)
        hosts = [HostStack(configuration: HostConfiguration(gap: GAPConfiguration(role: .central))),
                 HostStack(configuration: HostConfiguration(gap: GAPConfiguration(role: .device(name: "Bench", classOfDevice: 0x1F00)),
                                                            serverChannel: 1))]
        received.reserveCapacity(transferBytes)
        for side in 0..<2 { apply(side, hosts[side].start(now: now)) }
        pump()
    }

    mutating func apply(_ side: Int, _ actions: [HostAction]) {
        for action in actions {
            switch action {
            case .send(let packet): air.send(side, packet)
            case .opened(let id, _, false) where side == 0: channel = id
            case .received(_, let bytes) where side == 1: received += bytes
            case .failed(let why), .openFailed(_, let why), .closed(_, let why, _): fatalError("bluetooth benchmark: \(why)")
            default: break
            }
        }
    }

    /// Delivers packets until both controllers are quiet, then lets 1 ms pass.
    mutating func pump() {
        while air.isBusy {
            for side in 0..<2 {
                for packet in air.take(side) { apply(side, hosts[side].received(packet, now: now)) }
            }
        }
        now += 0.001
        for side in 0..<2 { apply(side, hosts[side].tick(now: now)) }
    }

    mutating func open() -> SerialChannelID {
        let (_, actions) = hosts[0].openSerialPort(to: air.sides[1].address, channel: nil, now: now)
        apply(0, actions)
        for _ in 0..<1000 where channel == nil { pump() }
        guard let channel else { fatalError("bluetooth benchmark: the channel did not open") }
        return channel
    }

    mutating func transfer(_ payload: [UInt8], over channel: SerialChannelID) {
        var offset = 0
        while received.count < payload.count {
            while offset < payload.count && hosts[0].queuedBytes(channel) < 64 * 1024 {
                let n = min(16 * 1024, payload.count - offset)
                apply(0, hosts[0].write(channel, Array(payload[offset..<offset + n]), now: now))
                offset += n
            }
            pump()
        }
    }
}

func bluetoothBenchmarks() {
    var s: UInt64 = 0x2545_F491_4F6C_DD1D
    let payload = (0..<transferBytes).map { _ -> UInt8 in
        s ^= s << 13; s ^= s >> 7; s ^= s << 17
        return UInt8(truncatingIfNeeded: s >> 24)
    }
    for (aclLength, aclCount) in [(1021, 8), (339, 4)] {
        Benchmark("Bluetooth host stacks, 10 MB RFCOMM one way, ACL \(aclLength) x \(aclCount), in memory",
                  configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .mallocBytesCount, .peakMemoryResident,
                                                 BluetoothMetrics.payloadMBps],
                                       warmupIterations: 1, maxDuration: .seconds(5), maxIterations: 20)) { benchmark in
            for _ in benchmark.scaledIterations {
                var pair = AirPair(aclLength: aclLength, aclCount: aclCount)
                let channel = pair.open()
                benchmark.startMeasurement()
                let start = ContinuousClock.now
                pair.transfer(payload, over: channel)
                let elapsed = ContinuousClock.now - start
                benchmark.stopMeasurement()
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                if seconds > 0 { benchmark.measurement(BluetoothMetrics.payloadMBps, Int(Double(payload.count) / seconds / 1e6)) }
                precondition(pair.received == payload, "bluetooth benchmark: the device received other bytes than were sent")
            }
        }
    }
}
