import CHubSplice
import Foundation
import Logging
import ModemRuntime
import NIOCore
import Synchronization

/// close(2), by a name no type here shadows.
func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}

/// A pipe of the splicer: one direction of a pair passes through it inside the kernel.
struct SplicePipe: Sendable {
    /// The end bytes are spliced out of, and the end they are spliced into.
    let read: Int32, write: Int32
    /// Its size in bytes (the kernel's default, 64 KiB, until a bulk transfer grows it).
    let capacity: Int

    /// A non-blocking pipe of the default size, or nil (no descriptors left, or not Linux).
    static func make() -> SplicePipe? {
        var fds: [Int32] = [-1, -1]
        var capacity: Int32 = 0
        guard chub_pipe(&fds, 0, &capacity) == 0 else { return nil }
        return SplicePipe(read: fds[0], write: fds[1], capacity: Int(capacity))
    }

    func close() {
        closeDescriptor(read)
        closeDescriptor(write)
    }
}

/// A joined pair whose sockets left SwiftNIO, for the splicer: from now on it owns the descriptors.
struct SplicedPair: Sendable {
    /// The pair's two sockets (non-blocking).
    var sockets: (Int32, Int32)
    /// `pipes.0` carries what `sockets.0` sends to `sockets.1`; `pipes.1` the other way.
    var pipes: (SplicePipe, SplicePipe)
    /// Written to each socket before anything relayed to it: `ok\n` and what its peer sent early.
    var greetings: ([UInt8], [UInt8])
    /// Nanoseconds the pair may stay silent both ways before both are closed.
    var idleTimeout: UInt64
    /// Bytes read from either end, to be passed on (called on the splicer's thread).
    var relayed: @Sendable (Int) -> Void
    /// The pair was closed as idle (called before `ended`).
    var idleClosed: @Sendable () -> Void
    /// The pair ended and its descriptors are closed (once).
    var ended: @Sendable () -> Void

    /// Closes every descriptor and reports the end (a pair the splicer never took).
    func discard() {
        closeDescriptor(sockets.0)
        closeDescriptor(sockets.1)
        pipes.0.close()
        pipes.1.close()
        ended()
    }
}

/// Relays the transit relay's joined pairs inside the kernel: each direction is spliced (splice(2)) from
/// its sender's socket into a pipe and from the pipe into its receiver's socket, so the bytes are never
/// copied through the hub's memory. A few threads (``threadCount``) each wait on an epoll instance of
/// their own (edge-triggered) for the sockets of the pairs given to them, in turn. Backpressure as
/// before: a direction reads its sender again only once its pipe is empty, so a receiver that does not
/// read stops its sender (the kernel's socket buffers and one pipe hold what is in flight). A sender's FIN
/// is passed on (`shutdown(SHUT_WR)`) after its last byte; the pair ends when both have sent theirs, or
/// when either socket fails (what the pipes still hold for the other is written first when it can be at
/// once), or when neither end sent anything for the idle timeout, or when the splicer stops.
final class TransitSplicer: Sendable {
    private let loops: [SpliceLoop]
    private let next = Atomic<UInt>(0)

    /// Threads for the hub's processors: one per two, at most four (splicing is mostly the kernel's
    /// TCP work, charged to the thread that calls it).
    static var threadCount: Int { max(1, min(4, ProcessInfo.processInfo.activeProcessorCount / 2)) }

    /// Starts `threads` loops; nil when the system has no splice(2) or epoll (not Linux) or no
    /// descriptors for them.
    init?(threads: Int = TransitSplicer.threadCount, logger: Logger) {
        var loops: [SpliceLoop] = []
        for i in 0..<max(1, threads) {
            guard let loop = SpliceLoop(logger: logger) else {
                for l in loops { l.stop() }
                return nil
            }
            loop.start(name: "transit-splice-\(i)")
            loops.append(loop)
        }
        self.loops = loops
    }

    /// Relays `pair` until it ends; after ``stop()`` closes it at once.
    func add(_ pair: SplicedPair) {
        let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
        if !loops[Int(i % UInt(loops.count))].add(pair) { pair.discard() }
    }

    /// Closes every pair, and returns once the threads have ended.
    func stop() async {
        for l in loops { l.stop() }
        let loops = self.loops
        await BlockingCalls.run { for l in loops { l.join() } }
    }
}

/// One thread of the splicer and its epoll instance.
final class SpliceLoop: Sendable {
    private struct Inbox {
        var pairs: [SplicedPair] = []
        var stopping = false
    }

    private let epoll: Int32
    private let wakeup: Int32
    private let inbox = Mutex(Inbox())
    private let thread = Mutex<DedicatedThread?>(nil)
    private let logger: Logger
    /// The token of the wakeup descriptor (a pair's sockets have `number << 1 | side`, numbers from 1).
    private static let wakeupToken: UInt64 = 0

    init?(logger: Logger) {
        self.logger = logger
        epoll = chub_epoll_create()
        guard epoll >= 0 else { return nil }
        wakeup = chub_eventfd()
        guard wakeup >= 0 else {
            closeDescriptor(epoll)
            return nil
        }
        guard chub_epoll_add_wakeup(epoll, wakeup, Self.wakeupToken) == 0 else {
            closeDescriptor(epoll)
            closeDescriptor(wakeup)
            return nil
        }
    }

    func start(name: String) {
        let t = DedicatedThread.start(name: name) { [self] in run() }
        thread.withLock { $0 = t }
    }

    /// Hands `pair` to the thread; false once stopping (the caller closes it).
    func add(_ pair: SplicedPair) -> Bool {
        inbox.withLock { box in
            guard !box.stopping else { return false }
            box.pairs.append(pair)
            // Under the lock: the thread closes the eventfd only after it saw `stopping`.
            _ = chub_eventfd_signal(wakeup)
            return true
        }
    }

    /// Asks the thread to close its pairs and end.
    func stop() {
        inbox.withLock { box in
            guard !box.stopping else { return }
            box.stopping = true
            _ = chub_eventfd_signal(wakeup)
        }
    }

    @available(*, noasync)
    func join() {
        thread.withLock { $0 }?.join()
    }

    private static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds }

    private func run() {
        // splice(2) into a socket whose peer is gone raises SIGPIPE (it has no MSG_NOSIGNAL): blocked on
        // this thread, the call fails with EPIPE instead, whatever the rest of the process does with it.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var pairs: [UInt64: SpliceState] = [:]
        var nextNumber: UInt64 = 1
        var tokens = [UInt64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        // When the next pair may have been idle for its timeout.
        var nextIdleCheck = UInt64.max
        var stopping = false

        func end(_ number: UInt64, idle: Bool = false) {
            guard let p = pairs.removeValue(forKey: number) else { return }
            for fd in [p.sockets.0, p.sockets.1] { _ = chub_epoll_remove(epoll, fd) }
            p.close(idle: idle)
        }

        while !stopping {
            var timeout: Int32 = -1
            if nextIdleCheck != .max {
                let now = Self.now()
                timeout = nextIdleCheck <= now ? 0 : Int32(clamping: (nextIdleCheck - now + 999_999) / 1_000_000)
            }
            let n = tokens.withUnsafeMutableBufferPointer { t in
                events.withUnsafeMutableBufferPointer { e in chub_epoll_wait(epoll, t.baseAddress, e.baseAddress, Int32(t.count), timeout) }
            }
            if n < 0 {
                if errno == EINTR { continue }
                logger.error("transit splicer: epoll_wait failed (errno \(errno)); closing its pairs")
                break
            }
            let now = Self.now()
            for i in 0..<Int(n) {
                let token = tokens[i]
                if token == Self.wakeupToken {
                    chub_eventfd_drain(wakeup)
                    let (arrived, stop) = inbox.withLock { box -> ([SplicedPair], Bool) in
                        defer { box.pairs.removeAll() }
                        return (box.pairs, box.stopping)
                    }
                    for pair in arrived {
                        let number = nextNumber
                        nextNumber += 1
                        let p = SpliceState(pair, now: now)
                        guard chub_epoll_add(epoll, pair.sockets.0, number << 1) == 0,
                              chub_epoll_add(epoll, pair.sockets.1, number << 1 | 1) == 0 else {
                            logger.warning("transit splicer: epoll_ctl failed (errno \(errno)); pair closed")
                            for fd in [pair.sockets.0, pair.sockets.1] { _ = chub_epoll_remove(epoll, fd) }
                            p.close(idle: false)
                            continue
                        }
                        pairs[number] = p
                        nextIdleCheck = min(nextIdleCheck, now &+ pair.idleTimeout)
                        // Greetings go out, and whatever the sockets already hold moves, at once.
                        p.pump(now: now)
                        if p.isFinished { end(number) }
                    }
                    if stop { stopping = true }
                    continue
                }
                let number = token >> 1
                guard let p = pairs[number] else { continue }
                p.note(events[i], side: Int(token & 1))
                p.pump(now: now)
                if p.isFinished { end(number) }
            }
            if now >= nextIdleCheck {
                nextIdleCheck = .max
                for (number, p) in pairs {
                    let deadline = p.lastActivity &+ p.idleTimeout
                    if deadline <= now { end(number, idle: true) } else { nextIdleCheck = min(nextIdleCheck, deadline) }
                }
            }
        }
        // Stopping (or epoll failed): every pair closed, and the pairs that came meanwhile.
        for number in Array(pairs.keys) { end(number) }
        let late = inbox.withLock { box -> [SplicedPair] in
            box.stopping = true
            defer { box.pairs.removeAll() }
            return box.pairs
        }
        for pair in late { pair.discard() }
        closeDescriptor(epoll)
        closeDescriptor(wakeup)
    }
}

/// A pair on its splicer thread (never leaves it).
private final class SpliceState {
    /// One direction: from a sender's socket through a pipe to the other socket.
    final class Direction {
        let from: Int32, to: Int32
        let pipe: SplicePipe
        var capacity: Int
        /// Written to `to` before anything spliced (the greeting), and how much of it is written.
        var first: [UInt8]
        var firstWritten = 0
        /// Bytes in the pipe.
        var inPipe = 0
        /// `from` sent its FIN; `to` was given it (`shutdown(SHUT_WR)`).
        var ended = false, passedOn = false
        /// The last splice filled the pipe: it grows before the next.
        var grow = false

        init(from: Int32, to: Int32, pipe: SplicePipe, first: [UInt8]) {
            self.from = from
            self.to = to
            self.pipe = pipe
            capacity = pipe.capacity
            self.first = first
        }

        var isDone: Bool { passedOn }
    }

    /// A pipe grows to this once a splice fills it (a bulk transfer): fewer, larger moves.
    static let bulkPipeSize: Int32 = 1 << 20

    let sockets: (Int32, Int32)
    let idleTimeout: UInt64
    private let pair: SplicedPair
    private let directions: [Direction]
    /// Whether each socket may read or write without blocking (until a call says EAGAIN; set again by
    /// its next edge).
    private var readable = [true, true], writable = [true, true]
    private var failed = false
    /// When either end last sent bytes (`NIODeadline` uptime nanoseconds).
    private(set) var lastActivity: UInt64

    init(_ pair: SplicedPair, now: UInt64) {
        self.pair = pair
        sockets = pair.sockets
        idleTimeout = pair.idleTimeout
        lastActivity = now
        directions = [Direction(from: pair.sockets.0, to: pair.sockets.1, pipe: pair.pipes.0, first: pair.greetings.1),
                      Direction(from: pair.sockets.1, to: pair.sockets.0, pipe: pair.pipes.1, first: pair.greetings.0)]
    }

    /// Both FINs passed on, or a socket failed.
    var isFinished: Bool { failed || directions.allSatisfy(\.isDone) }

    /// An edge on socket `side`.
    func note(_ events: UInt32, side: Int) {
        if events & UInt32(CHUB_READABLE) != 0 { readable[side] = true }
        if events & UInt32(CHUB_WRITABLE) != 0 { writable[side] = true }
        if events & UInt32(CHUB_ERROR | CHUB_HANGUP) != 0 {
            // The next call on it says what happened.
            readable[side] = true
            writable[side] = true
            if events & UInt32(CHUB_ERROR) != 0, socketError(side == 0 ? sockets.0 : sockets.1) { failed = true }
        }
    }

    /// Moves what can move now, both ways.
    func pump(now: UInt64) {
        for (i, d) in directions.enumerated() where !failed {
            if !step(d, fromSide: i, toSide: 1 - i, now: now) { failed = true }
        }
    }

    /// One direction as far as it goes without blocking: the greeting, then the pipe out, then the
    /// sender read into the empty pipe; its FIN passed on once the pipe is empty.
    /// - Returns: false when a socket failed.
    private func step(_ d: Direction, fromSide: Int, toSide: Int, now: UInt64) -> Bool {
        while true {
            if d.firstWritten < d.first.count {
                guard writable[toSide] else { return true }
                let n = d.first.withUnsafeBytes { b in write(d.to, b.baseAddress! + d.firstWritten, b.count - d.firstWritten) }
                if n > 0 {
                    d.firstWritten += n
                    if d.firstWritten == d.first.count {
                        d.first = []
                        d.firstWritten = 0
                    }
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && errno == EAGAIN { writable[toSide] = false; return true }
                return false
            }
            if d.inPipe > 0 {
                guard writable[toSide] else { return true }
                let n = chub_splice(d.pipe.read, d.to, d.inPipe)
                if n > 0 { d.inPipe -= n; continue }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && errno == EAGAIN { writable[toSide] = false; return true }
                return false
            }
            if d.ended {
                if !d.passedOn {
                    d.passedOn = true
                    // The sender's FIN, after its last byte.
                    _ = shutdown(d.to, Int32(SHUT_WR))
                }
                return true
            }
            guard readable[fromSide] else { return true }
            if d.grow {
                // Resized while empty (a pipe never shrinks below what it holds).
                d.grow = false
                let c = chub_pipe_resize(d.pipe.write, Self.bulkPipeSize)
                if c > 0 { d.capacity = Int(c) }
            }
            let n = chub_splice(d.from, d.pipe.write, d.capacity)
            if n > 0 {
                d.inPipe = n
                lastActivity = now
                // Counted before they go out (a receiver that has them sees them counted).
                pair.relayed(n)
                // Full: a bulk transfer, fewer and larger moves from now on (when the kernel allows).
                if n == d.capacity && d.capacity < Int(Self.bulkPipeSize) { d.grow = true }
                continue
            }
            if n == 0 { d.ended = true; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN { readable[fromSide] = false; return true }
            return false
        }
    }

    private func socketError(_ fd: Int32) -> Bool {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0
    }

    /// Closes both sockets and pipes (after a failure, what the pipes hold for a live socket is written
    /// first when it can be at once) and reports the end.
    func close(idle: Bool) {
        if failed {
            for d in directions where d.firstWritten < d.first.count || d.inPipe > 0 {
                if d.firstWritten < d.first.count {
                    _ = d.first.withUnsafeBytes { b in write(d.to, b.baseAddress! + d.firstWritten, b.count - d.firstWritten) }
                }
                while d.inPipe > 0 {
                    let n = chub_splice(d.pipe.read, d.to, d.inPipe)
                    guard n > 0 else { break }
                    d.inPipe -= n
                }
            }
        }
        if idle { pair.idleClosed() }
        pair.discard()
    }
}
