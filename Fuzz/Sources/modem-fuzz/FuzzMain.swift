// The libFuzzer entry points, compiled with -parse-as-library. On Linux SwiftPM links an executable
// target with its `main` renamed to `modem_fuzz_main`, so that is defined here and runs libFuzzer's
// driver; where it is not renamed, libFuzzer's own `main` runs and this function is unused.
import CFuzzerDriver
import ModemFuzzTargets
#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to standard error.
func printError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// The target named by MODEM_FUZZ_TARGET, found once.
let selectedTarget: FuzzTarget = {
    guard let name = getenv("MODEM_FUZZ_TARGET").map({ String(cString: $0) }) else {
        printError("modem-fuzz: set MODEM_FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: " "))\n")
        exit(2)
    }
    guard let target = FuzzTargets.named(name) else {
        printError("modem-fuzz: no target '\(name)'; there are: \(FuzzTargets.all.map(\.name).joined(separator: " "))\n")
        exit(2)
    }
    return target
}()

/// Writes every target's seeds under `folder`/<target>/, for scripts/fuzz.sh --make-seeds.
func writeSeeds(to folder: String) -> Int32 {
    for target in FuzzTargets.all {
        let dir = "\(folder)/\(target.name)"
        mkdir(dir, 0o755)
        for seed in target.seeds() {
            guard let file = fopen("\(dir)/\(seed.name)", "wb") else {
                printError("modem-fuzz: cannot write \(dir)/\(seed.name)\n")
                return 1
            }
            _ = seed.bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            fclose(file)
        }
    }
    return 0
}

/// Called once by libFuzzer before any input: picks the target (or writes the seeds and exits).
@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>?,
                             _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    if let folder = getenv("MODEM_FUZZ_WRITE_SEEDS") {
        exit(writeSeeds(to: String(cString: folder)))
    }
    _ = selectedTarget
    return 0
}

/// Called by libFuzzer for each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    selectedTarget.run(bytes)
    return 0
}

/// The executable's entry point as SwiftPM names it on Linux: runs libFuzzer with the arguments.
@_cdecl("modem_fuzz_main")
public func modemFuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) }
}
