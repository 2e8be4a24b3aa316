import ModemCodecs
import ModemPipelines

/// AX.25 frames the packet tests share: Bell 202 settings and five monitor lines with digipeaters,
/// an SSID and bytes that KISS must escape.
public enum PacketTestFixtures {
    /// Bell 202, AX.25 framing.
    public static let settings = try! ModemSettings(profile: "bell202", framing: "ax25")
    /// Five frames in TNC2 monitor format.
    public static let lines = [
        "N0CALL>APRS:first frame of the tnc test",
        "WB2OSZ-15>TEST,WIDE1-1,WIDE2-2:The quick brown fox jumps over the lazy dog 0123456789",
        "K1ABC-7>APZ123,RELAY*,WIDE2-1:!4237.14N/07120.83W>mobile",
        "Q1XYZ>CQ:binary <0x01><0x02><0xc0><0xdb>",
        "N0CALL-9>APRS:fifth and last",
    ]
    /// ``lines`` as frames.
    public static var frames: [AX25Frame] { lines.map { try! AX25Frame(monitorLine: $0) } }
}
