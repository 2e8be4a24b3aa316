import ModemCodecs

/// A state machine the ``LinkStation`` can drive: ``PhoneStateMachine`` or ``DeviceStateMachine``.
public protocol LinkMachine: Sendable {
    /// A frame arrived.
    mutating func receive(_ frame: LinkFrame, now: Double) -> [LinkAction]
    /// Time passes.
    mutating func tick(now: Double) -> [LinkAction]
    /// The driver finished playing what it was given.
    mutating func transmitted(now: Double) -> [LinkAction]
    /// Frames of another protocol or version were heard.
    mutating func heardSignal()
}

extension PhoneStateMachine: LinkMachine {}
extension DeviceStateMachine: LinkMachine {
    /// Nothing to do for a device.
    public mutating func heardSignal() {}
}
