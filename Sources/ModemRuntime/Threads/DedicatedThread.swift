#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A named thread of its own for a driver that owns one: a loop that blocks in its device's calls
/// (ALSA, a serial line, a pipe with no writer yet) or sleeps on the event loop through a
/// ``SocketWaiter/Sleeper`` (the Bluetooth host driver, the audio link driver). The one way code
/// outside ModemRuntime starts a thread; short blocking calls from async code go to
/// ``BlockingCalls`` instead.
///
/// The thread runs `body` once and ends; ``join()`` waits for that from another thread.
public final class DedicatedThread: Sendable {
    /// The thread's name, as debuggers and `top -H` show it.
    public let name: String
    private let finished = Mutex(false)
    private let condition = NSCondition()

    private init(name: String) { self.name = name }

    /// Starts a thread named `name` running `body`.
    /// - Returns: its handle, to ``join()`` it or ask ``isFinished``.
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> DedicatedThread {
        let handle = DedicatedThread(name: name)
        let thread = Thread {
            nameCallingThread(name)
            body()
            handle.markFinished()
        }
        thread.name = name
        thread.start()
        return handle
    }

    /// Whether `body` has returned.
    public var isFinished: Bool { finished.withLock { $0 } }

    /// Blocks the calling thread until `body` has returned (at once when it has). Never call it from
    /// the thread itself, nor from async code (it blocks a thread of the cooperative pool).
    @available(*, noasync, message: "blocks the thread; await a BlockingCalls.run { thread.join() } instead")
    public func join() {
        condition.lock()
        while !finished.withLock({ $0 }) { condition.wait() }
        condition.unlock()
    }

    /// Blocks the calling thread until `body` has returned or `seconds` passed.
    /// - Returns: whether it has returned.
    @available(*, noasync, message: "blocks the thread")
    public func join(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: max(0, seconds))
        condition.lock()
        defer { condition.unlock() }
        while !finished.withLock({ $0 }) {
            if !condition.wait(until: deadline) { return finished.withLock { $0 } }
        }
        return true
    }

    /// Gives the calling thread `name` in the kernel (its first 15 bytes), as `top -H`, `ps -L` and
    /// debuggers show it: Foundation's `Thread.name` does not reach the kernel on Linux, and a thread
    /// started from a pool thread would otherwise show the pool's name.
    private static func nameCallingThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    private func markFinished() {
        condition.lock()
        finished.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }
}
