public enum SwiftModemVersion { public static let string = "0.1.0" }
