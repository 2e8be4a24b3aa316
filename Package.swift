// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "SwiftModem",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "modem", targets: ["modem"]),
        .library(name: "SwiftModem", targets: ["SwiftModem"]),
        .library(name: "ModemDSP", targets: ["ModemDSP"]),
        .library(name: "ModemCodecs", targets: ["ModemCodecs"]),
        .library(name: "ModemAudio", targets: ["ModemAudio"]),
        .library(name: "ModemLink", targets: ["ModemLink"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
    ],
    targets: [
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .target(name: "ModemDSP", dependencies: ["CFFTW"]),
        .target(name: "ModemCodecs"),
        .target(name: "ModemAudio", dependencies: ["CALSA", "CSndFile"]),
        .target(name: "SwiftModem", dependencies: ["ModemDSP", "ModemCodecs", "ModemAudio"]),
        .target(name: "ModemLink", dependencies: ["SwiftModem", "ModemDSP", "ModemCodecs", "ModemAudio"]),
        .executableTarget(
            name: "modem",
            dependencies: [
                "SwiftModem", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemLink",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .testTarget(name: "ModemDSPTests", dependencies: ["ModemDSP"]),
        .testTarget(name: "ModemCodecsTests", dependencies: ["ModemCodecs"]),
        .testTarget(name: "ModemAudioTests", dependencies: ["ModemAudio"]),
        .testTarget(name: "SwiftModemTests", dependencies: ["SwiftModem"]),
        .testTarget(name: "ModemLinkTests", dependencies: ["ModemLink", "ModemCodecs"]),
        .testTarget(name: "ModemCLITests", dependencies: ["SwiftModem"]),
    ],
    swiftLanguageModes: [.v6]
)
