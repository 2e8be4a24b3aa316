/// The command in a KISS frame's first byte (its low nibble; the high nibble is the port).
///
/// Parameter commands carry one byte of payload; the units are those of the KISS specification (K3MC
/// and KA9Q, 1986-87) and of Dire Wolf.
public enum KISSCommand: UInt8, Sendable, Hashable, CaseIterable {
    /// 0: an AX.25 frame (without FCS) to send or that was received.
    case dataFrame = 0x00
    /// 1: transmitter keyup delay, in units of 10 ms (default 50, 500 ms).
    case txDelay = 0x01
    /// 2: persistence parameter p for p-persistent CSMA, 0...255 meaning (p + 1) / 256 (default 63).
    case persistence = 0x02
    /// 3: slot time for CSMA, in units of 10 ms (default 10, 100 ms).
    case slotTime = 0x03
    /// 4: time to hold the transmitter after the frame, in units of 10 ms (obsolete).
    case txTail = 0x04
    /// 5: 0 for half duplex (CSMA), non-zero for full duplex (transmit at once).
    case fullDuplex = 0x05
    /// 6: a hardware-specific setting; payload defined by the TNC.
    case setHardware = 0x06
    /// 0xFF (the whole first byte): leave KISS mode.
    case exitKISS = 0xFF
}
