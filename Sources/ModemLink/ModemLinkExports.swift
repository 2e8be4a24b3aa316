// The transport-neutral half of the channel protocol (state machines, errors, the
// CommunicationManager protocol) lives in ModemLinkProtocol, so that other transports (Bluetooth,
// TCP) can build on it without DSP or audio; users of ModemLink keep seeing it through this import.
@_exported import ModemLinkProtocol
// LinkTransport (a MessageTransport over the channel protocol's duplex messages) lives in
// ModemLinkTransport, shared with ModemBluetooth; users of ModemLink keep seeing it through this import.
@_exported import ModemLinkTransport
