#if canImport(Glibc)
import Glibc
import Foundation

/// `modem bt connect` over the kernel's Bluetooth: SDP over an L2CAP socket (unless the channel is
/// given), an RFCOMM stream socket (the kernel does the RFCOMM framing, credits and DISC), then the
/// same serial-port semantics as ``SerialPortBridge`` (the shared ``SerialBridgeCore``): input to
/// the device, its bytes to output as they arrive, the quiet time after input ended, every byte
/// that arrived written whatever the outcome.
public enum BlueZSerialBridge {
    /// Opens the byte stream to `address`: checks the adapter (``BlueZ/adapter(device:)``), finds
    /// the Serial Port channel by SDP when `channel` is nil, connects RFCOMM.
    /// - Throws: ``BluetoothError/noBluetooth(_:)`` / ``BluetoothError/notPowered(_:)`` (no kernel
    ///   Bluetooth, no adapter, adapter down), ``BluetoothError/connectionFailed(_:)`` (no answer,
    ///   no Serial Port service, refused).
    public static func connect(to address: BDAddress, channel: UInt8?, device: UInt16 = 0,
                               timeout: Double = 10) throws(BluetoothError) -> BlueZRFCOMMStream {
        try BlueZ.adapter(device: device)
        let server: UInt8
        if let channel { server = channel } else { server = try BlueZSDP.serialPortChannel(of: address, timeout: timeout) }
        return try BlueZRFCOMMStream(connectingTo: address, channel: server, timeout: timeout)
    }

    /// Runs the bridge on an open stream to the end (blocking the calling thread), then closes it.
    /// - Parameters:
    ///   - stream: the device's byte stream (from ``connect(to:channel:device:timeout:)``).
    ///   - input: read until it ends; its bytes go to the device.
    ///   - output: the device's bytes are written here.
    ///   - quietSeconds: how long to wait for more bytes after `input` ended and all was sent.
    ///   - isInterrupted: polled; true ends the bridge (``SerialPortBridge/Outcome/interrupted``).
    public static func run(stream: BlueZRFCOMMStream, input: Int32, output: Int32, quietSeconds: Double = 2,
                           isInterrupted: @escaping @Sendable () -> Bool = { false }) -> SerialPortBridge.Outcome {
        let core = SerialBridgeCore(input: input, output: output, quietSeconds: quietSeconds,
                                    isInterrupted: isInterrupted, onFinish: {})
        let clock = Stopwatch()
        func now() -> Double { clock.seconds }
        core.opened(now: now()) { chunk in
            do {
                try stream.write(chunk)
                core.sent(chunk.count)
            } catch {
                core.sendFailed("\(error)")
            }
        }
        defer {
            core.stopReader()
            stream.close()
        }
        while core.outcome == nil {
            if core.interrupted() { break }
            let bytes: [UInt8]
            do {
                bytes = try stream.read(timeout: 0.01)
            } catch {
                core.finish(.deviceDisconnected(error.description))
                break
            }
            if !bytes.isEmpty {
                if !core.deliver(bytes, now: now()) { break }
                continue   // read on while bytes are there: every byte is written before any ending
            }
            if stream.isClosed {
                _ = core.closed(reason: "the device closed RFCOMM channel \(stream.channel)", byPeer: true)
                break
            }
            if let failure = core.sendFailureReason {
                core.finish(.deviceDisconnected(failure))
                break
            }
            switch core.step(now: now(), queuedBytes: 0) {
            case .wait:
                break
            case .close, .drop:
                // The kernel sends what it still holds, then DISC; wait up to the close timeout for it.
                stream.closeInOrder(waitingUpTo: Int32(SerialBridgeCore.closeTimeout))
                core.finish(.finished)
            }
        }
        return core.outcome ?? .finished
    }
}
#endif
import ModemRuntime
