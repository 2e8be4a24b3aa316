#if canImport(Glibc)
import Glibc
#endif

/// The `modem` program's own allocator settings for bulk transfers (`send`, `receive`): the library
/// never changes process-wide settings, the program may. glibc's default trim threshold hands freed
/// memory back to the kernel and faults it in again for every large record (1 GiB over loopback:
/// system time 1.1-2.2 s instead of 0.45 s, Benchmarks/README.md); keeping up to 4 MiB free per arena
/// and serving blocks up to 2 MiB from the arena (not a fresh `mmap` each) avoids it.
enum AllocatorTuning {
    /// Applies the settings once per process.
    static let applied: Bool = {
        #if canImport(Glibc)
        // mallopt(M_TRIM_THRESHOLD = -1 / M_MMAP_THRESHOLD = -3, ...) from <malloc.h>, which the Glibc
        // module does not export.
        typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
            let mallopt = unsafeBitCast(symbol, to: MallOpt.self)
            _ = mallopt(-1, 4 << 20)
            _ = mallopt(-3, 2 << 20)
        }
        #endif
        return true
    }()
}
