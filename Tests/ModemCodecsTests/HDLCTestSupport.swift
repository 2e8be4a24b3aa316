import ModemCodecs

/// A small seeded generator for the HDLC, AX.25 and KISS tests (SplitMix64).
struct HDLCTestRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    mutating func bits(_ count: Int) -> [Bool] {
        (0..<count).map { _ in Bool.random(using: &self) }
    }
}

/// Bits from a string of 0s and 1s (other characters ignored).
func hdlcBits(_ text: String) -> [Bool] {
    text.compactMap { $0 == "1" ? true : $0 == "0" ? false : nil }
}

/// Bytes from hexadecimal pairs separated by spaces.
func hdlcHex(_ text: String) -> [UInt8] {
    text.split(separator: " ").map { UInt8($0, radix: 16)! }
}

/// Splits `items` into pieces of random sizes 1...maxPiece.
func hdlcPieces<T>(_ items: [T], maxPiece: Int, using random: inout HDLCTestRandom) -> [ArraySlice<T>] {
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
func hdlcRandomAX25Bytes(infoLength: Int, using random: inout HDLCTestRandom) -> [UInt8] {
    let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    func address() -> AX25Address {
        let length = Int.random(in: 1...6, using: &random)
        let callsign = String((0..<length).map { _ in letters.randomElement(using: &random)! })
        return try! AX25Address(callsign: callsign, ssid: Int.random(in: 0...15, using: &random))
    }
    let digipeaters = (0..<Int.random(in: 0...3, using: &random)).map { _ in address() }
    return AX25Frame(destination: address(), source: address(), digipeaters: digipeaters, info: random.bytes(infoLength)).encode()
}
