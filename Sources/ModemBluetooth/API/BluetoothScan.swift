import Foundation
import Synchronization

/// A device found by an inquiry.
public struct DiscoveredDevice: Sendable, Hashable {
    /// Its address.
    public var address: BDAddress
    /// Its name (from the extended inquiry response or a remote name request), nil when it gave none.
    public var name: String?
    /// Creates a description.
    public init(address: BDAddress, name: String?) {
        self.address = address
        self.name = name
    }
}

/// Runs an inquiry with names on our own host stack: `BluetoothScan.run(transport:seconds:)` resets
/// the controller, inquires for `seconds`, asks each device without a name for it, and returns
/// every device found (in the order they answered).
public final class BluetoothScan: HostClient {
    private let seconds: Double
    private let onFound: @Sendable (DiscoveredDevice) -> Void
    private var devices: [DiscoveredDevice] = []
    private var failure: String?
    private weak var driver: HostDriver?
    private let outcome = Mutex<Result<[DiscoveredDevice], BluetoothError>?>(nil)
    private let isInterrupted: @Sendable () -> Bool

    private init(seconds: Double, onFound: @escaping @Sendable (DiscoveredDevice) -> Void, isInterrupted: @escaping @Sendable () -> Bool) {
        self.seconds = seconds
        self.onFound = onFound
        self.isInterrupted = isInterrupted
    }

    /// Scans through a controller (blocking the calling thread).
    /// - Parameters:
    ///   - transport: the controller.
    ///   - seconds: how long the inquiry runs (names are asked afterwards, up to 5 s each).
    ///   - gap: controller options (ACL overrides and such); the role is always central.
    ///   - onFound: called (on the host's thread) when a device or its name is first heard.
    ///   - isInterrupted: polled; true ends the scan early with what was found.
    /// - Returns: the devices found.
    /// - Throws: ``BluetoothError`` when the controller could not be used or the inquiry failed.
    public static func run(transport: any HCITransport, seconds: Double, gap: GAPConfiguration = GAPConfiguration(role: .central),
                           onFound: @escaping @Sendable (DiscoveredDevice) -> Void = { _ in },
                           isInterrupted: @escaping @Sendable () -> Bool = { false }) throws(BluetoothError) -> [DiscoveredDevice] {
        var gap = gap
        gap.role = .central
        let scan = BluetoothScan(seconds: seconds, onFound: onFound, isInterrupted: isInterrupted)
        let driver = HostDriver(transport: transport, stack: HostStack(configuration: HostConfiguration(gap: gap)), client: scan)
        scan.driver = driver
        driver.start()
        driver.waitUntilStopped()
        switch scan.outcome.withLock({ $0 }) {
        case .success(let devices)?: return devices
        case .failure(let error)?: throw error
        case nil: throw .unknown("the scan ended without a result")
        }
    }

    public func host(_ stack: inout HostStack, did action: HostAction, now: Double) -> [HostAction] {
        switch action {
        case .ready:
            return stack.inquire(seconds: seconds, now: now)
        case .failed(let reason):
            finish(.failure(.noBluetooth(reason)))
        case .found(let address, let name):
            if let i = devices.firstIndex(where: { $0.address == address }) {
                if devices[i].name == nil, let name {
                    devices[i].name = name
                    onFound(devices[i])
                }
            } else {
                devices.append(DiscoveredDevice(address: address, name: name))
                onFound(devices[devices.count - 1])
            }
        case .inquiryComplete(let failure):
            if let failure { finish(.failure(.unknown("the inquiry failed: \(failure)"))) } else { finish(.success(devices)) }
        default:
            break
        }
        return []
    }

    public func host(_ stack: inout HostStack, tick now: Double) -> [HostAction] {
        if isInterrupted() { finish(.success(devices)) }
        return []
    }

    public func hostStopped(failure: String?) {
        if let failure { finish(.failure(.transportClosed(failure))) }
    }

    private func finish(_ result: Result<[DiscoveredDevice], BluetoothError>) {
        let first = outcome.withLock { o -> Bool in
            guard o == nil else { return false }
            o = result
            return true
        }
        if first { driver?.requestStop() }
    }
}
