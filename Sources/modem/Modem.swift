import ArgumentParser
import SwiftModem

@main
struct Modem: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modem",
        abstract: "A software modem: moves bytes over sound (FSK, packet radio, OFDM up to 200 kbit/s) and Bluetooth, with encrypted messaging on top.",
        discussion: helpText("""
        Files and sound cards: tx and rx (FSK with the RTTY, Bell, V.21, V.23 and G3RUH profiles or any rate and tones, AX.25 and FX.25 packets, OFDM), analyze, impair, devices, tnc (a KISS TNC). The channel protocol: link-test, device, bt. Messaging between trusted keys: keys, pair (by sound), mailbox, send and receive (over TCP, audio, Bluetooth or a magic-wormhole code), transfer-test. The hub: hub.
        Examples:
          echo hello | modem tx --baud 1200 --out hello.wav
          modem rx --baud 1200 hello.wav
          modem tx --profile ofdm --out fast.wav file.bin && modem rx --profile ofdm fast.wav > copy.bin
          modem analyze hello.wav --png hello.png
          modem devices
        """),
        version: SwiftModemVersion.string,
        subcommands: [TxCommand.self, RxCommand.self, AnalyzeCommand.self, DevicesCommand.self, ImpairCommand.self, TNCCommand.self, AX25Command.self,
                      LinkTestCommand.self, DeviceCommand.self, BTCommand.self, KeysCommand.self, PairCommand.self,
                      MailboxCommand.self, SendCommand.self, ReceiveCommand.self, TransferTestCommand.self, HubCommand.self]
    )
}
