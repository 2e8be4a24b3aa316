/// The channel a device is connected by (the Communication API's `DeviceCommunicationChannel`).
public enum DeviceCommunicationChannel: String, Sendable, Hashable {
    /// A sound card's output and input (an audio-jack cable, or speaker and microphone).
    case audioJack
    /// Bluetooth RFCOMM (room for it: the same protocol over a byte stream).
    case bluetooth
}

/// A device found by a search (the Communication API's `DeviceInfo`).
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

/// Events of a ``CommunicationManager``: the Communication API's callbacks as values.
public typealias CommunicationEvent = LinkEvent

/// The Communication API's callbacks (`CommunicationCallBack`), for the callback-style facade.
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

/// The phone side of the Communication API (its `CommunicationManagerBase`): open a device,
/// exchange data, cancel, close. It says nothing about the transport: ``AudioJackManager`` implements
/// it over any audio output and input, a Bluetooth manager will implement it over a byte stream
/// (RFCOMM) with the same state machine, calls, errors and events.
///
/// Calls fail by throwing ``LinkError`` (each case is one of the Communication API's return codes or callbacks,
/// see ``LinkError/returnCode``); what happens on the link afterwards arrives on ``events``.
///
/// Contract for implementations:
/// - Every method may be called from any task or thread; concurrent calls are serialised so that at
///   most one open, one exchange and one cancel are under way at once (the others throw
///   ``LinkError/busy``, or ``LinkError/alreadyCancelling`` for a cancel). Opening twice at once
///   never creates a second transport.
/// - ``open()`` brings the transport up and runs the handshake; calling it while opened runs a new
///   handshake on the same transport.
/// - After ``close()`` or ``closeResources()`` the manager is closed and may be opened again.
/// - ``state`` and ``deviceName`` may be read at any time; they follow the link without awaiting.
public protocol CommunicationManager: AnyObject, Sendable {
    /// How the device is connected.
    var channel: DeviceCommunicationChannel { get }
    /// The events of the link (every callback of the Communication API, as values).
    var events: AsyncStream<CommunicationEvent> { get }
    /// The phone state (the Communication API's phone state machine, the same for every channel).
    var state: PhoneStateMachine.State { get }
    /// The name the device gave at the last successful handshake.
    var deviceName: String? { get }
    /// Opens the transport and runs the handshake; returns once the device answered.
    /// - Throws: ``LinkError/outputUnavailable(_:)``, ``LinkError/inputUnavailable(_:)`` (the
    ///   transport could not be opened), ``LinkError/handshakeFailed``, ``LinkError/noDevice``,
    ///   ``LinkError/busy`` (another open is under way), ``LinkError/failed(_:_:)`` (the transport
    ///   failed during the handshake).
    func open() async throws(LinkError)
    /// Exchanges data. Master-slave: sends the request, returns the reply. Duplex: sends a message,
    /// returns an empty array once it was acknowledged (the device's own messages come as events).
    /// - Parameters:
    ///   - data: the message, at most the configured maximum message size.
    ///   - timeout: the time the whole exchange may take (positive).
    /// - Throws: refused at once: ``LinkError/notOpened``, ``LinkError/noDevice``, ``LinkError/busy``,
    ///   ``LinkError/messageTooLarge(size:maximum:)``, ``LinkError/invalidTimeout``; ended later:
    ///   ``LinkError/timedOut``, ``LinkError/cancelled``, ``LinkError/failed(_:_:)``.
    func exchange(_ data: [UInt8], timeout: Duration) async throws(LinkError) -> [UInt8]
    /// Asks the device to cancel the exchange under way and returns without waiting for its answer:
    /// the exchange then ends with ``LinkError/cancelled`` (error 12 as an event), or the event
    /// error 13 says the cancel failed.
    /// - Throws: ``LinkError/nothingToCancel``, ``LinkError/notOpened``, ``LinkError/noDevice``,
    ///   ``LinkError/alreadyCancelling``.
    func cancel() async throws(LinkError)
    /// Sends the close signal (up to 3 times) and releases the transport.
    func close() async
    /// Releases the transport without powering the device off.
    func closeResources() async
}
