/// An AX.25 frame (version 2.x) without its FCS: addresses, control, PID, information.
///
/// The bytes are: destination, source and 0 to 8 digipeaters (7 bytes each, see ``AX25Address``), the
/// control byte, the PID byte for I frames and UI frames only, then the information field. The FCS is the
/// HDLC layer's business (``HDLCEncoder`` appends it, ``HDLCDecoder`` checks and removes it).
///
/// Only modulo-8 control fields are understood: the second control byte of a modulo-128 (extended) I or S
/// frame would be read as the PID or information. APRS and most packet traffic are UI frames (control
/// 0x03, PID 0xF0, "no layer 3"), the defaults.
///
/// Text in the TNC2 monitor format, as Dire Wolf prints and reads it, is ``monitorLine(asciiOnly:)`` and
/// ``init(monitorLine:)``:
///
/// ```swift
/// let frame = try AX25Frame(monitorLine: "N0CALL-7>APRS,WIDE1-1*,WIDE2-1:hello")
/// frame.digipeaters[0].hasBeenRepeated   // true
/// let bytes = frame.encode()             // for HDLCEncoder
/// try AX25Frame(decoding: bytes) == frame  // true
/// frame.monitorLine()                    // "N0CALL-7>APRS,WIDE1-1*,WIDE2-1:hello"
/// ```
public struct AX25Frame: Sendable, Hashable, CustomStringConvertible {
    /// The most digipeaters a frame can name.
    public static let maxDigipeaters = 8

    /// The control byte of a UI (unnumbered information) frame with the poll/final bit clear.
    public static let uiControl: UInt8 = 0x03

    /// The PID for "no layer 3 protocol", used by APRS.
    public static let noLayer3PID: UInt8 = 0xF0

    /// The station the frame is for (or an APRS destination such as `APRS`).
    public var destination: AX25Address

    /// The station that sent the frame.
    public var source: AX25Address

    /// The digipeater path, at most ``maxDigipeaters``; a digipeater that has repeated the frame has its
    /// ``AX25Address/hasBeenRepeated`` bit set.
    public var digipeaters: [AX25Address] {
        didSet {
            precondition(digipeaters.count <= Self.maxDigipeaters, "AX25Frame has at most 8 digipeaters, got \(digipeaters.count)")
        }
    }

    /// The control byte (modulo 8).
    public var control: UInt8

    /// The protocol identifier: present (non-nil) exactly for I frames and UI frames (see
    /// ``controlHasPID(_:)``).
    public var pid: UInt8?

    /// The information field (may be empty).
    public var info: [UInt8]

    /// Creates a frame.
    ///
    /// - Parameters:
    ///   - destination: Destination address; its ``AX25Address/highBit`` is the C bit.
    ///   - source: Source address; its ``AX25Address/highBit`` is the C bit.
    ///   - digipeaters: At most 8.
    ///   - control: The control byte; default UI (0x03).
    ///   - pid: The PID, `nil` for frames other than I and UI; default 0xF0.
    ///   - info: The information field.
    public init(
        destination: AX25Address, source: AX25Address, digipeaters: [AX25Address] = [],
        control: UInt8 = AX25Frame.uiControl, pid: UInt8? = AX25Frame.noLayer3PID, info: [UInt8] = []
    ) {
        precondition(digipeaters.count <= Self.maxDigipeaters, "AX25Frame has at most 8 digipeaters, got \(digipeaters.count)")
        precondition(
            (pid != nil) == Self.controlHasPID(control),
            "AX25Frame: a PID is present exactly for I and UI frames (control 0x\(ax25HexByte(control)), pid \(pid.map { "0x" + ax25HexByte($0) } ?? "nil"))"
        )
        self.destination = destination
        self.source = source
        self.digipeaters = digipeaters
        self.control = control
        self.pid = pid
        self.info = info
    }

    /// Whether a frame with this control byte carries a PID byte: I frames (bit 0 clear) and UI frames
    /// (0x03 or 0x13 with the poll/final bit).
    public static func controlHasPID(_ control: UInt8) -> Bool {
        control & 0x01 == 0 || control & 0xEF == 0x03
    }

    /// Whether this is a UI frame (control 0x03, or 0x13 with the poll/final bit).
    public var isUI: Bool {
        control & 0xEF == 0x03
    }

    /// The index in ``digipeaters`` of the last digipeater that has repeated the frame (the station it was
    /// heard from), or `nil` if none has: where the monitor format puts its `*`.
    public var lastRepeaterIndex: Int? {
        digipeaters.lastIndex(where: \.highBit)
    }

    // MARK: bytes

    /// Decodes a frame from its bytes (FCS removed).
    ///
    /// - Parameters:
    ///   - bytes: Addresses, control, PID (for I and UI frames), information.
    ///   - strictCallsigns: Whether callsigns must be A-Z and 0-9 (default). A frame repaired by flipping
    ///     bits is more likely real when its callsigns are well formed; pass `false` to accept any
    ///     printable callsign characters, as some stations send.
    /// - Throws: ``AX25Error`` saying what is wrong: too short, address field not terminated, more than 8
    ///   digipeaters, bad callsign characters, missing PID.
    public init(decoding bytes: some Collection<UInt8>, strictCallsigns: Bool = true) throws(AX25Error) {
        let bytes = Array(bytes)
        guard bytes.count >= 15 else {
            throw AX25Error(.frameTooShort, "AX.25 frame of \(bytes.count) bytes is shorter than 15 (two addresses and a control byte)")
        }
        var addresses: [AX25Address] = []
        var offset = 0
        while true {
            guard offset + 7 <= bytes.count else {
                throw AX25Error(.addressFieldNotTerminated, "AX.25 address field is not terminated before the end of the frame (\(bytes.count) bytes)")
            }
            let role = switch addresses.count {
            case 0: "destination"
            case 1: "source"
            default: "digipeater \(addresses.count - 1)"
            }
            let (address, isLast) = try AX25Address.decode(bytes[offset..<offset + 7], strictCallsigns: strictCallsigns, role: role)
            addresses.append(address)
            offset += 7
            if isLast {
                break
            }
            if addresses.count == 2 + Self.maxDigipeaters {
                throw AX25Error(.tooManyDigipeaters, "AX.25 address field is not terminated after 10 addresses (more than 8 digipeaters)")
            }
        }
        guard addresses.count >= 2 else {
            throw AX25Error(.addressFieldNotTerminated, "AX.25 address field ends after the destination: no source address")
        }
        guard offset < bytes.count else {
            throw AX25Error(.frameTooShort, "AX.25 frame ends after its addresses: no control byte")
        }
        let control = bytes[offset]
        offset += 1
        var pid: UInt8?
        if Self.controlHasPID(control) {
            guard offset < bytes.count else {
                throw AX25Error(.missingPID, "AX.25 \(control & 1 == 0 ? "I" : "UI") frame (control 0x\(ax25HexByte(control))) ends before its PID byte")
            }
            pid = bytes[offset]
            offset += 1
        }
        self.init(
            destination: addresses[0], source: addresses[1], digipeaters: Array(addresses[2...]),
            control: control, pid: pid, info: Array(bytes[offset...])
        )
    }

    /// The frame's bytes, without FCS: addresses (the last with its end bit set), control, PID if any,
    /// information.
    public func encode() -> [UInt8] {
        precondition(digipeaters.count <= Self.maxDigipeaters, "AX25Frame has at most 8 digipeaters, got \(digipeaters.count)")
        precondition((pid != nil) == Self.controlHasPID(control), "AX25Frame: a PID is present exactly for I and UI frames")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 + 7 * digipeaters.count + info.count)
        bytes += destination.encode(isLast: false)
        bytes += source.encode(isLast: digipeaters.isEmpty)
        for (index, digipeater) in digipeaters.enumerated() {
            bytes += digipeater.encode(isLast: index == digipeaters.count - 1)
        }
        bytes.append(control)
        if let pid {
            bytes.append(pid)
        }
        bytes += info
        return bytes
    }

    /// The TNC2 monitor line (``monitorLine(asciiOnly:)`` with non-ASCII UTF-8 shown as is).
    public var description: String {
        monitorLine()
    }
}

extension AX25Address {
    /// The has-been-repeated bit (H) of a digipeater address: the same bit as ``highBit``.
    public var hasBeenRepeated: Bool {
        get { highBit }
        set { highBit = newValue }
    }
}
