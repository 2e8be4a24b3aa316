import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `modem send` and `modem receive` over `bt:` endpoints: the channel protocol in duplex mode on an
/// RFCOMM channel between our own host stack on the Bumble peer's two controllers (A dials, B
/// listens), Noise session frames as duplex messages. The sender starts once the receiver says it
/// listens; every wait is for an event, bounded by a hang guard.
@Suite("modem send / receive over Bluetooth RFCOMM (Bumble's two controllers)", .serialized)
struct MessagingBluetoothCLITests {
    /// Starts the Bumble peer with controller B exposed (the tests that call this carry
    /// `.requires(BumblePeer.venv)`).
    private func peer() async throws -> BumblePeer {
        try await BumblePeer.start(["--expose-b", "0"])
    }

    @Test("a 100 KB file from send --to bt:ADDR_B (controller A) to receive --listen bt:ADDR_B (controller B), byte-exact", .requires(BumblePeer.venv),
          .timeLimit(.minutes(2)))
    func fileOverRFCOMM() async throws {
        let p = try await peer()
        defer { p.stop() }
        let dir = try Scratch("MessagingBluetoothCLITests")
        let (ka, kb) = try await TransferCLITests.trustedKeys(dir)
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        let data = [UInt8](try #require(try random.read(upToCount: 100_000)))
        try random.close()
        let source = try dir.write("f.bin", data)
        let addressB = p.deviceAddress   // our device on controller B answers at controller B's address
        let rx = try await TNCBackgroundProcess(try Paths.modem(), ["receive", "--listen", "bt:\(addressB)", "--hci", "tcp:127.0.0.1:\(p.portB!)",
                                                              "--dir", dir.file("in"), "--accept-all", "--keys", kb, "--name", "bob"],
                                          in: dir, name: "rx")
        defer { rx.kill() }
        // The controller is set up as a connectable device with its Serial Port record: `listening on bt:ADDR`.
        try await rx.awaitStderr("'listening on bt:\(addressB)' from the receiver") {
            $0.lowercased().contains("listening on bt:\(addressB.lowercased())")
        }
        let send = try await modem(["send", "--to", "bt:\(addressB)", "--hci", "tcp:127.0.0.1:\(p.port)", source,
                                    "--keys", ka, "--name", "alice"], timeout: 60)
        #expect(send.succeeded, "\(send)\nreceiver: \(rx.stderrText)")
        #expect(send.stdoutText.hasPrefix("sent f.bin 100000 in "), "\(send.stdoutText)")
        #expect(await rx.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx.stderrText)")
        #expect(rx.exitedNormally && rx.status == 0, "\(rx.stderrText)")
        #expect(rx.stderrText.contains("session from alice"), "\(rx.stderrText)")
        #expect(rx.stdoutText.hasPrefix("received f.bin 100000 sha256 "), "\(rx.stdoutText)")
        #expect(try readBytes(dir.file("in/f.bin")) == data)
    }

    @Test("--listen bt:ADDR with another address than the controller's fails naming both; --listen bt: without --hci is a usage error; --to bt: without --hci takes the kernel's Bluetooth", .requires(BumblePeer.venv))
    func wrongAddressAndMissingHCI() async throws {
        let dir = try Scratch("MessagingBluetoothCLITests-errors")
        let usage = try await modem(["receive", "--listen", "bt:00:1B:DC:00:00:0B", "--dir", dir.file("in"), "--keys", dir.file("k")], timeout: 20)
        #expect(usage.status == 64 && usage.stderrText.contains("needs --hci"), "\(usage)")
        let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)
        if fd >= 0 { close(fd) } else if errno == EAFNOSUPPORT {
            // This kernel has no Bluetooth: the kernel's way says so in one line, exit 1.
            let file = try dir.write("f.bin", [1, 2, 3])
            let kernel = try await modem(["send", "--to", "bt:00:1B:DC:00:00:0B", file, "--keys", dir.file("k")], timeout: 20)
            #expect(kernel.status == 1, "\(kernel)")
            #expect(kernel.stderrText.contains("no Bluetooth") && kernel.stderrText.contains("EAFNOSUPPORT"), "\(kernel.stderrText)")
        }
        let p = try await peer()
        defer { p.stop() }
        let r = try await modem(["receive", "--listen", "bt:00:1B:DC:00:00:99", "--hci", "tcp:127.0.0.1:\(p.portB!)",
                                 "--dir", dir.file("in"), "--keys", dir.file("k")], timeout: 30)
        #expect(r.status == 1, "\(r)")
        #expect(r.stderrText.contains("00:1B:DC:00:00:0B") && r.stderrText.contains("00:1B:DC:00:00:99"), "\(r)")
    }
}
