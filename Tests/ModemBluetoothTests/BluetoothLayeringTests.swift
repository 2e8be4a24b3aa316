import Foundation
import Testing

/// Which modules a source folder imports (every `import X` line of its Swift files).
private func imports(of folder: String) throws -> [(file: String, module: String)] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let base = root.appendingPathComponent(folder)
    let files = try #require(FileManager.default.enumerator(atPath: base.path)).compactMap { $0 as? String }
        .filter { $0.hasSuffix(".swift") }
    #expect(!files.isEmpty, "no Swift files in \(folder)")
    var out: [(String, String)] = []
    for file in files {
        let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.hasPrefix("@_exported import ") {
            out.append((file, line.split(separator: " ").last.map(String.init) ?? ""))
        }
    }
    return out
}

@Test("ModemBluetooth and ModemLinkTransport import no ModemLink, DSP, audio, pipeline or messaging module; only the transport seam")
func bluetoothLayering() throws {
    let audio = ["ModemLink", "ModemDSP", "ModemAudio", "ModemPipelines", "ModemTNC", "CALSA", "SwiftModem",
                 "ModemMessaging", "ModemCrypto"]
    for (file, module) in try imports(of: "Sources/ModemBluetooth") {
        #expect(!audio.contains(module), "ModemBluetooth/\(file) imports \(module)")
    }
    let imported = try imports(of: "Sources/ModemLinkTransport")
    #expect(imported.contains { $0.module == "ModemTransport" })
    for (file, module) in imported {
        #expect(!(audio + ["ModemBluetooth"]).contains(module), "ModemLinkTransport/\(file) imports \(module)")
    }
}
