/// The error codes of the Communication API, reported through the `error(code, message)` callback
/// and ``CommunicationEvent/error(_:_:)``. The raw values are the Communication API's codes.
public enum CommunicationError: Int32, Error, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Failed to decode the audio waveform; send the command again.
    case waveformDecode = 3
    /// Not enough memory (a message larger than the receiver accepts); close the resources and open again.
    case outOfMemory = 4
    /// Timeout: check that the device is powered on.
    case timeout = 5
    /// Byte format error; send the command again.
    case byteFormat = 6
    /// Frame format error (a peer speaking another protocol version); send the command again.
    case frameFormat = 7
    /// Unknown error; close the resources and open again.
    case unknown = 8
    /// Writing to the playback device failed; open the device again.
    case playbackWrite = 9
    /// Reading from the capture device failed; open the device again.
    case captureRead = 10
    /// Exchange state error; send the command again.
    case exchangeState = 11
    /// The exchange was cancelled.
    case cancelSucceeded = 12
    /// The cancel command was not confirmed by the device.
    case cancelFailed = 13
    /// The Bluetooth channel was disconnected.
    case bluetoothDisconnected = 20

    /// The Communication API's message for the code.
    public var description: String {
        switch self {
        case .waveformDecode: return "Failed to decode audio waveform, send the command again."
        case .outOfMemory: return "Not enough memory, close the audio resources and open the device again."
        case .timeout: return "Timeout, check that the device is powered on."
        case .byteFormat: return "Byte format error, send the command again."
        case .frameFormat: return "Frame format error, send the command again."
        case .unknown: return "Unknown error, close the audio resources and open the device again."
        case .playbackWrite: return "Audio playback write error, open the device again."
        case .captureRead: return "Audio capture read error, open the device again."
        case .exchangeState: return "Exchange state error, send the command again."
        case .cancelSucceeded: return "Cancel success."
        case .cancelFailed: return "Cancel failed."
        case .bluetoothDisconnected: return "Bluetooth channel disconnected."
        }
    }
}

/// Return codes of the Communication API's calls (its integers), as named constants.
public enum ReturnCode {
    /// The call was accepted.
    public static let ok: Int32 = 0
    /// `open`: the output could not be opened. `exchange`: an exchange is under way.
    /// `cancel`: there is nothing to cancel.
    public static let busyOrOutput: Int32 = -1
    /// `open`: the input could not be opened. `exchange`, `cancel`: the device is not opened.
    public static let notOpenedOrInput: Int32 = -2
    /// `open`: the handshake failed. `cancel`: a cancel is already under way.
    /// `exchange` (an extension of the Communication API): the data is larger than the maximum message size.
    public static let handshakeFailedOrCancelling: Int32 = -3
    /// No device detected.
    public static let noDevice: Int32 = -4
}

/// Why a call of a ``CommunicationManager`` failed: the Communication API's negative return codes and its
/// failure callbacks (`onTimeout`, `onError`) as one typed error.
public enum LinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `open`: the output (the sending side of the transport) could not be opened (seed: -1).
    case outputUnavailable(String)
    /// `open`: the input (the receiving side of the transport) could not be opened (seed: -2).
    case inputUnavailable(String)
    /// `open`: something answered that is not this protocol or this version (seed: -3).
    case handshakeFailed
    /// Nothing answered the handshake; later calls get this too until an open succeeds (seed: -4).
    case noDevice
    /// `exchange`, `cancel`: the device is not opened (seed: -2).
    case notOpened
    /// `open`: an open is under way; `exchange`: an exchange (or a cancel) is under way (seed: -1).
    case busy
    /// `exchange`: the message is larger than the configured maximum (seed: -3, an extension).
    case messageTooLarge(size: Int, maximum: Int)
    /// `exchange`: the timeout is not a positive, finite duration (seed: -1, it has no own code).
    case invalidTimeout
    /// `cancel`: no exchange is under way (seed: -1).
    case nothingToCancel
    /// `cancel`: a cancel is already under way (seed: -3).
    case alreadyCancelling
    /// The exchange ran out of time (seed: `onTimeout`, error 5).
    case timedOut
    /// The exchange was cancelled by ``CommunicationManager/cancel()`` (seed: error 12).
    case cancelled
    /// The exchange, or the transport under it, failed with one of the Communication API's error codes.
    case failed(CommunicationError, String)
    /// `open`: the transport could not be set up; `code` is the Communication API's return code for it on this
    /// channel (Bluetooth: -1 illegal address, -2 connection failed, -4 no Bluetooth, -5 not powered,
    /// -6 unknown error).
    case transportUnavailable(code: Int32, String)

    /// The Communication API's integer for this failure: the negative return code of the call that was refused,
    /// or the positive error code that `onError`/`onTimeout` report for an exchange that ended badly.
    public var returnCode: Int32 {
        switch self {
        case .outputUnavailable, .busy, .invalidTimeout, .nothingToCancel: return ReturnCode.busyOrOutput
        case .inputUnavailable, .notOpened: return ReturnCode.notOpenedOrInput
        case .handshakeFailed, .messageTooLarge, .alreadyCancelling: return ReturnCode.handshakeFailedOrCancelling
        case .noDevice: return ReturnCode.noDevice
        case .timedOut: return CommunicationError.timeout.rawValue
        case .cancelled: return CommunicationError.cancelSucceeded.rawValue
        case .failed(let code, _): return code.rawValue
        case .transportUnavailable(let code, _): return code
        }
    }

    public var description: String {
        switch self {
        case .outputUnavailable(let m): return "the output could not be opened: \(m)"
        case .inputUnavailable(let m): return "the input could not be opened: \(m)"
        case .handshakeFailed: return "the handshake failed (another protocol or version answered)"
        case .noDevice: return "no device answered"
        case .notOpened: return "the device is not opened"
        case .busy: return "another call of the same kind is under way"
        case .messageTooLarge(let size, let maximum): return "the message has \(size) bytes, more than the maximum \(maximum)"
        case .invalidTimeout: return "the timeout must be a positive, finite duration"
        case .nothingToCancel: return "no exchange to cancel"
        case .alreadyCancelling: return "a cancel is already under way"
        case .timedOut: return "the exchange timed out"
        case .cancelled: return "the exchange was cancelled"
        case .failed(let code, let m): return "error \(code.rawValue): \(m)"
        case .transportUnavailable(_, let m): return m
        }
    }
}
