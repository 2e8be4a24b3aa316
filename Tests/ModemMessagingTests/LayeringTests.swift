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

/// A library must not change process-wide settings behind its user's back: the allocator's
/// thresholds (`mallopt`, found through `dlsym` since Glibc does not export it) belong to the
/// application. Sessions reuse their buffers instead (Benchmarks/README.md, "Messaging: buffers
/// instead of allocator settings").
@Test("ModemMessaging changes no process-wide allocator settings (no mallopt, no dlsym)")
func noProcessWideAllocatorSettings() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let folder = root.appendingPathComponent("Sources/ModemMessaging")
    let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }
        .filter { $0.hasSuffix(".swift") }
    #expect(!files.isEmpty)
    for file in files {
        let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
        for call in ["mallopt", "dlsym", "M_TRIM_THRESHOLD", "M_MMAP_THRESHOLD"] {
            let uses = text.contains(call)
            #expect(!uses, "\(file) uses \(call)")
        }
    }
}
