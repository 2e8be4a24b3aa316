import ModemAudio

/// The channel a device is connected by (the seed's `DeviceCommunicationChannel`).
public enum DeviceCommunicationChannel: String, Sendable, Hashable {
    /// A sound card's output and input (an audio-jack cable, or speaker and microphone).
    case audioJack
    /// Bluetooth RFCOMM (room for it: the same protocol over a byte stream).
    case bluetooth
}

/// A device found by a search (the seed's `DeviceInfo`).
public struct DeviceInfo: Sendable, Hashable {
    /// The device's name as given in the handshake (nil when it did not answer).
    public var name: String?
    /// Where it is: the ALSA device name for the audio jack, an address for Bluetooth.
    public var identifier: String
    /// How it is connected.
    public var channel: DeviceCommunicationChannel
    /// Creates a description.
    public init(name: String?, identifier: String, channel: DeviceCommunicationChannel) {
        self.name = name
        self.identifier = identifier
        self.channel = channel
    }
}

/// Events of a ``CommunicationManager``: the seed's callbacks as values.
public typealias CommunicationEvent = LinkEvent

/// How an exchange failed (thrown by ``CommunicationManager/exchange(_:timeout:)``).
public enum ExchangeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call was refused with the seed's return code (-1 busy, -2 not opened, -3 too large, -4 no device).
    case refused(Int32)
    /// The exchange ran out of time (the seed's `onTimeout`, code 5).
    case timeout
    /// The exchange ended with an error code (12: it was cancelled).
    case error(CommunicationError, String)

    public var description: String {
        switch self {
        case .refused(let c): return "exchange refused with code \(c)"
        case .timeout: return "exchange timed out"
        case .error(let e, let m): return "exchange failed with code \(e.rawValue): \(m)"
        }
    }
}

/// The seed's callbacks (`CommunicationCallBack`), for the callback-style facade.
public protocol CommunicationCallback: AnyObject, Sendable {
    /// The data was sent and acknowledged.
    func onSendOK()
    /// The exchange completed with `data` from the device.
    func onReceive(_ data: [UInt8])
    /// The exchange timed out.
    func onTimeout()
    /// The exchange failed, or a cancel ended (12 success, 13 failure).
    func onError(_ code: Int32, message: String)
    /// Part of a message was received or acknowledged: `bytes` of `total`.
    func onProgress(bytes: Int, total: Int)
}

/// The phone side of the Communication API (the seed's `CommunicationManagerBase`): open a device,
/// exchange data, cancel, close. ``AudioJackManager`` implements it over any audio transport;
/// a Bluetooth manager would implement it over RFCOMM.
public protocol CommunicationManager: AnyObject, Sendable {
    /// The events of the link (every callback of the seed, as values).
    var events: AsyncStream<CommunicationEvent> { get }
    /// The phone state.
    var state: PhoneStateMachine.State { get }
    /// Opens the device and runs the handshake: 0, -1 (output could not be opened), -2 (input could
    /// not be opened), -3 (handshake failed), -4 (no device).
    func open() async -> Int32
    /// Exchanges data. Master-slave: sends the request, returns the reply. Duplex: sends a message,
    /// returns an empty array once it was acknowledged.
    func exchange(_ data: [UInt8], timeout: Double) async throws(ExchangeFailure) -> [UInt8]
    /// Cancels the exchange under way (non-blocking; the outcome is error 12 or 13 as an event):
    /// 0, -1 (nothing to cancel), -2 (not opened), -3 (already cancelling), -4 (no device).
    func cancel() async -> Int32
    /// Sends the close signal (up to 3 times) and releases the audio resources.
    func close() async
    /// Releases the audio resources without powering the device off.
    func closeResources() async
}
