// The umbrella module: one import for users who want the whole library.
//
// Each layer is also a module of its own (see docs/ARCHITECTURE.md); import those directly to depend
// on less. This file only re-exports them.
@_exported import ModemAudio
@_exported import ModemBluetooth
@_exported import ModemCodecs
@_exported import ModemDSP
@_exported import ModemLink
@_exported import ModemLinkProtocol
@_exported import ModemLinkTransport
@_exported import ModemMessaging
@_exported import ModemSockets
@_exported import ModemPipelines
@_exported import ModemPlot
@_exported import ModemRuntime
@_exported import ModemTNC
@_exported import ModemTransport
@_exported import ModemWormhole
