#if canImport(Glibc)
import Glibc

/// The kernel's Bluetooth (BlueZ sockets), the way down when no `--hci` is given.
public enum BlueZ {
    /// Checks at once, without waiting on any device, that this machine has kernel Bluetooth and
    /// adapter `hci<device>`: opens a raw HCI socket and binds it to the adapter. Throws
    /// `.noBluetooth(BlueZSocket.noKernelSupportMessage)` on a kernel without `AF_BLUETOOTH`
    /// (EAFNOSUPPORT) and `.noBluetooth("no Bluetooth adapter")` when the adapter does not exist (ENODEV).
    public static func probe(device: UInt16 = 0) throws(BluetoothError) {
        _ = try BlueZSocket.rawHCI(device: device)
    }
}
#endif
