#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime
import Synchronization

/// The thread under a driver (``HostDriver``, the BlueZ phone driver): one named thread of the
/// runtime (``DedicatedThread``), a queue of calls from other threads that wake it, a stop flag, a
/// monotonic clock, and a wait for the thread's end. The thread sleeps on its descriptor through the
/// runtime's event loop (``SocketWaiter``); what it does is the driver's.
final class DriverThread<Request: Sendable>: Sendable {
    private let name: String
    private let requests = Mutex<[Request]>([])
    private let stopFlag = Atomic<Bool>(false)
    private let sleeper = SocketWaiter.Sleeper()
    private let thread = Mutex<DedicatedThread?>(nil)
    private let clock = Stopwatch()

    init(name: String) {
        self.name = name
    }

    /// Seconds since the thread's driver was created.
    var now: Double { clock.seconds }

    /// Whether a stop was asked for.
    var stopRequested: Bool { stopFlag.load(ordering: .relaxed) }

    /// Starts the thread running `body` (once; later calls do nothing).
    func start(_ body: @escaping @Sendable () -> Void) {
        thread.withLock { t in
            guard t == nil else { return }
            t = DedicatedThread.start(name: name, body)
        }
    }

    /// Queues a call for the thread and wakes it.
    func enqueue(_ request: Request) {
        requests.withLock { $0.append(request) }
        wake()
    }

    /// The calls queued since the last take (on the thread).
    func takeRequests() -> [Request] {
        requests.withLock { r in defer { r.removeAll() }; return r }
    }

    /// Asks the thread to stop without waiting (also from the thread itself).
    func requestStop() {
        stopFlag.store(true, ordering: .relaxed)
        wake()
    }

    /// Asks the thread to stop and waits until it has ended.
    func stop() {
        requestStop()
        waitUntilStopped()
    }

    /// Waits until the thread has ended (returns at once when it never started).
    func waitUntilStopped() {
        thread.withLock { $0 }?.join()
    }

    /// Waits (on the thread) until `fd` is readable, a call or stop arrives, or `milliseconds` pass.
    /// - Returns: whether `fd` is readable.
    func wait(for fd: Int32, milliseconds: Int32) -> Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        return sleeper.wait(&fds, timeoutMilliseconds: Int(max(0, milliseconds))).ready > 0
    }

    private func wake() {
        sleeper.interrupt()
    }
}
