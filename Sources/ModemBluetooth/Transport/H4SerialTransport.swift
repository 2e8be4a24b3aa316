#if canImport(Glibc)
import Glibc
#endif

/// H4 over a serial port (`--hci serial:/dev/ttyUSB0[,BAUD]`): raw termios (`cfmakeraw`), 8N1,
/// hardware flow control (`CRTSCTS`), a fixed rate (115200 by default). Changing a controller's own
/// rate is vendor-specific and not done here.
public final class H4SerialTransport: HCITransport {
    private let channel: H4StreamChannel
    /// The device path.
    public let path: String
    /// The line rate in bits per second.
    public let baud: Int

    /// The rates termios can set, bits per second → speed constant.
    static let speeds: [Int: speed_t] = [
        9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600),
        115200: speed_t(B115200), 230400: speed_t(B230400), 460800: speed_t(B460800), 500000: speed_t(B500000),
        576000: speed_t(B576000), 921600: speed_t(B921600), 1_000_000: speed_t(B1000000), 1_152_000: speed_t(B1152000),
        1_500_000: speed_t(B1500000), 2_000_000: speed_t(B2000000), 2_500_000: speed_t(B2500000),
        3_000_000: speed_t(B3000000), 3_500_000: speed_t(B3500000), 4_000_000: speed_t(B4000000),
    ]

    /// termios `CRTSCTS` (0x80000000 on Linux; too wide for the importer's Int32 macro).
    private static let crtscts: tcflag_t = 0x8000_0000

    /// Opens and configures the port.
    /// - Throws: ``BluetoothError/noBluetooth(_:)`` when the device is missing, unreadable or not a
    ///   serial port; ``BluetoothError/invalidArgument(_:)`` for an unsupported rate.
    public init(path: String, baud: Int = 115_200) throws(BluetoothError) {
        self.path = path
        self.baud = baud
        let name = HCITransportAddress.serial(path: path, baud: baud).description
        guard let speed = Self.speeds[baud] else {
            throw .invalidArgument("\(name): \(baud) baud is not a rate termios can set (\(Self.speeds.keys.sorted().map(String.init).joined(separator: ", ")))")
        }
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let why = code == ENOENT ? "no such device" : String(cString: strerror(code)).lowercased()
            throw .noBluetooth("no controller at \(name): \(why)")
        }
        var t = termios()
        guard tcgetattr(fd, &t) == 0 else {
            let why = String(cString: strerror(errno)).lowercased()
            Glibc.close(fd)
            throw .noBluetooth("no controller at \(name): not a serial port (\(why))")
        }
        cfmakeraw(&t)
        t.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD) | Self.crtscts
        t.c_cflag &= ~tcflag_t(CSTOPB)
        withUnsafeMutableBytes(of: &t.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        cfsetispeed(&t, speed)
        cfsetospeed(&t, speed)
        guard tcsetattr(fd, TCSANOW, &t) == 0 else {
            let why = String(cString: strerror(errno)).lowercased()
            Glibc.close(fd)
            throw .noBluetooth("no controller at \(name): cannot configure the port (\(why))")
        }
        _ = tcflush(fd, TCIOFLUSH)
        channel = H4StreamChannel(fd: fd, isSocket: false, name: name)
    }

    /// The tty.
    public var fileDescriptor: Int32 { channel.fileDescriptor }
    /// Sends one packet with its H4 indicator.
    public func send(_ packet: HCIPacket) throws(BluetoothError) { try channel.send(packet) }
    /// The whole packets that arrived.
    public func receive() throws(BluetoothError) -> [HCIPacket] { try channel.receive() }
    /// Closes the port.
    public func close() { channel.close() }
}
