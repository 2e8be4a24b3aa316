import ModemCodecs
import ModemTestSupport

/// Bits from a string of 0s and 1s (other characters ignored).
func hdlcBits(_ text: String) -> [Bool] {
    text.compactMap { $0 == "1" ? true : $0 == "0" ? false : nil }
}

/// Bytes from hexadecimal pairs separated by spaces.
func hdlcHex(_ text: String) -> [UInt8] {
    text.split(separator: " ").map { UInt8($0, radix: 16)! }
}

/// Splits `items` into pieces of random sizes 1...maxPiece.
func hdlcPieces<T>(_ items: [T], maxPiece: Int, using random: inout TestRandom) -> [ArraySlice<T>] {
    var pieces: [ArraySlice<T>] = []
    var start = 0
    while start < items.count {
        let end = min(items.count, start + Int.random(in: 1...maxPiece, using: &random))
        pieces.append(items[start..<end])
        start = end
    }
    return pieces
}

/// A valid-looking AX.25 UI frame (addresses A-Z0-9) with `infoLength` random information bytes.
func hdlcRandomAX25Bytes(infoLength: Int, using random: inout TestRandom) -> [UInt8] {
    let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    func address() -> AX25Address {
        let length = Int.random(in: 1...6, using: &random)
        let callsign = String((0..<length).map { _ in letters.randomElement(using: &random)! })
        return try! AX25Address(callsign: callsign, ssid: Int.random(in: 0...15, using: &random))
    }
    let digipeaters = (0..<Int.random(in: 0...3, using: &random)).map { _ in address() }
    return AX25Frame(destination: address(), source: address(), digipeaters: digipeaters, info: random.bytes(infoLength)).encode()
}
