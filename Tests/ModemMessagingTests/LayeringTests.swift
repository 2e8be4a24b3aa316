import Foundation
import Testing

/// ModemMessaging stands on the link layer's abstractions, never on DSP, audio or pipelines: a
/// session must run over TCP, a link or (later) a hub relay without pulling in a sound card.
@Test("ModemMessaging imports no DSP, audio, pipeline or ModemLink module")
func messagingLayering() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let folder = root.appendingPathComponent("Sources/ModemMessaging")
    let forbidden = ["ModemDSP", "ModemAudio", "ModemPipelines", "ModemLink", "ModemTNC", "ModemBluetooth", "CALSA"]
    let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }
        .filter { $0.hasSuffix(".swift") }
    #expect(!files.isEmpty)
    for file in files {
        let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.contains(" import ") {
            let module = line.split(separator: " ").last.map(String.init) ?? ""
            #expect(!forbidden.contains(module), "\(file) imports \(module)")
        }
    }
}
