import ArgumentParser

struct TxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "tx", abstract: "TODO")
    func run() async throws {}
}
