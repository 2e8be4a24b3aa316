import ModemRuntime
import ModemCrypto
import Foundation
import ModemLink
import ModemMessaging
import ModemTransport
import Synchronization

/// A transport that counts what the sender puts on the line: each frame handed to the link (its
/// transmission starts then: the session's writer sends one frame at a time).
final class CountingTransport: MessageTransport {
    let inner: any MessageTransport
    let onSend: @Sendable (Int) -> Void
    var kind: TransportKind { inner.kind }
    var maximumFrameSize: Int { inner.maximumFrameSize }

    init(_ inner: any MessageTransport, onSend: @escaping @Sendable (Int) -> Void) {
        self.inner = inner
        self.onSend = onSend
    }

    func send(_ frame: [UInt8]) async throws(TransportError) {
        onSend(frame.count)
        try await inner.send(frame)
    }

    func receive() async -> TransportInput { await inner.receive() }
    func close() async { await inner.close() }
}

/// The real stack for transfer-test: Noise sessions (keys in two temporary folders that trust each
/// other) and data connections sending a file that the receiver stores in a folder, resumed from
/// its partial state after a cut.
///
/// `bytesResent` is counted on the line: the sender's DATA frames are numbered in order from the
/// block the receiver said it holds (the first progress of each `sendFile`), and each block's
/// payload counts once per transmission beyond its first.
final class DataTransferRun: Sendable {
    let folder: String
    let payloadPath: String
    let receiveFolder: String
    let senderKeys: KeyStore
    let receiverKeys: KeyStore
    let size: Int
    let blockSize: Int
    let dataFrameMinimum: Int

    private struct Counts {
        var sends: [Int]
        var nextBlock = 0
        var delivered = 0
    }
    private let counts: Mutex<Counts>
    /// Where every key comes from: the run is a function of its seed (the ciphertext on the line,
    /// and so what the channel's noise does to it, is the same each time).
    private let keySource: Mutex<SplitMix64>

    init(payload: [UInt8], blockSize: Int, seed: UInt64) throws {
        let base = FileManager.default.temporaryDirectory.path + "/modem-transfer-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        folder = base
        payloadPath = base + "/payload.bin"
        receiveFolder = base + "/in"
        guard FileManager.default.createFile(atPath: payloadPath, contents: Data(payload)) else {
            throw TransferTestError.sessionFailed("cannot write \(base)/payload.bin")
        }
        // The offer carries the file's modification time (in its resume key): a fixed one keeps the
        // bytes on the line, and so the run, a function of the seed.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_000_000)], ofItemAtPath: payloadPath)
        var keySource = SplitMix64(seed: seed ^ 0x4E01_5E5E)
        senderKeys = try KeyStore(folder: base + "/keys-sender")
        receiverKeys = try KeyStore(folder: base + "/keys-receiver")
        let senderIdentity = try Self.key(&keySource), receiverIdentity = try Self.key(&keySource)
        try senderKeys.trust(name: "receiver", publicKey: try receiverKeys.identity(creating: { receiverIdentity }).publicKey.rawRepresentation)
        try receiverKeys.trust(name: "sender", publicKey: try senderKeys.identity(creating: { senderIdentity }).publicKey.rawRepresentation)
        self.keySource = Mutex(keySource)
        size = payload.count
        self.blockSize = blockSize
        let blocks = max(1, (payload.count + blockSize - 1) / blockSize)
        let last = payload.count - (blocks - 1) * blockSize
        // DATA frames carry a block (at least the last block's bytes); control frames are far shorter.
        dataFrameMinimum = max(256, min(blockSize, last))
        counts = Mutex(Counts(sends: Array(repeating: 0, count: blocks)))
    }

    /// A private key from the run's seeded source.
    private static func key(_ source: inout SplitMix64) throws -> X25519PrivateKey {
        try X25519PrivateKey(rawRepresentation: (0..<4).flatMap { _ in withUnsafeBytes(of: source.next().littleEndian, Array.init) })
    }

    func removeFiles() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    var bytesResent: Int {
        counts.withLock { c in
            c.sends.indices.reduce(0) { total, i in
                total + max(0, c.sends[i] - 1) * (min(size, (i + 1) * blockSize) - i * blockSize)
            }
        }
    }

    var delivered: Int { counts.withLock { $0.delivered } }

    /// Whether the received file is byte for byte the payload.
    func receivedMatches(_ payload: [UInt8]) -> Bool {
        guard let data = FileManager.default.contents(atPath: receiveFolder + "/payload.bin") else { return false }
        return data.count == payload.count && SHA256Hasher.hash(data) == SHA256Hasher.hash(payload)
    }

    private func linkConfiguration() -> DataConfiguration {
        DataConfiguration(blockSize: blockSize, recordPayload: blockSize, progressEveryBlocks: 8)
    }

    /// One session each way, its timers on `clock` (the channel clock): returns whether the file was confirmed (CH-RESULT ok) at the sender.
    func session(dialer: LinkTransport, listener: LinkTransport, clock: TimerClock, delivered: @escaping @Sendable (Int) -> Void,
                 confirmed onConfirmed: @Sendable () -> Void) async -> Bool {
        let counted = CountingTransport(dialer) { [self] length in
            guard length >= dataFrameMinimum else { return }
            self.counts.withLock { c in
                if c.nextBlock < c.sends.count { c.sends[c.nextBlock] += 1 }
                c.nextBlock += 1
            }
        }
        let senderOptions = SessionOptions(userName: "sender", service: .data, keys: senderKeys, clock: clock)
        let receiverOptions = SessionOptions(userName: "receiver", service: .data, keys: receiverKeys, clock: clock)
        // Both ephemeral keys come from the seeded source, drawn in a fixed order.
        let ephemeral: (dialer: X25519PrivateKey, listener: X25519PrivateKey)
        do {
            ephemeral = try keySource.withLock { s in (try Self.key(&s), try Self.key(&s)) }
        } catch {
            await dialer.close()
            await listener.close()
            return false
        }
        async let listening = establishResult(listener, receiverOptions, ephemeral.listener)
        let dialed: NoiseSession
        do {
            dialed = try await NoiseSession.establish(over: counted, initiator: true, options: senderOptions, ephemeralKey: ephemeral.dialer)
        } catch {
            await listener.close()
            _ = await listening
            return false
        }
        let listened: NoiseSession
        switch await listening {
        case .success(let s): listened = s
        case .failure:
            await dialed.close()
            await dialer.close()
            return false
        }
        let folderHandle: ReceiveFolder
        do { folderHandle = try ReceiveFolder(path: receiveFolder) } catch {
            await dialer.close()
            await listener.close()
            return false
        }
        var receiving = linkConfiguration()
        receiving.folder = folderHandle
        receiving.autoAcceptConnections = true
        let sender = DataConnections(session: dialed, configuration: linkConfiguration())
        let receiver = DataConnections(session: listened, configuration: receiving)
        let receiverEvents = Simulation.spawn { [self] in
            for await event in receiver.events {
                switch event {
                case .offered(let id, _):
                    try? await receiver.accept(id)
                case .progress(_, _, let bytes, _):
                    self.counts.withLock { $0.delivered = max($0.delivered, Int(bytes)) }
                    delivered(Int(bytes))
                case .fileReceived(_, _, let file):
                    self.counts.withLock { $0.delivered = Int(file.size) }
                    delivered(Int(file.size))
                case .sessionEnded:
                    return
                default:
                    break
                }
            }
        }
        let senderEvents = Simulation.spawn { for await _ in sender.events {} }
        var confirmed = false
        do {
            let id = try await sender.start()
            let firstProgress = Mutex(true)
            _ = try await sender.sendFile(path: payloadPath, as: "payload.bin", on: id) { [self] bytes, _ in
                let first = firstProgress.withLock { f in defer { f = false }; return f }
                if first { self.counts.withLock { $0.nextBlock = Int(bytes) / blockSize } }
            }
            confirmed = true
            onConfirmed()
        } catch {}
        // Done, or the session ended (a cut): close the lines, let both sides see their end.
        await dialer.close()
        await listener.close()
        _ = await sender.ended()
        _ = await receiver.ended()
        receiverEvents.cancel()
        senderEvents.cancel()
        return confirmed
    }
}

private func establishResult(_ transport: LinkTransport, _ options: SessionOptions,
                             _ ephemeralKey: X25519PrivateKey) async -> Result<NoiseSession, SessionFailure> {
    do {
        return .success(try await NoiseSession.establish(over: transport, initiator: false, options: options, ephemeralKey: ephemeralKey))
    } catch { return .failure(error) }
}
