import Foundation
import ModemAudio

/// A scripted stand-in for alsa-lib: one device, recording every call.
final class FakeALSA: ALSABackend, @unchecked Sendable {
    // What the backend does.
    var openResult: Int32 = 0
    var hints: [ALSANameHint] = []
    var hintsResult: Int32 = 0
    var cards: [ALSASoundCard] = []
    var cardsResult: Int32 = 0
    let stream = FakePCMStream()

    // What happened.
    private(set) var openedDevices: [(String, ALSAStreamDirection, Bool)] = []
    private(set) var reloads = 0

    func openPCM(_ stream: inout (any ALSAPCMStream)?, device: String, direction: ALSAStreamDirection,
                 nonBlocking: Bool) -> Int32 {
        openedDevices.append((device, direction, nonBlocking))
        if openResult < 0 { return openResult }
        stream = self.stream
        return 0
    }

    func errorDescription(code: Int32) -> String { "fake error text for \(code)" }

    func pcmNameHints(_ hints: inout [ALSANameHint]) -> Int32 {
        hints = self.hints
        return hintsResult
    }

    func soundCards(_ cards: inout [ALSASoundCard]) -> Int32 {
        cards = self.cards
        return cardsResult
    }

    func reloadConfiguration() -> Int32 {
        reloads += 1
        return 0
    }
}

/// A fake PCM stream. Playback keeps what is written; capture hands out `captureBytes`.
final class FakePCMStream: ALSAPCMStream {
    /// Decides whether a configuration is accepted (0) or not (a negative code).
    var accepts: (ALSASampleEncoding, Int) -> Int32 = { _, _ in 0 }
    /// Results returned before normal transfers resume, one per call (e.g. `-EPIPE`).
    var scriptedTransferResults: [Int] = []
    /// Results of `wait` (default "ready").
    var waitResult: Int32 = 1
    var recoverResult: Int32 = 0
    var startResult: Int32 = 0
    var drainResult: Int32 = 0
    /// The most frames one transfer moves (0: transfers move nothing and answer `-EAGAIN`).
    var framesPerTransfer = 1000
    var bufferFrames = 4800
    var periodFrames = 1200

    private(set) var configuration: (encoding: ALSASampleEncoding, channels: Int, rate: Int, latency: Int)?
    private(set) var configurationAttempts: [(ALSASampleEncoding, Int)] = []
    /// Bytes received by playback.
    private(set) var writtenBytes: [UInt8] = []
    /// Bytes capture still has to deliver.
    var captureBytes: [UInt8] = []
    private(set) var recoveredCodes: [Int32] = []
    private(set) var calls: [String] = []
    private(set) var waits = 0

    private var frameBytes: Int {
        guard let c = configuration else { return 0 }
        return c.channels * c.encoding.bytesPerSample
    }

    func setParameters(encoding: ALSASampleEncoding, channelCount: Int, sampleRate: Int, softResample: Bool,
                       latencyMicroseconds: Int) -> Int32 {
        configurationAttempts.append((encoding, channelCount))
        let rc = accepts(encoding, channelCount)
        if rc == 0 { configuration = (encoding, channelCount, sampleRate, latencyMicroseconds) }
        return rc
    }

    func getParameters(bufferFrameCount: inout Int, periodFrameCount: inout Int) -> Int32 {
        bufferFrameCount = bufferFrames
        periodFrameCount = periodFrames
        return 0
    }

    func writeInterleaved(_ buffer: UnsafeRawPointer, frameCount: Int) -> Int {
        if !scriptedTransferResults.isEmpty { return scriptedTransferResults.removeFirst() }
        if framesPerTransfer == 0 { return -Int(EAGAIN) }
        let n = min(frameCount, framesPerTransfer)
        writtenBytes += UnsafeRawBufferPointer(start: buffer, count: n * frameBytes)
        return n
    }

    func readInterleaved(_ buffer: UnsafeMutableRawPointer, frameCount: Int) -> Int {
        calls.append("read")
        if !scriptedTransferResults.isEmpty { return scriptedTransferResults.removeFirst() }
        let available = captureBytes.count / max(1, frameBytes)
        if framesPerTransfer == 0 || available == 0 { return -Int(EAGAIN) }
        let n = min(frameCount, framesPerTransfer, available)
        captureBytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: n * frameBytes) }
        captureBytes.removeFirst(n * frameBytes)
        return n
    }

    func wait(timeoutMilliseconds: Int32) -> Int32 {
        waits += 1
        if waitResult == 0 { usleep(UInt32(min(timeoutMilliseconds, 10)) * 1000) }
        return waitResult
    }

    func recover(code: Int32) -> Int32 {
        recoveredCodes.append(code)
        calls.append("recover")
        return recoverResult
    }

    func start() -> Int32 { calls.append("start"); return startResult }
    func setNonBlocking(_ nonBlocking: Bool) -> Int32 { calls.append("nonblock(\(nonBlocking))"); return 0 }
    func drain() -> Int32 { calls.append("drain"); return drainResult }
    func drop() -> Int32 { calls.append("drop"); return 0 }
    func close() -> Int32 { calls.append("close"); return 0 }

    // Helpers for tests.
    var writtenInt16: [Int16] {
        writtenBytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }.map { Int16(littleEndian: $0) }
    }

    func queueCapture(_ samples: [Int16]) {
        for s in samples { captureBytes += WAVBytes.le16(UInt16(bitPattern: s)) }
    }
}
