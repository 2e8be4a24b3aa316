// swift-tools-version:6.1
import PackageDescription

// Linux is the target (ALSA, libsndfile and FFTW through pkg-config); the code also needs Swift 6's
// Synchronization module (Mutex, Atomic), which on Apple systems means macOS 15 or later.
let package = Package(
    name: "SwiftModem",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "modem", targets: ["modem"]),
        // The umbrella: one import for everything below.
        .library(name: "SwiftModem", targets: ["SwiftModem"]),
        // Each layer on its own, for users who want to depend on less.
        .library(name: "ModemDSP", targets: ["ModemDSP"]),
        .library(name: "ModemCodecs", targets: ["ModemCodecs"]),
        .library(name: "ModemAudio", targets: ["ModemAudio"]),
        .library(name: "ModemPipelines", targets: ["ModemPipelines"]),
        .library(name: "ModemTNC", targets: ["ModemTNC"]),
        .library(name: "ModemPlot", targets: ["ModemPlot"]),
        .library(name: "ModemLinkProtocol", targets: ["ModemLinkProtocol"]),
        .library(name: "ModemLinkTransport", targets: ["ModemLinkTransport"]),
        .library(name: "ModemLink", targets: ["ModemLink"]),
        .library(name: "ModemBluetooth", targets: ["ModemBluetooth"]),
        .library(name: "ModemSockets", targets: ["ModemSockets"]),
        .library(name: "ModemMessaging", targets: ["ModemMessaging"]),
        // The hub (docs/hub-plan.md): built only when asked for (`swift build --product modem-hub`).
        .executable(name: "modem-hub", targets: ["modem-hub"]),
        // Seed 003's API client and seed 001's groups client for the hub (AsyncHTTPClient, WebSocket).
        .library(name: "HubClient", targets: ["HubClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // X25519, ChaChaPoly, SHA-256, HKDF/HMAC for the messaging sessions (BoringSSL underneath).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        // The hub only (never a dependency of `modem` or the Modem* libraries; a layering test checks).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // C libraries, found by pkg-config.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // Layers, bottom to top (docs/ARCHITECTURE.md).
        .target(name: "ModemDSP", dependencies: ["CFFTW"]),
        .target(name: "ModemCodecs"),
        .target(name: "ModemAudio", dependencies: ["CALSA", "CSndFile"]),
        .target(name: "ModemPipelines", dependencies: ["ModemDSP", "ModemCodecs", "ModemAudio"]),
        .target(name: "ModemTNC", dependencies: ["ModemPipelines", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemSockets"]),
        .target(name: "ModemPlot", dependencies: ["ModemDSP", "ModemAudio", "CZlib"]),
        .target(name: "ModemLinkProtocol", dependencies: ["ModemCodecs"]),
        // LinkTransport: a MessageTransport over the channel protocol's duplex messages, whatever carries
        // the frames (audio in ModemLink, RFCOMM in ModemBluetooth); never DSP, audio or Bluetooth.
        .target(name: "ModemLinkTransport", dependencies: ["ModemLinkProtocol", "ModemCodecs", "ModemMessaging"]),
        .target(name: "ModemLink", dependencies: ["ModemLinkProtocol", "ModemLinkTransport", "ModemPipelines", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemMessaging"]),
        // Bluetooth Classic: our own host stack (HCI, GAP, L2CAP, SDP, RFCOMM) and BlueZ sockets; never DSP or audio.
        .target(name: "ModemBluetooth", dependencies: ["ModemLinkProtocol", "ModemLinkTransport", "ModemMessaging", "ModemCodecs"]),
        // POSIX TCP wrapped once (listen, accept, connect, poll), shared by the KISS server and messaging.
        .target(name: "ModemSockets"),
        // Messaging over any link: keys, Noise sessions, pairing, mailbox, data connections; never DSP or audio.
        .target(
            name: "ModemMessaging",
            dependencies: ["ModemLinkProtocol", "ModemCodecs", "ModemSockets", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // transfer-test: two messaging ends over ModemLink's in-memory medium in channel time, cuts, counters.
        .target(name: "ModemMessagingHarness", dependencies: ["ModemMessaging", "ModemLink", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "SwiftModem",
            dependencies: [
                "ModemDSP", "ModemCodecs", "ModemAudio", "ModemPipelines", "ModemTNC", "ModemPlot", "ModemLinkProtocol", "ModemLinkTransport", "ModemLink",
                "ModemBluetooth", "ModemSockets", "ModemMessaging",
            ]
        ),
        .executableTarget(
            name: "modem",
            dependencies: [
                "SwiftModem",
                "ModemMessagingHarness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),

        // The hub: pure values, storage (SQLite default, PostgreSQL for several nodes), the HTTP/WebSocket server.
        .target(name: "HubCore", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "HubStore",
            dependencies: [
                "HubCore",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "HubServer",
            dependencies: [
                "HubCore", "HubStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The hub's clients: HTTP on AsyncHTTPClient, the groups socket on HummingbirdWSClient.
        .target(
            name: "HubClient",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "modem-hub",
            dependencies: [
                "HubCore", "HubStore", "HubServer", "HubClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Tests: one target per layer, the CLI as a process, and what the tests share.
        // Loaded into every test process: SIGPIPE ignored before any test runs (Tests/CTestSignals/signals.c).
        .target(name: "CTestSignals", path: "Tests/CTestSignals"),
        .target(
            name: "ModemTestSupport",
            dependencies: ["ModemDSP", "ModemCodecs", "ModemAudio", "ModemPipelines", "CTestSignals"],
            path: "Tests/ModemTestSupport"
        ),
        .testTarget(name: "ModemDSPTests", dependencies: ["ModemDSP", "ModemTestSupport"]),
        .testTarget(name: "ModemCodecsTests", dependencies: ["ModemCodecs", "ModemTestSupport"]),
        .testTarget(name: "ModemAudioTests", dependencies: ["ModemAudio", "ModemTestSupport"]),
        .testTarget(
            name: "ModemPipelinesTests",
            dependencies: ["ModemPipelines", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemTestSupport"]
        ),
        .testTarget(
            name: "ModemTNCTests",
            dependencies: ["ModemTNC", "ModemPipelines", "ModemCodecs", "ModemAudio", "ModemTestSupport"]
        ),
        .testTarget(name: "ModemPlotTests", dependencies: ["ModemPlot", "ModemDSP", "CZlib", "ModemTestSupport"]),
        .testTarget(
            name: "ModemLinkTests",
            dependencies: ["ModemLink", "ModemPipelines", "ModemCodecs", "ModemAudio", "ModemDSP", "ModemTestSupport",
                           "ModemMessaging", "ModemMessagingHarness"]
        ),
        .testTarget(name: "ModemBluetoothTests", dependencies: ["ModemBluetooth", "ModemLinkProtocol", "ModemLinkTransport", "ModemMessaging", "ModemCodecs", "ModemTestSupport"]),
        .testTarget(
            name: "ModemMessagingTests",
            dependencies: ["ModemMessaging", "ModemLinkProtocol", "ModemSockets", "ModemTestSupport",
                           .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "ModemCLITests", dependencies: ["ModemTestSupport"]),
        .testTarget(
            name: "HubTests",
            dependencies: ["HubCore", "HubStore", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "HubServerTests",
            dependencies: [
                "HubCore", "HubStore", "HubServer", "HubTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSTesting", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The whole hub in the test process on a free port, codes and clocks for tests, processes.
        .target(
            name: "HubTestSupport",
            dependencies: [
                "HubCore", "HubStore", "HubServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/HubTestSupport"
        ),
        .testTarget(name: "HubClientTests", dependencies: ["HubClient", "HubTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
