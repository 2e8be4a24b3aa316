import Foundation
import Synchronization
import ModemRuntime

/// The Communication API's `DeviceSearchListener`: told of each device a search finds, then that it ended.
public protocol DeviceSearchListener: AnyObject, Sendable {
    /// A device was found (Bluetooth: as soon as it answered the inquiry, again when its name came).
    func discoverOneDevice(_ device: DeviceInfo)
    /// The search ended.
    func discoverComplete()
}

/// The Communication API's `CommunicationManagerBase`: one entry point over both channels: a manager by channel,
/// and a device search over the audio jack and Bluetooth.
public enum CommunicationManagerBase {
    /// A manager for `channel` (the Communication API's `sharedInstance(channel)`, minus the singleton).
    /// - Parameters:
    ///   - channel: audio jack or Bluetooth.
    ///   - configuration: the protocol parameters; nil picks the channel's default (audio: 1200 baud
    ///     with 0.3 s of latency; Bluetooth: ``ModemLinkProtocol/LinkConfiguration/byteStream(mode:)``).
    ///   - audioDevice: the ALSA device for the audio jack.
    ///   - bluetooth: the controller for Bluetooth (nil: the kernel's, through BlueZ's sockets).
    public static func manager(for channel: DeviceCommunicationChannel, configuration: LinkConfiguration? = nil,
                               audioDevice: String = "default", bluetooth: HCITransportFactory? = nil) -> any CommunicationManager {
        switch channel {
        case .audioJack:
            return AudioJackManager.alsa(device: audioDevice, configuration: configuration ?? LinkConfiguration(latencySeconds: 0.3))
        case .bluetooth:
            return BluetoothManager(configuration: configuration ?? .byteStream(mode: .masterSlave), transport: bluetooth)
        }
    }

    /// The Communication API's `searchDevices`: starts a search and returns at once; devices go to `listener`
    /// (Bluetooth ones first, from an inquiry of `timeout` seconds, then audio-jack devices that
    /// answer a handshake), then `discoverComplete`.
    /// - Returns: 0 the search started; -1 no Bluetooth; -2 Bluetooth not powered; -3 the discovery
    ///   could not start. Audio-jack search alone always returns 0.
    @discardableResult
    public static func searchDevices(listener: any DeviceSearchListener, detectAudioDevice: Bool, detectBluetooth: Bool,
                                     timeout: Double, bluetooth: HCITransportFactory? = nil) -> Int32 {
        var transport: (any HCITransport)?
        var kernel = false
        if detectBluetooth {
            do throws(BluetoothError) {
                if let bluetooth {
                    transport = try bluetooth()
                } else {
                    try BlueZ.adapter()   // at once: no kernel Bluetooth or adapter (-1), adapter down (-2)
                    kernel = true
                }
            } catch {
                switch error {
                case .notPowered: return -2
                case .noBluetooth, .transportClosed: return -1
                default: return -3
                }
            }
        }
        let seconds = min(60, max(1, timeout))
        let opened = transport
        let useKernel = kernel
        DedicatedThread.start(name: "modem-device-search") {
            let found: @Sendable (DiscoveredDevice) -> Void = { device in
                listener.discoverOneDevice(DeviceInfo(name: device.name, identifier: device.address.description, channel: .bluetooth))
            }
            if let opened {
                _ = try? BluetoothScan.run(transport: opened, seconds: seconds, onFound: found)
            } else if useKernel {
                _ = try? BlueZ.scan(seconds: seconds, onFound: found)
            }
            if detectAudioDevice {
                // This thread of the search's own waits; the probes run as tasks.
                BlockingHandoff<Void>.run {
                    _ = await AudioJackManager.searchDevices(found: { listener.discoverOneDevice($0) })
                }
            }
            listener.discoverComplete()
        }
        return 0
    }
}
