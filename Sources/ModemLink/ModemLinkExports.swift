// The transport-neutral half of the channel protocol (state machines, errors, the
// CommunicationManager protocol) lives in ModemLinkProtocol, so that other transports (Bluetooth,
// TCP) can build on it without DSP or audio; users of ModemLink keep seeing it through this import.
@_exported import ModemLinkProtocol
