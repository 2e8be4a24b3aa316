// swift-tools-version:6.1
import PackageDescription

/// Which part to build (see the end of this file): "modem", "hub", or unset for the whole package.
let buildPart = Context.environment["SWIFTMODEM_BUILD"] ?? ""

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
        .library(name: "ModemRuntime", targets: ["ModemRuntime"]),
        .library(name: "ModemSockets", targets: ["ModemSockets"]),
        .library(name: "ModemTransport", targets: ["ModemTransport"]),
        .library(name: "ModemMessaging", targets: ["ModemMessaging"]),
        .library(name: "ModemWormhole", targets: ["ModemWormhole"]),
        // The hub (docs/hub-plan.md): built only when asked for (`swift build --product modem-hub`).
        .executable(name: "modem-hub", targets: ["modem-hub"]),
        // Seed 003's API client and seed 001's groups client for the hub (AsyncHTTPClient, WebSocket).
        .library(name: "HubClient", targets: ["HubClient"]),
        // The fuzz targets' registry, for the libFuzzer package in Fuzz/ (docs/fuzzing.md).
        .library(name: "ModemFuzzTargets", targets: ["ModemFuzzTargets"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // Tests only: a manual clock for protocol timers.
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.0.0"),
        // Tests only: the one process runner of the tests (ProcessTestSupport), in both halves.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
    ] + (buildPart == "modem" ? [] : [
        // The hub only (never a dependency of `modem` or the Modem* libraries; a layering test checks).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Already in the graph under the above; named here because the hub's targets import them.
        // 2.101.3: the transit relay takes a paired socket's descriptor (withUnsafeTransportIfAvailable).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.3.0"),
        // The hub in production: metrics (swift-metrics' API, Prometheus text at /metrics) and
        // `serve --config FILE` in TOML.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ]),
    targets: [
        // C libraries, found by pkg-config.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // OpenSSL's libssl: TLS for the wormhole client's wss:// (ModemWormhole's TLS/ folder only).
        .systemLibrary(name: "CLibSSL", pkgConfig: "libssl", providers: [.apt(["libssl-dev"])]),
        // X25519, ChaCha20-Poly1305, SHA-256, HMAC/HKDF on the system's libsodium; AES-256-GCM on its
        // OpenSSL libcrypto. Nothing to compile: both come from apt.
        .target(name: "ModemCrypto", dependencies: ["CSodium", "CLibCrypto"]),

        // Layers, bottom to top (docs/ARCHITECTURE.md).
        // The base every layer may import: how to wait and keep time (the one event loop, the blocking-call
        // facility, signals, clocks and the deterministic simulation), its lock, and the shared small pieces.
        .target(name: "ModemRuntime"),
        .target(name: "ModemDSP", dependencies: ["ModemRuntime", "CFFTW"]),
        .target(name: "ModemCodecs", dependencies: ["ModemRuntime"]),
        .target(name: "ModemAudio", dependencies: ["ModemRuntime", "CALSA", "CSndFile"]),
        .target(name: "ModemPipelines", dependencies: ["ModemRuntime", "ModemDSP", "ModemCodecs", "ModemAudio"]),
        .target(name: "ModemTNC", dependencies: ["ModemRuntime", "ModemPipelines", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemSockets"]),
        .target(name: "ModemPlot", dependencies: ["ModemRuntime", "ModemDSP", "ModemAudio", "CZlib"]),
        .target(name: "ModemLinkProtocol", dependencies: ["ModemRuntime", "ModemCodecs"]),
        // LinkTransport: a MessageTransport over the channel protocol's duplex messages, whatever carries
        // the frames (audio in ModemLink, RFCOMM in ModemBluetooth); never DSP, audio or Bluetooth.
        .target(name: "ModemLinkTransport", dependencies: ["ModemRuntime", "ModemLinkProtocol", "ModemCodecs", "ModemTransport"]),
        .target(name: "ModemLink", dependencies: ["ModemRuntime", "ModemLinkProtocol", "ModemLinkTransport", "ModemPipelines", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemTransport"]),
        // Bluetooth Classic: our own host stack (HCI, GAP, L2CAP, SDP, RFCOMM) and BlueZ sockets; never DSP or audio.
        .target(name: "ModemBluetooth", dependencies: ["ModemRuntime", "ModemLinkProtocol", "ModemLinkTransport", "ModemTransport", "ModemSockets"]),
        // POSIX TCP wrapped once (listen, accept, connect), waiting on the runtime's event loop; shared by
        // the KISS server, messaging, the wormhole client and H4 over TCP.
        .target(name: "ModemSockets", dependencies: ["ModemRuntime"]),
        // The seam between messaging sessions and the lines that carry their frames (TCP, the channel
        // protocol over audio or RFCOMM): MessageTransport and its errors, nothing else.
        .target(name: "ModemTransport"),
        // Messaging over any link: keys, Noise sessions, pairing, mailbox, data connections; never DSP or audio.
        .target(
            name: "ModemMessaging",
            dependencies: ["ModemRuntime", "ModemTransport", "ModemCodecs", "ModemSockets", "ModemCrypto"]
        ),
        // magic-wormhole's client: SPAKE2, the rendezvous (mailbox) client on our own WebSocket client,
        // key derivation, transit, the file-transfer protocol, and sessions by code (no SwiftNIO); wss://
        // on the system's libssl.
        .target(
            name: "ModemWormhole",
            dependencies: ["ModemRuntime", "ModemMessaging", "ModemTransport", "ModemSockets", "ModemCrypto", "CZlib", "CLibSSL"]
        ),
        // transfer-test: two messaging ends over ModemLink's in-memory medium in channel time, cuts, counters.
        .target(name: "ModemMessagingHarness", dependencies: ["ModemRuntime", "ModemMessaging", "ModemTransport", "ModemLink", "ModemDSP", "ModemCrypto"]),
        .target(
            name: "SwiftModem",
            dependencies: [
                "ModemRuntime", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemPipelines", "ModemTNC", "ModemPlot", "ModemLinkProtocol",
                "ModemLinkTransport", "ModemLink", "ModemBluetooth", "ModemSockets", "ModemTransport", "ModemMessaging", "ModemWormhole",
            ]
        ),
        .executableTarget(
            name: "modem",
            dependencies: [
                "SwiftModem",
                // The layers it names in its own imports (the umbrella re-exports them too).
                "ModemRuntime", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemLink", "ModemBluetooth", "ModemTransport",
                "ModemMessaging", "ModemWormhole", "ModemMessagingHarness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),

        // The hub: pure values, storage (SQLite default, PostgreSQL for several nodes), the HTTP/WebSocket server.
        .target(name: "HubCore", dependencies: ["ModemCrypto"]),
        .target(
            name: "HubStore",
            dependencies: [
                "HubCore", "ModemRuntime",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // splice(2), epoll and eventfd for the transit relay (Swift's Glibc module lacks them); stubs elsewhere.
        .target(name: "CHubSplice"),
        .target(
            name: "HubServer",
            dependencies: [
                "HubCore", "HubStore", "ModemRuntime", "CHubSplice",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The OpenAPI document, compiled in (`PackageResources.openapi_yaml`): the file is a link to
            // docs/openapi.yaml, the one copy, so the binary serves it without a resource bundle beside it.
            resources: [.embedInCode("OpenAPI/openapi.yaml")]
        ),
        // The hub's clients: HTTP on AsyncHTTPClient, the groups socket on HummingbirdWSClient.
        .target(
            name: "HubClient",
            dependencies: [
                "ModemRuntime",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "modem-hub",
            dependencies: [
                "HubCore", "HubStore", "HubServer", "HubClient", "ModemRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // The process's one metrics bootstrap (the registry /metrics renders) and --config's TOML.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),

        // Tests: one target per layer, the CLI as a process, and what the tests share.
        // Loaded into every test process: SIGPIPE ignored before any test runs (Tests/CTestSignals/signals.c).
        .target(name: "CTestSignals", path: "Tests/CTestSignals"),
        // Child processes for the tests of both halves, on swift-subprocess: run to completion or in the background.
        .target(
            name: "ProcessTestSupport",
            dependencies: [.product(name: "Subprocess", package: "swift-subprocess"),
                           .product(name: "SystemPackage", package: "swift-system")],
            path: "Tests/ProcessTestSupport"
        ),
        .target(
            name: "ModemTestSupport",
            dependencies: ["ModemRuntime", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemPipelines", "CTestSignals", "ProcessTestSupport"],
            path: "Tests/ModemTestSupport"
        ),
        .testTarget(name: "ModemDSPTests", dependencies: ["ModemDSP", "ModemRuntime", "ModemTestSupport"]),
        .testTarget(name: "ModemCodecsTests", dependencies: ["ModemCodecs", "ModemRuntime", "ModemTestSupport"]),
        .testTarget(name: "ModemAudioTests", dependencies: ["ModemAudio", "CSndFile", "ModemTestSupport", "ProcessTestSupport"]),
        .testTarget(
            name: "ModemPipelinesTests",
            dependencies: ["ModemPipelines", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemTestSupport"]
        ),
        .testTarget(
            name: "ModemTNCTests",
            dependencies: ["ModemTNC", "ModemRuntime", "ModemPipelines", "ModemDSP", "ModemCodecs", "ModemAudio", "ModemTestSupport",
                           .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(name: "ModemPlotTests", dependencies: ["ModemPlot", "ModemDSP", "CZlib", "ProcessTestSupport"]),
        .testTarget(
            name: "ModemLinkTests",
            dependencies: ["ModemLink", "ModemRuntime", "ModemCodecs", "ModemAudio", "ModemDSP", "ModemTestSupport",
                           "ModemMessaging", "ModemMessagingHarness", "ModemTransport", "ModemPipelines"]
        ),
        .testTarget(name: "ModemBluetoothTests", dependencies: ["ModemBluetooth", "ModemLinkProtocol", "ModemLinkTransport", "ModemTransport", "ModemTestSupport", "ProcessTestSupport"]),
        .testTarget(
            name: "ModemMessagingTests",
            dependencies: ["ModemMessaging", "ModemRuntime", "ModemTransport", "ModemSockets", "ProcessTestSupport",
                           "ModemCrypto", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(name: "ModemCLITests", dependencies: ["ModemTestSupport", "ProcessTestSupport"]),
        // The runtime base (event loop, blocking calls, threads, atomic files, the shared small pieces),
        // TCP, the crypto primitives and the channel protocol's transport-neutral half, each on its own.
        .testTarget(name: "ModemRuntimeTests", dependencies: ["ModemRuntime"]),
        .testTarget(name: "ModemSocketsTests", dependencies: ["ModemSockets", "ModemRuntime"]),
        .testTarget(name: "ModemCryptoTests", dependencies: ["ModemCrypto", "ModemRuntime"]),
        .testTarget(name: "ModemLinkProtocolTests", dependencies: ["ModemLinkProtocol", "ModemCodecs", "ModemRuntime", "ModemTestSupport"]),
        .testTarget(name: "ModemWormholeTests", dependencies: ["ModemWormhole", "ModemRuntime", "ModemCrypto", "ProcessTestSupport"]),
        .testTarget(
            name: "HubTests",
            dependencies: ["HubCore", "HubStore", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "HubServerTests",
            dependencies: [
                "HubCore", "HubStore", "HubServer", "HubTestSupport", "ProcessTestSupport", "ModemRuntime",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The whole hub in the test process on a free port, codes and clocks for tests, processes.
        .target(
            name: "HubTestSupport",
            dependencies: [
                "HubCore", "HubStore", "HubServer", "ProcessTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/HubTestSupport"
        ),
        .testTarget(
            name: "HubClientTests",
            dependencies: ["HubClient", "HubTestSupport", "ProcessTestSupport", "ModemRuntime",
                           // A stand-in hub that upgrades and then stays silent (the client's timers).
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket")]
        ),

        // Fuzz targets: every parser of outside bytes, as a registry name -> input -> parse (Fuzz/ runs them
        // under libFuzzer); never HubServer/HubStore (too slow to build with sanitizers).
        .target(
            name: "ModemFuzzTargets",
            dependencies: ["ModemRuntime", "ModemCodecs", "ModemAudio", "ModemTNC", "ModemBluetooth", "ModemMessaging", "ModemWormhole", "ModemCrypto", "HubCore"]
        ),
        // Replays the seed corpora and the kept crash inputs (Fixtures/fuzz) through every target, and
        // runs every target on seeded mutations of its seeds (the test command's fuzzing smoke).
        .testTarget(name: "ModemFuzzTargetsTests", dependencies: ["ModemFuzzTargets", "ModemRuntime", "ModemDSP"]),
    ],
    swiftLanguageModes: [.v6]
)

// Two halves for the test command (scripts/test.sh), each in its own build folder: the modem's layers
// and tests, built in release (the DSP must run at the speed users get), and the hub's, built in debug
// (their tests exercise protocols, not speed, and a release build of SwiftNIO, Hummingbird, PostgresNIO
// and AsyncHTTPClient costs several minutes more on two cores). Unset (users, `swift build`, the
// checks): the whole package. The hub depends on nothing of the modem's but `ModemCrypto`.
let hubTargets: Set<String> = [
    "CHubSplice", "HubStore", "HubServer", "HubClient", "modem-hub", "HubTestSupport", "HubTests", "HubServerTests", "HubClientTests",
]
let hubProducts: Set<String> = ["modem-hub", "HubClient"]
switch buildPart {
case "modem":
    package.targets.removeAll { hubTargets.contains($0.name) }
    package.products.removeAll { hubProducts.contains($0.name) }
case "hub":
    let keep = hubTargets.union(["HubCore", "ModemRuntime", "ModemCrypto", "CSodium", "CLibCrypto", "ProcessTestSupport"])
    package.targets.removeAll { !keep.contains($0.name) }
    package.products.removeAll { !hubProducts.contains($0.name) }
case "", "all":
    break
case let other:
    fatalError("SWIFTMODEM_BUILD is 'modem', 'hub' or unset, not '\(other)'")
}
