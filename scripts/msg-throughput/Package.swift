// swift-tools-version:6.1
// Throughput of a NoiseSession over loopback TCP (scripts/bench-msg.sh builds and runs it in release).
import PackageDescription

// SwiftPM names a path dependency after its folder: take the repository folder's name.
let root: String = {
    let parts = "\(#filePath)".split(separator: "/")   // .../<root>/scripts/msg-throughput/Package.swift
    return parts.count >= 4 ? parts[parts.count - 4].lowercased() : "swiftmodem"
}()

let package = Package(
    name: "MsgThroughput",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(name: "msg-throughput", dependencies: [.product(name: "ModemMessaging", package: root)]),
    ],
    swiftLanguageModes: [.v6]
)
