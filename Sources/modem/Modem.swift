import ArgumentParser
import SwiftModem

@main
struct Modem: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modem",
        abstract: "A software FSK modem: moves bytes over sound, in files or through a sound card.",
        discussion: helpText("""
        Examples:
          echo hello | modem tx --baud 1200 --out hello.wav
          modem rx --baud 1200 hello.wav
          modem analyze hello.wav --png hello.png
          modem devices
        """),
        version: SwiftModemVersion.string,
        subcommands: [TxCommand.self, RxCommand.self, AnalyzeCommand.self, DevicesCommand.self, ImpairCommand.self, TNCCommand.self,
                      LinkTestCommand.self, DeviceCommand.self, BTCommand.self, KeysCommand.self, PairCommand.self,
                      MailboxCommand.self, SendCommand.self, ReceiveCommand.self, TransferTestCommand.self, HubCommand.self]
    )
}
