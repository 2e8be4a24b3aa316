import ModemCrypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ModemRuntime

/// One file being received: `.part` and `.state` in `DIR/.modem-partial/`, written with `pwrite`,
/// hashed as written. The state file holds a header (`SMPART02`, size u64, block size u32, verified
/// blocks u32) and, per verified block, the chained hash (SHA-256 of the file up to that block's end).
/// Blocks arrive in order, so the verified blocks are always a prefix of the file.
final class IncomingFile {
    let size: UInt64
    let blockSize: Int
    let blocks: Int
    let name: String
    let originalName: String
    let started: Double
    private(set) var resumedBlocks = 0
    private(set) var nextBlock = 0
    private var offsetInBlock = 0
    private var hasher = SHA256Hasher()
    /// The chained hash of the verified prefix (32 zero bytes when empty): CH-HAVE's aggregate.
    private(set) var aggregate = [UInt8](repeating: 0, count: 32)
    private var partialDir: Int32 = -1
    private var partFd: Int32 = -1
    private var stateFd: Int32 = -1
    /// `<peer fingerprint>-<fileKey>`: the partial files' name without extension.
    let base: String
    /// `DIR/.modem-partial/<base>`, for messages.
    let partialPath: String
    private static let magic = Array("SMPART02".utf8)
    private static let header = 24

    static func now() -> Double { SystemTime.monotonicSeconds() }

    static func base(peerKey: [UInt8], fileKey: [UInt8]) -> String {
        Hex.encode(SHA256Hasher.hash(peerKey).prefix(8)) + "-" + Hex.encode(fileKey.prefix(16))
    }

    init(folder: ReceiveFolder, peerKey: [UInt8], fileKey: [UInt8], size: UInt64, blockSize: Int, name: String,
         originalName: String) throws(FolderError) {
        self.size = size
        self.blockSize = blockSize
        // Checked by DataConnections.incomingFileBlocks before: no addition that a peer's size could overflow.
        self.blocks = Int(size / UInt64(blockSize) + (size % UInt64(blockSize) == 0 ? 0 : 1))
        self.name = name
        self.originalName = originalName
        self.started = Self.now()
        self.base = Self.base(peerKey: peerKey, fileKey: fileKey)
        partialPath = "\(folder.path)/.modem-partial/\(base)"
        partialDir = try folder.partialFolder()
        partFd = openat(partialDir, base + ".part", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        stateFd = openat(partialDir, base + ".state", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard partFd >= 0, stateFd >= 0 else {
            let e = errno
            closeFiles()
            throw FolderError("cannot open the partial file \(folder.path)/.modem-partial/\(base)", code: e)
        }
        resume()
    }

    deinit { closeFiles() }

    func closeFiles() {
        if partFd >= 0 { close(partFd); partFd = -1 }
        if stateFd >= 0 { close(stateFd); stateFd = -1 }
        if partialDir >= 0 { close(partialDir); partialDir = -1 }
    }

    /// Bytes of verified blocks.
    var verifiedBytes: UInt64 { min(size, UInt64(nextBlock) * UInt64(blockSize)) }

    /// CH-HAVE's bitmap: the verified prefix.
    func bitmap() -> [UInt8] {
        var bits = [UInt8](repeating: 0, count: (blocks + 7) / 8)
        for i in 0..<nextBlock { bits[i / 8] |= 0x80 >> UInt8(i % 8) }
        return bits
    }

    private func blockLength(_ i: Int) -> Int {
        Int(min(UInt64(blockSize), size - UInt64(i) * UInt64(blockSize)))
    }

    /// Reads the state file and re-verifies the claimed blocks on disk; keeps the verified prefix.
    private func resume() {
        var head = [UInt8](repeating: 0, count: Self.header)
        var claimed = 0
        if pread(stateFd, &head, Self.header, 0) == Self.header, Array(head[0..<8]) == Self.magic {
            var r = DataByteReader(head)
            _ = r.take(8)
            if r.u64() == size, r.u32() == UInt32(blockSize), let n = r.u32() { claimed = min(Int(n), blocks) }
        }
        if claimed == 0 {
            _ = ftruncate(stateFd, 0)
            _ = ftruncate(partFd, 0)
            writeHeader(verified: 0)
            return
        }
        var buffer = [UInt8](repeating: 0, count: blockSize)
        var stored = [UInt8](repeating: 0, count: 32)
        var h = SHA256Hasher()
        var good = 0
        for i in 0..<claimed {
            let length = blockLength(i)
            guard readFully(partFd, &buffer, length, off_t(UInt64(i) * UInt64(blockSize))),
                  pread(stateFd, &stored, 32, off_t(Self.header + 32 * i)) == 32 else { break }
            var next = h
            buffer.withUnsafeBytes { next.update(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
            guard Array(next.finalize()) == stored else { break }
            h = next
            good = i + 1
            aggregate = stored
        }
        hasher = h
        nextBlock = good
        resumedBlocks = good
        writeHeader(verified: good)
    }

    private func readFully(_ fd: Int32, _ buffer: inout [UInt8], _ length: Int, _ offset: off_t) -> Bool {
        var done = 0
        while done < length {
            let r = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, length - done, offset + off_t(done)) }
            if r < 0, errno == EINTR { continue }
            if r <= 0 { return false }
            done += r
        }
        return true
    }

    private func writeHeader(verified: Int) {
        var w = DataByteWriter()
        w.bytes(Self.magic); w.u64(size); w.u32(UInt32(blockSize)); w.u32(UInt32(verified))
        _ = w.out.withUnsafeBytes { pwrite(stateFd, $0.baseAddress!, $0.count, 0) }
    }

    /// `detail`: the local cause of an `.ioError` (the path and errno), for the receiver's own report.
    enum WriteResult { case more, blockVerified, failed(DataReason, detail: String?) }

    /// Writes one DATA record's bytes; verifies the block when its last record arrives.
    func write(block: Int, offset: Int, last: Bool, hash: [UInt8]?, bytes: ArraySlice<UInt8>) -> WriteResult {
        if block == 0, offset == 0, nextBlock > 0, offsetInBlock == 0 {
            // The sender's copy differs from the blocks we claimed (CH-HAVE's aggregate did not match
            // there): it starts again from the beginning, and so do we.
            nextBlock = 0
            resumedBlocks = 0
            hasher = SHA256Hasher()
            aggregate = [UInt8](repeating: 0, count: 32)
            writeHeader(verified: 0)
        }
        guard block == nextBlock, block < blocks, offset == offsetInBlock,
              offset + bytes.count <= blockLength(block) else { return .failed(.protocolError, detail: nil) }
        let at = off_t(UInt64(block) * UInt64(blockSize)) + off_t(offset)
        let failure = bytes.withUnsafeBytes { raw -> Int32? in
            var done = 0
            while done < raw.count {
                let r = pwrite(partFd, raw.baseAddress! + done, raw.count - done, at + off_t(done))
                if r < 0, errno == EINTR { continue }
                if r < 0 { return errno }
                if r == 0 { return ENOSPC }
                done += r
            }
            hasher.update(bytes: raw)
            return nil
        }
        if let code = failure {
            return .failed(.ioError, detail: FolderError("cannot write \(partialPath).part", code: code).description)
        }
        offsetInBlock += bytes.count
        guard last else { return .more }
        guard offsetInBlock == blockLength(block), let hash else { return .failed(.protocolError, detail: nil) }
        let mine = Array(hasher.finalize())
        guard mine == hash else { return .failed(.hashMismatch, detail: nil) }
        _ = mine.withUnsafeBytes { pwrite(stateFd, $0.baseAddress!, 32, off_t(Self.header + 32 * block)) }
        nextBlock += 1
        offsetInBlock = 0
        aggregate = mine
        writeHeader(verified: nextBlock)
        return .blockVerified
    }

    /// `detail` as in ``WriteResult``.
    enum Finish { case success(String), failure(DataReason, detail: String?) }

    /// Checks the root (the whole file's SHA-256), then renames `.part` into the folder under a new
    /// name created with `O_EXCL | O_NOFOLLOW`, and removes the state file.
    func finish(root: [UInt8], into folder: ReceiveFolder) -> Finish {
        guard nextBlock == blocks, offsetInBlock == 0, Array(hasher.finalize()) == root else { return .failure(.hashMismatch, detail: nil) }
        let created: (fd: Int32, name: String)
        do throws(FolderError) { created = try folder.createNew(cleanedName: name) } catch {
            return .failure(.ioError, detail: error.description)
        }
        close(created.fd)
        if fchmod(partFd, 0o644) != 0 { /* keep 0600 */ }
        guard renameat(partialDir, base + ".part", folder.fd, created.name) == 0 else {
            let code = errno
            unlinkat(folder.fd, created.name, 0)
            return .failure(.ioError, detail: FolderError("cannot move \(partialPath).part to \(folder.path)/\(created.name)", code: code).description)
        }
        unlinkat(partialDir, base + ".state", 0)
        closeFiles()
        return .success(created.name)
    }
}
