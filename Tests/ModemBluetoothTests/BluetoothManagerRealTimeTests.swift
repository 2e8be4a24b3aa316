import Foundation
import ModemBluetooth
import ModemLinkProtocol
import ModemTestSupport
import ProcessTestSupport
import Synchronization
import Testing

/// `BluetoothManager` (the phone's Communication API) against our `BluetoothDeviceEmulator`, each on
/// its own virtual controller of the Bumble peer (`--expose-b`): the controllers, the air between
/// them and the link's loss are Bumble's.
///
/// What this measures is a real-time figure (error 20 within 2 s of the link going), so it is a
/// `...RealTimeTests` suite: scripts/test.sh runs these alone, one at a time. Every other wait in it is
/// for an event, bounded by a hang guard only.
@Suite("BluetoothManager against the Bumble peer (real time)", .serialized)
struct BluetoothManagerRealTimeTests {
    /// The peer (the tests that call this carry `.requires(BumblePeer.venv)`).
    private func peer(_ arguments: [String]) async throws -> BumblePeer {
        try await BumblePeer.start(arguments)
    }

    @Test("error 20 (Bluetooth channel disconnected) within 2 s when the device's controller drops the link, timed from Disconnection Complete (real time)", .requires(BumblePeer.venv))
    func error20WhenTheLinkDrops() async throws {
        let p = try await peer(["--expose-b", "0"])
        defer { p.stop() }
        let deviceTransport = try HCITransportAddress(parsing: "tcp:127.0.0.1:\(try #require(p.portB))").open()
        // The device is ready (its controller set up: page scan on, the SDP record there) when it says
        // "discoverable" in its log.
        let ready = Observed(false)
        let device = BluetoothDeviceEmulator(transport: deviceTransport, name: "Bars Device", log: { line in
            if line.contains("discoverable") { ready.set(true) }
        })
        device.start()
        var deviceRunning = true
        defer { if deviceRunning { device.stop() } }

        // The manager's HCI traffic goes to a capture: its Disconnection Complete event is the moment
        // the link went away as the phone's controller saw it; the seed's 1 s counts from there.
        let capturePath = NSTemporaryDirectory() + "error20-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pcap"
        defer { unlink(capturePath) }
        let manager = BluetoothManager(hci: try HCITransportAddress(parsing: "tcp:127.0.0.1:\(p.port)"),
                                       capture: try PcapWriter(path: capturePath))
        try await ready.wait(for: "'discoverable' line from the device emulator", hangGuard: Self.guardSeconds) { $0 }
        try await manager.open(identifier: "00:1B:DC:00:00:0B")
        #expect(manager.deviceName == "Bars Device")
        let reply = try await manager.exchange(Array("ping".utf8), timeout: .seconds(Self.guardSeconds))
        #expect(reply == Array("ping".utf8))
        #expect(manager.state == .idle)

        // Watch the events from here on.
        let seen = Observed<(code: CommunicationError, message: String, at: ContinuousClock.Instant, wall: Double)?>(nil)
        let watcher = Task {
            for await event in manager.events {
                if case .error(let code, let message) = event, code == .bluetoothDisconnected {
                    seen.set((code, message, .now, Date().timeIntervalSince1970))
                    return
                }
            }
        }
        defer { watcher.cancel() }

        // The device's host goes away: its H4 connection closes and the peer's controller B drops
        // the link (link loss, reason 0x08, on controller A).
        // The link goes away once the device's host has stopped and closed its H4 connection: time from there.
        device.stop()
        deviceRunning = false
        let dropped = ContinuousClock.now
        // A hang guard: the figure is asserted below.
        let error = try #require(try await seen.wait(for: "error 20 after the drop", hangGuard: Self.guardSeconds) { $0 != nil })
        // How long after the Disconnection Complete event (the link going away as the phone's controller
        // saw it, its time in the capture) error 20 came: 0.1-0.3 ms in most runs, but 1.05 s in one CI
        // run (cause not found: docs/bluetooth.md "Left"). Printed, and bounded with the end-to-end time.
        let disconnected = try #require(Self.disconnectionCompleteTime(inCapture: capturePath),
                                        "no Disconnection Complete event in the manager's HCI capture")
        print("error 20: \(error.wall - disconnected) s after Disconnection Complete, \(error.at - dropped) after the device's host stopped")
        #expect(error.wall - disconnected < 2.0, "error 20 came \(error.wall - disconnected) s after Disconnection Complete")
        #expect(error.wall >= disconnected - 0.01, "error 20 before the link went away?")
        // End to end it also holds the virtual peer's own link-loss detection (about 1 s in Bumble,
        // 1.03-1.13 s seen on CI machines): the device's host stopping, then 1 s for the seed's deadline.
        #expect(error.at - dropped < .seconds(2), "error 20 came \(error.at - dropped) after the drop")
        #expect(error.code.rawValue == 20)
        #expect(error.message.contains("link lost") || error.message.contains("disconnected"), "\(error.message)")
        // PhoneSession is in WAITING DEVICE before it tells error 20 (it told it first once: a race).
        #expect(manager.state == .waitingDevice)
        await manager.closeResources()
    }

    /// The hang guard of the waits for events (seconds).
    static let guardSeconds = 60.0

    /// The wall-clock time (seconds since 1970) of the first HCI Disconnection Complete event
    /// (controller to host, event code 0x05) in a pcap written by ``PcapWriter`` (link type 201).
    static func disconnectionCompleteTime(inCapture path: String) -> Double? {
        guard let data = FileManager.default.contents(atPath: path), data.count >= 24 else { return nil }
        let bytes = [UInt8](data)
        func le32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }
        var at = 24
        while at + 16 <= bytes.count {
            let seconds = Double(le32(at)), micros = Double(le32(at + 4)), length = Int(le32(at + 8))
            let body = at + 16
            guard body + length <= bytes.count else { return nil }
            // 4-byte direction (1: controller to host), H4 indicator 0x04 (event), event code 0x05.
            if length >= 6, bytes[body + 3] == 1, bytes[body + 4] == 0x04, bytes[body + 5] == 0x05 {
                return seconds + micros / 1e6
            }
            at = body + length
        }
        return nil
    }
}
