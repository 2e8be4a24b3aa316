// The DSP's users get the runtime base with it: the seeded generator (`SplitMix64`) that the channel
// simulator and every seeded run draw from lived here before it moved to ModemRuntime, and code that
// imports ModemDSP for it keeps working.
@_exported import ModemRuntime
