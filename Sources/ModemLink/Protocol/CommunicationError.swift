/// The error codes of the Communication API, reported through the `error(code, message)` callback
/// and ``CommunicationEvent/error(_:_:)``. The raw values are the seed SDK's codes.
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

    /// The seed's message for the code.
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

/// Return codes of the Communication API's calls (the seed's integers), as named constants.
public enum ReturnCode {
    /// The call was accepted.
    public static let ok: Int32 = 0
    /// `open`: the output could not be opened. `exchange`: an exchange is under way.
    /// `cancel`: there is nothing to cancel.
    public static let busyOrOutput: Int32 = -1
    /// `open`: the input could not be opened. `exchange`, `cancel`: the device is not opened.
    public static let notOpenedOrInput: Int32 = -2
    /// `open`: the handshake failed. `cancel`: a cancel is already under way.
    /// `exchange` (an extension of the seed): the data is larger than the maximum message size.
    public static let handshakeFailedOrCancelling: Int32 = -3
    /// No device detected.
    public static let noDevice: Int32 = -4
}
