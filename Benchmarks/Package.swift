// swift-tools-version:6.1
// Benchmarks for SwiftModem, kept in their own package so that the library's users never
// resolve the benchmark dependencies.
//
//   swift package --package-path Benchmarks --scratch-path Benchmarks/.build benchmark
//   swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build ber-curve --quick
//
// See README.md beside this file.
import PackageDescription

// SwiftPM names a path dependency after its folder, not after its manifest's `name:`, so the
// root package is "main" in one clone and "swiftmodem" in another: take the folder's name.
let root: String = {
    let parts = "\(#filePath)".split(separator: "/")   // .../<root>/Benchmarks/Package.swift
    return parts.count >= 3 ? parts[parts.count - 3].lowercased() : "swiftmodem"
}()

let package = Package(
    name: "SwiftModemBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // package-benchmark suite: modulator and demodulator throughput and allocations; the Bluetooth
        // host stack's cost per MB of RFCOMM payload.
        .executableTarget(
            name: "ModemBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ModemDSP", package: root),
                .product(name: "ModemBluetooth", package: root),
            ],
            path: "Benchmarks/ModemBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        // Bit error rate against Eb/N0, with the theory for non-coherent binary FSK, as a table and a PNG.
        .executableTarget(
            name: "ber-curve",
            dependencies: [
                .product(name: "ModemDSP", package: root),
                .product(name: "SwiftModem", package: root),
            ],
            path: "Sources/ber-curve"
        ),
        // The line charts the pictures share.
        .target(
            name: "BenchPlot",
            dependencies: [.product(name: "ModemPlot", package: root)],
            path: "Sources/BenchPlot"
        ),
        // The channel protocol's completions and goodput against SNR, with FEC off, auto and on; table and PNG.
        .executableTarget(
            name: "link-snr",
            dependencies: [
                "BenchPlot",
                .product(name: "ModemLink", package: root),
                .product(name: "ModemLinkProtocol", package: root),
                .product(name: "ModemPlot", package: root),
            ],
            path: "Sources/link-snr"
        ),
        // Rate against SNR of ours (OFDM, FSK) and amodem from scripts/bench-rate.py's CSV: a PNG.
        .executableTarget(
            name: "rate-plot",
            dependencies: ["BenchPlot", .product(name: "ModemPlot", package: root)],
            path: "Sources/rate-plot"
        ),
    ],
    swiftLanguageModes: [.v6]
)
