import Foundation
import Testing
import ModemTestSupport
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `modem send` and `modem receive` as separate processes over TCP on 127.0.0.1, with two key
/// folders that trust each other. Receivers take port 0 and name the port they got; every wait is
/// for an event (a line, a file's size, an exit), bounded by a hang guard far above the expected time.
@Suite("modem send / receive (data connections) CLI", .serialized)
struct TransferCLITests {
    /// Two key folders that trust each other (alice sends, bob receives).
    static func trustedKeys(_ dir: Scratch) async throws -> (alice: String, bob: String) {
        let ka = dir.file("ka"), kb = dir.file("kb")
        let a = try await modem(["keys", "show", "--keys", ka])
        let b = try await modem(["keys", "show", "--keys", kb])
        #expect(a.succeeded && b.succeeded, "\(a) \(b)")
        let keyA = String(a.stdoutText.split(separator: "\n").last ?? "")
        let keyB = String(b.stdoutText.split(separator: "\n").last ?? "")
        let t1 = try await modem(["keys", "trust", "bob", keyB, "--keys", ka])
        let t2 = try await modem(["keys", "trust", "alice", keyA, "--keys", kb])
        #expect(t1.succeeded && t2.succeeded, "\(t1) \(t2)")
        return (ka, kb)
    }

    /// Starts `modem receive --listen tcp:127.0.0.1:0` and waits for the port it got (its
    /// `listening on` line: from then on it accepts).
    static func startReceiver(_ dir: Scratch, into folder: String, keys: String, extra: [String] = [],
                              name: String = "rx") async throws -> (rx: TNCBackgroundProcess, port: Int) {
        let rx = try await TNCBackgroundProcess(try Paths.modem(), ["receive", "--listen", "tcp:127.0.0.1:0", "--dir", folder,
                                                              "--keys", keys, "--name", "bob"] + extra, in: dir, name: name)
        do {
            return (rx, try await rx.messagingPort())
        } catch {
            rx.kill()
            throw error
        }
    }

    @Test("a 20 MiB file with 4096 bytes of metadata arrives byte-exact; both summary lines; the receiver exits",
          .timeLimit(.minutes(2)))
    func twentyMiB() async throws {
        let dir = try Scratch("TransferCLITests")
        let (ka, kb) = try await Self.trustedKeys(dir)
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        let data = [UInt8](try #require(try random.read(upToCount: 20 << 20)))
        try random.close()
        #expect(data.count == 20 << 20)
        let source = try dir.write("big.bin", data)
        let (rx, port) = try await Self.startReceiver(dir, into: dir.file("in"), keys: kb, extra: ["--accept-all"])
        defer { rx.kill() }
        let send = try await modem(["send", "--to", "tcp:127.0.0.1:\(port)", source, "--keys", ka, "--name", "alice",
                                    "--metadata", String(repeating: "m", count: 4096)], timeout: 60)
        #expect(send.succeeded, "\(send)\nreceiver: \(rx.stderrText)")
        #expect(send.stdoutText.hasPrefix("sent big.bin 20971520 in "), "\(send.stdoutText)")
        #expect(send.stdoutText.contains(" MB/s)"), "\(send.stdoutText)")
        #expect(await rx.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx.stderrText)")
        #expect(rx.exitedNormally && rx.status == 0, "\(rx.stderrText)")
        let sum = try await runProcess("/usr/bin/sha256sum", [source])
        let hex = String(sum.stdoutText.prefix(64))
        #expect(hex.count == 64, "\(sum)")
        #expect(rx.stdoutText.hasPrefix("received big.bin 20971520 sha256 \(hex) in "), "\(rx.stdoutText)")
        #expect(try readBytes(dir.file("in/big.bin")) == data)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("in")) == ["big.bin"], "a finished receive leaves only the file")
    }

    @Test("a receiver killed mid-file: the next send resumes from the verified blocks and the file arrives whole",
          .timeLimit(.minutes(2)))
    func resumeAfterKill() async throws {
        let dir = try Scratch("TransferCLITests")
        let (ka, kb) = try await Self.trustedKeys(dir)
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        let data = [UInt8](try #require(try random.read(upToCount: 200 << 20)))
        try random.close()
        let source = try dir.write("resume.bin", data)
        let inbox = dir.file("in")
        let (rx, port) = try await Self.startReceiver(dir, into: inbox, keys: kb, extra: ["--accept-all"], name: "rx-a")
        defer { rx.kill() }
        let first = Task { try await modem(["send", "--to", "tcp:127.0.0.1:\(port)", source, "--keys", ka], timeout: 60) }
        // Kill the receiver once 16 MiB of the partial file are written: watched from a thread of its
        // own, so the kill is on time even when the tests' shared threads are all busy.
        let pid = rx.pid
        let killedAt = EndTime(), stopWatching = EndTime(), watcherDone = Observed(false)
        let partial = inbox + "/.modem-partial"
        let watcher = Thread {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, !killedAt.isMarked, !stopWatching.isMarked {
                let parts = (try? FileManager.default.contentsOfDirectory(atPath: partial)) ?? []
                for p in parts where p.hasSuffix(".part") {
                    let size = (try? FileManager.default.attributesOfItem(atPath: partial + "/" + p)[.size] as? Int) ?? 0
                    if size > 16 << 20, !killedAt.isMarked { kill(pid, SIGKILL); killedAt.mark() }
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
            watcherDone.set(true)
        }
        watcher.start()
        let cut = try await first.value
        // The watcher ends before the receiver is reaped (its pid must not be reused under it).
        stopWatching.mark()
        try await watcherDone.wait(for: "the end of the partial file's watcher") { $0 }
        rx.kill()
        let killed = killedAt.isMarked
        #expect(killed, "the partial file did not reach 16 MiB within 60 s: \(rx.stderrText)")
        guard killed, cut.status != 0 else {
            Issue.record("the first send was not cut (\(cut)); nothing to resume")
            return
        }
        #expect(cut.stderrText.contains("resume.bin"), "\(cut.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: inbox + "/resume.bin"))

        let (rx2, port2) = try await Self.startReceiver(dir, into: inbox, keys: kb, extra: ["--accept-all"], name: "rx-b")
        defer { rx2.kill() }
        let second = try await modem(["send", "--to", "tcp:127.0.0.1:\(port2)", source, "--keys", ka], timeout: 60)
        #expect(second.succeeded, "\(second)\n\(rx2.stderrText)")
        #expect(second.stderrText.contains("resume.bin: resumed, "), "\(second.stderrText)")
        #expect(await rx2.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx2.stderrText)")
        #expect(try readBytes(inbox + "/resume.bin") == data)
    }

    @Test("hostile names stay inside --dir; a name with nothing usable fails the send with exit 1",
          .timeLimit(.minutes(2)))
    func hostileNames() async throws {
        let dir = try Scratch("TransferCLITests")
        let (ka, kb) = try await Self.trustedKeys(dir)
        let source = try dir.write("x.bin", Array("payload".utf8))
        let inbox = dir.file("deep/in")
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        for (i, name) in ["../../escape.bin", "/etc/passwd", "CON.txt"].enumerated() {
            let (rx, port) = try await Self.startReceiver(dir, into: inbox, keys: kb, extra: ["--accept-all"], name: "rx\(i)")
            defer { rx.kill() }
            let send = try await modem(["send", "--to", "tcp:127.0.0.1:\(port)", source, "--as", name, "--keys", ka])
            #expect(send.succeeded, "\(send)\n\(rx.stderrText)")
            #expect(await rx.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx.stderrText)")
        }
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: inbox)) == ["escape.bin", "passwd", "_CON.txt"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.file("deep"))) == ["in"])
        #expect(!FileManager.default.fileExists(atPath: dir.file("escape.bin")))

        let (rx, port) = try await Self.startReceiver(dir, into: inbox, keys: kb, extra: ["--accept-all"], name: "rxdots")
        defer { rx.kill() }
        let send = try await modem(["send", "--to", "tcp:127.0.0.1:\(port)", source, "--as", "..", "--keys", ka])
        #expect(send.status == 1 && !send.timedOut, "\(send)")
        #expect(send.stderrText.contains("unusable file name"), "\(send.stderrText)")
        #expect(await rx.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx.stderrText)")
        #expect(rx.stderrText.contains("unusable file name"), "\(rx.stderrText)")
    }

    @Test("without --accept-all and without a terminal the receiver declines; the sender exits 1")
    func declinedWithoutTerminal() async throws {
        let dir = try Scratch("TransferCLITests")
        let (ka, kb) = try await Self.trustedKeys(dir)
        let source = try dir.write("x.bin", Array("payload".utf8))
        let (rx, port) = try await Self.startReceiver(dir, into: dir.file("in"), keys: kb)
        defer { rx.kill() }
        let send = try await modem(["send", "--to", "tcp:127.0.0.1:\(port)", source, "--keys", ka])
        #expect(send.status == 1, "\(send)")
        #expect(send.stderrText.contains("declined"), "\(send.stderrText)")
        #expect(await rx.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx.stderrText)")
        #expect(rx.stderrText.contains("declined x.bin"), "\(rx.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("in")), "the --dir it made was left though nothing arrived")
    }

    @Test("a file the receiver cannot store: receive names the local cause (path and reason) and exits 1; the sender hears io-error")
    func localFailureNamed() async throws {
        let dir = try Scratch("TransferCLITests")
        let (ka, kb) = try await Self.trustedKeys(dir)
        let source = try dir.write("x.bin", Array("payload".utf8))
        let inbox = dir.file("in")
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        // The partial files' folder is taken by a plain file (as root, a mode would not stop a write).
        _ = try dir.write("in/.modem-partial", Array("in the way".utf8))
        let (rx, port) = try await Self.startReceiver(dir, into: inbox, keys: kb, extra: ["--accept-all"], name: "rxfail")
        defer { rx.kill() }
        let send = try await modem(["send", "--to", "tcp:127.0.0.1:\(port)", source, "--keys", ka])
        #expect(send.status == 1 && send.stderrText.contains("input/output error"), "\(send)")
        #expect(await rx.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx.stderrText)")
        #expect(rx.result().status == 1, "\(rx.stderrText)")
        #expect(rx.stderrText.contains("input/output error (cannot open \(inbox)/.modem-partial: \(String(cString: strerror(ENOTDIR))))"),
                "\(rx.stderrText)")
    }

    @Test("4097 bytes of metadata, --as with two files or a name over 4096 bytes, no files: usage errors (64) before any connection")
    func usageErrors() async throws {
        let dir = try Scratch("TransferCLITests")
        let source = try dir.write("x.bin", [1])
        let big = try await modem(["send", "--to", "tcp:127.0.0.1:9", source, "--metadata", String(repeating: "m", count: 4097)])
        #expect(big.status == 64, "\(big)")
        #expect(big.stderrText.contains("metadata of 4097 bytes is over the limit of 4096 bytes"), "\(big.stderrText)")
        let two = try await modem(["send", "--to", "tcp:127.0.0.1:9", source, source, "--as", "y"])
        #expect(two.status == 64 && two.stderrText.contains("--as"), "\(two)")
        // A name the receiver would drop (over 4096 bytes) used to hang both ends: a usage error.
        let longName = try await modem(["send", "--to", "tcp:127.0.0.1:9", source, "--as", String(repeating: "n", count: 4097)])
        #expect(longName.status == 64 && longName.stderrText.contains("--as") && longName.stderrText.contains("4096"), "\(longName)")
        let none = try await modem(["send", "--to", "tcp:127.0.0.1:9"])
        #expect(none.status == 64, "\(none)")
        let missing = try await modem(["send", "--to", "tcp:127.0.0.1:9", dir.file("nope.bin")])
        #expect(missing.status == 64 && missing.stderrText.contains("nope.bin"), "\(missing)")
        // keys trust: an expiry in the past, or the installation's own key, is a usage error.
        let own = try await modem(["keys", "show", "--keys", dir.file("own")])
        let ownKey = String(own.stdoutText.split(separator: "\n").last ?? "")
        let other = try await modem(["keys", "show", "--keys", dir.file("other")])
        let otherKey = String(other.stdoutText.split(separator: "\n").last ?? "")
        let past = try await modem(["keys", "trust", "bob", otherKey, "--expires", "2020-01-01T00:00:00Z", "--keys", dir.file("own")])
        #expect(past.status == 64 && past.stderrText.contains("in the past"), "\(past)")
        let mine = try await modem(["keys", "trust", "me", ownKey, "--keys", dir.file("own")])
        #expect(mine.status == 64 && mine.stderrText.contains("own"), "\(mine)")
        let listed = try await modem(["keys", "list", "--keys", dir.file("own")])
        #expect(listed.succeeded && listed.stdoutText.isEmpty, "nothing was trusted: \(listed)")
        #expect(listed.stderrText.contains("no trusted peers") && listed.stderrText.contains("keys trust"), "\(listed)")
        // A receive whose --listen fails (the port is taken) leaves no --dir behind.
        let taken = try TCPRefusingPort()
        defer { taken.close() }
        let noListen = try await modem(["receive", "--listen", "tcp:127.0.0.1:\(taken.port)", "--dir", dir.file("never"),
                                        "--keys", dir.file("keys")], timeout: 60)
        #expect(noListen.status == 1, "a port it cannot listen on is this end's failure: \(noListen)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("never")), "--dir was created: \(noListen)")
        // Nobody listening where send dials: no connection, status 3, naming the address.
        let refusing = try TCPRefusingPort()
        defer { refusing.close() }
        let unanswered = try await modem(["send", "--to", "tcp:127.0.0.1:\(refusing.port)", source, "--keys", dir.file("keys")], timeout: 60)
        #expect(unanswered.status == 3 && unanswered.stderrText.contains("127.0.0.1:\(refusing.port)"), "\(unanswered)")
    }
}
