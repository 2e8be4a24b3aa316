/// The version of SwiftModem: `modem --version`, `modem-hub --version`, the PNG files' Software text.
public enum SwiftModemVersion {
    /// The version, e.g. "0.1.0".
    public static let string = "0.1.0"
}
