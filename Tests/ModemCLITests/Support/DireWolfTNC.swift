import Foundation
import ModemTestSupport
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Peers {
    /// Dire Wolf 1.8's TNC itself (built with atest by scripts/direwolf18.sh): the AGW and KISS peer.
    static let direwolf18 = Peer.executable(direwolf18Bin + "/direwolf", name: "Dire Wolf 1.8's direwolf",
                                            remedy: "run bash scripts/direwolf18.sh, or set DIREWOLF18_BIN")
    /// Dire Wolf's tnctest with its count of lines made 20 (built by scripts/direwolf18.sh beside tnctest).
    static let tnctest20 = Peer.executable(direwolf18Bin + "/tnctest-20", name: "Dire Wolf 1.8's tnctest (20 lines)",
                                           remedy: "run bash scripts/direwolf18.sh, or set DIREWOLF18_BIN")
    /// coreutils' stdbuf, which makes Dire Wolf's log line-buffered.
    static let stdbuf = Peer.tool("stdbuf", package: "coreutils")
}

/// Dire Wolf 1.8 (`direwolf`) as a separate process on the private PulseAudio null sink
/// (scripts/audio-loop.sh, through alsa-lib's `default` PCM): a generated configuration (ADEVICE
/// default, ARATE 48000, one channel, MYCALL, MODEM 1200, AGWPORT and KISSPORT on free ports, no
/// default KISS port 8001), `-t 0` (no colours), its output line-buffered (`stdbuf -oL`) and kept and written to `direwolf.log` in the
/// test's folder when stopped. Dire Wolf cannot listen on port 0, so free ports are chosen (the kernel's
/// pick for a socket bound and closed at once) and, should another process take one first (its log
/// says "already using port"), it is started again on others.
///
/// ```swift
/// try await withLoop("AGW") { pulse in
///     let dw = try await DireWolfTNC.start(in: dir, pulseServer: pulse)
///     defer { dw.stop() }
///     let client = try AGWTestClient(port: dw.agwPort)
/// }
/// ```
final class DireWolfTNC {
    let process: TNCBackgroundProcess
    /// Its AGW port (accepting when ``start(in:pulseServer:callsign:attempts:)`` returns).
    let agwPort: Int
    /// Its KISS-over-TCP port.
    let kissPort: Int
    /// Where its log goes when stopped.
    let logPath: String

    private init(process: TNCBackgroundProcess, agwPort: Int, kissPort: Int, logPath: String) {
        self.process = process
        self.agwPort = agwPort
        self.kissPort = kissPort
        self.logPath = logPath
    }

    /// Starts Dire Wolf with `pulseServer` (the `PULSE_SERVER=...` assignment ``withLoop(_:_:)``
    /// gives) and waits for the event that its AGW port accepts: the log line that it is ready for
    /// an AGW client on that port (after bind and listen); 60 s is a hang guard.
    static func start(in dir: Scratch, pulseServer: String, callsign: String = "N0DW", attempts: Int = 5) async throws -> DireWolfTNC {
        let direwolf = try Peers.direwolf18.path()
        var failures: [String] = []
        for attempt in 1...attempts {
            let agw = try freePort()
            var kiss = try freePort()
            while kiss == agw { kiss = try freePort() }
            let config = try dir.write("direwolf-\(attempt).conf", """
                ADEVICE default
                ARATE 48000
                ACHANNELS 1
                CHANNEL 0
                MYCALL \(callsign)
                MODEM 1200
                AGWPORT \(agw)
                KISSPORT 0
                KISSPORT \(kiss)

                """)
            // Dire Wolf writes its log with stdio and never flushes: into a pipe it would come in 4 KiB
            // blocks, the ready line maybe never. stdbuf (coreutils) makes its standard output line-buffered.
            let process = try await TNCBackgroundProcess("/usr/bin/env", [pulseServer, try Peers.stdbuf.path(), "-oL", direwolf,
                                                                          "-c", config, "-t", "0"],
                                                         in: dir, name: "direwolf")
            let ready = "Ready to accept AGW client application 0 on port \(agw) "
            let log = dir.file("direwolf.log")
            do {
                try await process.awaitStdout("Dire Wolf ready on AGW port \(agw) (or failing)", timeout: 60) { text in
                    text.contains(ready) || text.contains("already using port") || text.contains("Pointless to continue")
                        || text.contains("Invalid port number")
                }
            } catch {
                try? process.stdoutText.write(toFile: log, atomically: true, encoding: .utf8)
                process.kill()
                throw HarnessError("Dire Wolf did not get ready: \(error); its log: \(log)\n\(process.stdoutText.suffix(2000))")
            }
            let text = process.stdoutText
            if text.contains(ready), !text.contains("already using port"), !text.contains("Invalid port number") {
                return DireWolfTNC(process: process, agwPort: agw, kissPort: kiss, logPath: log)
            }
            process.kill()
            _ = await process.wait(timeout: 30)
            try? text.write(toFile: log, atomically: true, encoding: .utf8)
            if text.contains("Pointless to continue") {
                throw HarnessError("Dire Wolf could not open the sound device (\(pulseServer)): \(text.suffix(1500))")
            }
            failures.append("ports \(agw)/\(kiss) were taken")
        }
        throw HarnessError("Dire Wolf could not listen after \(attempts) attempts: \(failures.joined(separator: "; "))")
    }

    /// Stops it (SIGTERM, then SIGKILL after 30 s) and writes its log to ``logPath``.
    func stop() async {
        if process.isRunning {
            process.signal(SIGTERM)
            if !(await process.wait(timeout: 30)) { process.kill() }
        }
        try? process.stdoutText.write(toFile: logPath, atomically: true, encoding: .utf8)
    }

    /// A TCP port free now on every address (Dire Wolf listens on all of them): one of 20000...32767,
    /// inside Dire Wolf's 1024...49151 and below Linux's ephemeral ports (which the kernel hands out to
    /// outgoing connections), tried by binding it.
    private static func freePort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20000...32767)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
            defer { Glibc.close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = INADDR_ANY
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if bound { return port }
        }
        throw HarnessError("no free TCP port in 20000...32767 after 200 tries")
    }

    /// Connects an AGW client and waits for the event that Dire Wolf is done setting it up: its log
    /// says it is ready for the next client. (Dire Wolf clears a new client's raw and monitor toggles
    /// after accepting it, in another thread than the one that reads its commands: a `m` sent before
    /// that could be undone.)
    func connectAGWClient() async throws -> AGWTestClient {
        let marker = "Ready to accept AGW client application"
        let before = process.stdoutText.components(separatedBy: marker).count
        let client = try AGWTestClient(port: agwPort)
        try await process.awaitStdout("Dire Wolf ready for the AGW client after the new one", timeout: 60) {
            $0.components(separatedBy: marker).count > before
        }
        return client
    }
}
