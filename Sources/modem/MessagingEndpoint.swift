import ArgumentParser
import Foundation
import ModemBluetooth
import ModemLink
import ModemMessaging
import ModemTransport
import Synchronization

/// Opens the session of a messaging command (`mailbox`, `send`, `receive`): `--listen ENDPOINT`
/// serves exactly one session (the listener closes once a peer connected), `--to ENDPOINT` dials.
/// Prints nothing (except one `listening on ENDPOINT` line on standard error: with the port chosen when
/// `--listen` asked for TCP port 0, and for `audio:` and `bt:` once the device end runs, the event a
/// peer or a test waits for before it dials), never a key.
/// - Throws: ``UsageError`` for a bad or missing endpoint (exit 64); ``SessionFailure`` when the
///   session could not be connected (the mailbox API's reason: refused, untrusted key, rate limit...).
func openSession(listen: String?, to: String?, hci: String?, options: SessionOptions, wormhole: WormholeOptions? = nil,
                 trustAs: String? = nil, audioModem: LinkModemArgument = .afsk) async throws -> NoiseSession {
    if isWormholeEndpoint(listen ?? to) {
        guard (listen == nil) != (to == nil) else { throw UsageError("give either --listen or --to, not both") }
        return try await openWormholeSession(listen ?? to!, dialer: to != nil, options: options, wormhole: wormhole ?? WormholeOptions(),
                                             trustAs: trustAs)
    }
    let (endpoint, listening) = try parseSessionEndpoint(listen: listen, to: to, hci: hci)
    switch endpoint {
    case .tcp(let host, let port):
        if listening {
            let listener: TCPListener
            do {
                listener = try TCPListener(host: host, port: port)
            } catch {
                // A port taken or not ours to use: this end's failure (status 1), not a missing peer.
                throw LocalEndpointFailure(description: error.description)
            }
            defer { listener.close() }
            // Always, with the port it got (the one asked for, or the kernel's choice for port 0).
            printError("listening on \(Endpoint.tcp(host: host, port: listener.port))")
            return try await withTaskCancellationHandler {
                try await acceptFirstSession(listener, options: options)
            } onCancel: {
                listener.close()
            }
        }
        let transport = try await dialWithPatience(host: host, port: port)
        return try await NoiseSession.establish(over: transport, initiator: true, options: options)
    case .audio, .bluetooth:
        guard let transport = try await makeLinkTransport(endpoint, listening: listening, hci: hci, audioModem: audioModem) else {
            throw SessionFailure.networkUnavailable("\(endpoint) endpoints are not built yet (use tcp:HOST:PORT)")
        }
        return try await NoiseSession.establish(over: transport, initiator: !listening, options: options)
    }
}

/// A failure of this machine's own end before any peer was tried (README: exit status 1, not 3): no
/// Bluetooth in the kernel, a controller or sound device that does not open, a listening address that
/// is not the controller's, a TCP port that cannot be listened on.
struct LocalEndpointFailure: Error, CustomStringConvertible {
    var description: String
}

/// Runs the connection phase of a command (dialing or listening, the handshake): a failure there is
/// "no connection", exit status 3 (``connectionFailedStatus``); usage errors and interruptions keep theirs.
func connecting<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let e as LocalEndpointFailure {
        throw CLIError(e.description, status: 1)
    } catch let e as UsageError {
        throw e
    } catch let e as ValidationError {
        throw e
    } catch let e as ExitCode {
        throw e
    } catch {
        // After SIGINT/SIGTERM the failure is the interruption's (reportingErrors says so).
        if isStopRequested { throw error }
        throw CLIError("\(error)", status: connectionFailedStatus)
    }
}

/// Handshakes at once on one listener at most; more connections wait in the kernel's backlog.
let maximumPendingHandshakes = 8

/// Serves `listener` until one connection completes its handshake: each connection's handshake runs
/// beside the others, so a stray connection (a port scan, the magic and then silence, junk, a peer
/// whose key is not trusted) neither holds the listener nor ends it. Each failed handshake is logged
/// with the peer's address and the reason; the listener's own rate limit (per address) answers a
/// flood with NOPE before any cryptography. The listener closes once a session is up.
func acceptFirstSession(_ listener: TCPListener, options: SessionOptions) async throws -> NoiseSession {
    enum Outcome: Sendable {
        case accepted(TCPTransport)
        case acceptFailed(TransportError)
        case established(NoiseSession, Int)
        case failed(String, SessionFailure, Int)
    }
    let pending = Mutex<[Int: TCPTransport]>([:])
    defer { listener.close() }
    return try await withThrowingTaskGroup(of: Outcome.self) { group in
        @Sendable func accept() async -> Outcome {
            do { return .accepted(try await listener.accept()) } catch { return .acceptFailed(error) }
        }
        // However the wait ends, handshakes still under way end at once (their connections closed under
        // them), so the group does not wait out their handshake timeouts.
        defer { for transport in pending.withLock({ p in defer { p.removeAll() }; return Array(p.values) }) { transport.abort() } }
        group.addTask { await accept() }
        var next = 0, failures = 0
        while let outcome = try await group.next() {
            switch outcome {
            case .accepted(let transport):
                let id = next
                next += 1
                let room = pending.withLock { p in
                    guard p.count < maximumPendingHandshakes else { return false }
                    p[id] = transport
                    return true
                }
                if room {
                    group.addTask {
                        do throws(SessionFailure) {
                            return .established(try await NoiseSession.establish(over: transport, initiator: false, options: options), id)
                        } catch {
                            return .failed(transport.peerAddress, error, id)
                        }
                    }
                } else {
                    printError("modem: a connection from \(transport.peerAddress) dropped: \(maximumPendingHandshakes) handshakes are under way")
                    await transport.close()
                }
                group.addTask { await accept() }
            case .acceptFailed(let error):
                if Task.isCancelled { throw SessionFailure.userCanceled }
                throw SessionFailure.networkUnavailable(error.description)
            case .established(let session, let id):
                listener.close()
                pending.withLock { _ = $0.removeValue(forKey: id) }
                if failures > 0 { printError("modem: \(failures) connection\(failures == 1 ? "" : "s") failed before this one") }
                return session
            case .failed(let peer, let failure, let id):
                pending.withLock { _ = $0.removeValue(forKey: id) }
                failures += 1
                printError("modem: a connection from \(peer) failed its handshake (\(failure)); still listening")
            }
        }
        throw SessionFailure.networkUnavailable("the listener stopped")
    }
}

/// The endpoint of `--listen` or `--to` (exactly one), and whether it is `--listen`.
/// - Throws: ``UsageError`` naming the problem.
func parseSessionEndpoint(listen: String?, to: String?, hci: String?) throws -> (Endpoint, Bool) {
    guard (listen == nil) != (to == nil) else {
        throw UsageError(listen == nil ? "give --listen ENDPOINT or --to ENDPOINT (tcp:HOST:PORT, audio:DEVICE, bt:ADDR, wormhole:CODE)"
                                       : "give either --listen or --to, not both")
    }
    var endpoint: Endpoint
    do {
        endpoint = try Endpoint.parse(listen ?? to!)
    } catch {
        // `--listen tcp:HOST:0`: any free port, named on standard error once it listens (`listening
        // on tcp:HOST:PORT`). Endpoint.parse takes ports 1...65535 only, so HOST is checked with port 1.
        guard let listen, listen.hasPrefix("tcp:"), listen.hasSuffix(":0"),
              case .tcp(let host, _)? = try? Endpoint.parse(String(listen.dropLast()) + "1") else {
            // The CLI knows one kind more than the library: a magic-wormhole code.
            let kinds = error.isKindProblem ? "; wormhole:CODE connects through a rendezvous server" : ""
            throw UsageError("\(listen != nil ? "--listen" : "--to"): \(error.description)\(kinds)")
        }
        endpoint = .tcp(host: host, port: 0)
    }
    if case .bluetooth = endpoint, hci == nil, listen != nil {
        throw UsageError("--listen \(endpoint) needs --hci SPEC (our own host stack: tcp:HOST:PORT, serial:DEVICE[,BAUD] or hciN); the kernel's Bluetooth is used for --to only")
    }
    if hci != nil, case .bluetooth = endpoint {} else if hci != nil {
        throw UsageError("--hci applies to bt: endpoints only")
    }
    return (endpoint, listen != nil)
}

/// Dials, retrying for up to 3 s while nothing listens yet (the peer's `--listen` may still be
/// starting): the decision is ``ModemTransport/TransportError/mayRetryDial``, by the error's case.
private func dialWithPatience(host: String, port: Int) async throws -> TCPTransport {
    let deadline = ContinuousClock.now + .seconds(3)
    while true {
        do {
            return try await TCPTransport.dial(host: host, port: port)
        } catch {
            if Task.isCancelled { throw SessionFailure.userCanceled }
            guard error.mayRetryDial, ContinuousClock.now < deadline else {
                throw SessionFailure.networkUnavailable(error.description)
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// The link ends opened for `audio:` and `bt:` endpoints; they run until the process exits (one session per run).
private let openLinkEnds = Mutex<[AnyObject]>([])

/// The transport of an `audio:` or `bt:` endpoint: the channel protocol in duplex mode, one session
/// frame per duplex message.
///
/// `audio:DEVICE`: on one ALSA device, `--listen` as the device role and `--to` as the phone role.
/// Both directions share the device (a speaker and a microphone, a radio, the null-sink loopback),
/// so each end hears itself and takes turns by carrier sense.
///
/// `bt:ADDR`: `--to bt:ADDR` connects to the device at ADDR (SDP, RFCOMM) as the phone role, on our
/// own host stack with `--hci`, else on the kernel's Bluetooth (BlueZ sockets); `--listen bt:ADDR`
/// (needs `--hci`) makes the controller a discoverable device with a Serial Port record and serves
/// the first phone that connects; ADDR must be the controller's own address (00:00:00:00:00:00
/// accepts any).
private func makeLinkTransport(_ endpoint: Endpoint, listening: Bool, hci: String?,
                               audioModem: LinkModemArgument) async throws -> (any MessageTransport)? {
    switch endpoint {
    case .audio(let device):
        // AFSK at 1200 baud, the OFDM modem at the rate both ends agree (2048-byte frames, a window of
        // 32), or the HF modem likewise (512-byte frames, a window of 32).
        let configuration = switch audioModem {
        case .ofdm: LinkConfiguration(mode: .duplex, framePayload: 2048, windowFrames: 32, latencySeconds: 0.3,
                                      timing: OFDMLinkModem.timing(latencySeconds: 0.3))
        case .hf: HFLinkModem.linkConfiguration(mode: .duplex, framePayload: 512, windowFrames: 32, latencySeconds: 0.3)
        case .afsk: LinkConfiguration(mode: .duplex, latencySeconds: 0.3)
        }
        do {
            if listening {
                let end: LinkDevice
                do { end = try LinkDevice.alsa(device: device, configuration: configuration, sharedMedium: true) } catch {
                    throw LocalEndpointFailure(description: "audio:\(device): \(error)")
                }
                openLinkEnds.withLock { $0.append(end) }
                end.start()
                printError("listening on \(endpoint)")
                return try await end.accept()
            }
            let end: LinkPhone
            do { end = try LinkPhone.alsa(device: device, configuration: configuration, sharedMedium: true) } catch {
                throw LocalEndpointFailure(description: "audio:\(device): \(error)")
            }
            openLinkEnds.withLock { $0.append(end) }
            end.start()
            return try await end.dial()
        } catch let error as LocalEndpointFailure {
            throw error
        } catch let error as TransportError {
            throw SessionFailure.networkUnavailable("audio:\(device): \(error.description)")
        } catch {
            throw SessionFailure.networkUnavailable("audio:\(device): \(error)")
        }
    case .bluetooth(let text):
        guard let address = BDAddress(text) else { throw UsageError("bt:\(text): not a Bluetooth address") }
        guard let hci else {
            guard !listening else { throw UsageError("--listen bt:\(text) needs --hci SPEC") }
            let end: BluetoothLinkPhone
            do { end = try BluetoothLinkPhone(kernelAddress: address) } catch {
                throw LocalEndpointFailure(description: "bt:\(text): \(error)")
            }
            openLinkEnds.withLock { $0.append(end) }
            end.start()
            do { return try await end.dial() } catch {
                if Task.isCancelled { throw SessionFailure.userCanceled }
                throw SessionFailure.networkUnavailable("bt:\(text): \(error)")
            }
        }
        let controller: HCITransportAddress
        do { controller = try HCITransportAddress(parsing: hci) } catch { throw UsageError("--hci \(hci): \(error)") }
        let transport: any HCITransport
        do { transport = try controller.open() } catch {
            throw LocalEndpointFailure(description: "--hci \(hci): \(error)")
        }
        do {
            if listening {
                let any = address == BDAddress.any
                // Its ready event (discoverable, connectable, the Serial Port record published) becomes
                // `listening on bt:ADDR` with the controller's address.
                let end = BluetoothLinkDevice(transport: transport, expectedAddress: any ? nil : address, events: { event in
                    if case .ready(_, let own, _) = event { printError("listening on bt:\(own)") }
                })
                openLinkEnds.withLock { $0.append(end) }
                end.start()
                return try await withTaskCancellationHandler {
                    try await end.accept()
                } onCancel: {
                    end.stop()
                }
            }
            let end = BluetoothLinkPhone(transport: transport, address: address)
            openLinkEnds.withLock { $0.append(end) }
            end.start()
            return try await end.dial()
        } catch {
            if Task.isCancelled { throw SessionFailure.userCanceled }
            // The controller failed, or is not the one --listen named: this end's failure.
            if case .stopped(.localFailure(let why)?) = error as? TransportError {
                throw LocalEndpointFailure(description: "bt:\(text): \(why)")
            }
            throw SessionFailure.networkUnavailable("bt:\(text): \(error)")
        }
    case .tcp:
        return nil
    }
}
