/// The runtime base of SwiftModem: the one way the code base waits and keeps time, and the small
/// pieces every layer shares. Every other target may import it; it imports none of them.
///
/// See "Concurrency and time" in docs/ARCHITECTURE.md.
public enum ModemRuntime {}
