import ArgumentParser

struct RxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rx", abstract: "TODO")
    func run() async throws {}
}
