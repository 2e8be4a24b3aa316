/// Bounds on unpacking a received folder (magic-wormhole sends folders as zip files), so that a zip
/// bomb stops at the first bound it passes: the whole archive is refused and nothing is left behind.
///
/// No size an archive declares is trusted: the declared sizes are checked against these bounds before
/// anything is written, and then every entry is inflated in 64 KiB pieces, written to its file as it
/// comes, and stopped the moment it makes more than it declared (it must make exactly that many
/// bytes, with a matching CRC-32). Memory use is a few 64 KiB buffers, whatever the archive says.
/// Each refusal names the bound it hit (``WormholeError`` of kind `.peer`).
public struct ZipLimits: Sendable, Equatable {
    /// The most entries (files and folders) one archive may hold. Default 65,535: the most a zip
    /// without zip64 can hold (this receiver reads no zip64).
    public var maximumEntries: Int
    /// The most bytes one file of the archive may unpack to. Default 16 GiB.
    public var maximumEntryBytes: UInt64
    /// The most bytes the whole archive may unpack to. Default 64 GiB; never more than the receive
    /// folder's file system has free, whatever this says.
    public var maximumTotalBytes: UInt64
    /// The most bytes the archive may unpack to per byte of the archive itself (over the whole
    /// archive, so entries that share their compressed data count too), beyond the first
    /// ``ratioAllowance`` bytes. Default 200 (deflate itself reaches about 1,032 on a file of one
    /// repeated byte: raise it to receive such folders).
    public var maximumRatio: UInt64
    /// Bytes any archive may unpack to whatever its ratio (1 MiB), so a small folder of very
    /// compressible files is never refused for its ratio.
    public static let ratioAllowance: UInt64 = 1 << 20

    /// Creates bounds; the defaults are safe for a receive from a stranger.
    /// - Parameters:
    ///   - maximumEntries: entries per archive, at least 1.
    ///   - maximumEntryBytes: bytes one file unpacks to.
    ///   - maximumTotalBytes: bytes the archive unpacks to.
    ///   - maximumRatio: unpacked bytes per archive byte, at least 1.
    public init(maximumEntries: Int = 65_535, maximumEntryBytes: UInt64 = 16 << 30, maximumTotalBytes: UInt64 = 64 << 30,
                maximumRatio: UInt64 = 200) {
        precondition(maximumEntries >= 1 && maximumRatio >= 1, "ZipLimits: at least one entry and a ratio of at least 1")
        self.maximumEntries = maximumEntries
        self.maximumEntryBytes = maximumEntryBytes
        self.maximumTotalBytes = maximumTotalBytes
        self.maximumRatio = maximumRatio
    }

    /// The most bytes an archive of `archiveBytes` bytes may unpack to by the ratio bound.
    public func ratioBound(archiveBytes: UInt64) -> UInt64 {
        let (product, overflow) = archiveBytes.multipliedReportingOverflow(by: maximumRatio)
        return overflow ? UInt64.max : max(Self.ratioAllowance, product)
    }
}
