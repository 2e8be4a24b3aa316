// swift-tools-version:6.1
// libFuzzer for SwiftModem's parsers: one executable, `modem-fuzz`, whose target is chosen by the
// environment variable MODEM_FUZZ_TARGET (a name from ModemFuzzTargets' registry). Built only with
// sanitizers, by scripts/fuzz.sh:
//
//   swift build --package-path Fuzz --scratch-path .build-fuzz \
//     -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
//
// See docs/fuzzing.md.
import PackageDescription

// SwiftPM names a path dependency after its folder, not after its manifest's `name:`, so the
// root package is "main" in one clone and "swiftmodem" in another: take the folder's name.
let root: String = {
    let parts = "\(#filePath)".split(separator: "/")   // .../<root>/Fuzz/Package.swift
    return parts.count >= 3 ? parts[parts.count - 3].lowercased() : "swiftmodem"
}()

let package = Package(
    name: "SwiftModemFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
    ],
    targets: [
        // libFuzzer's LLVMFuzzerRunDriver, declared for Swift.
        .target(name: "CFuzzerDriver"),
        .executableTarget(
            name: "modem-fuzz",
            dependencies: ["CFuzzerDriver", .product(name: "ModemFuzzTargets", package: root)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
