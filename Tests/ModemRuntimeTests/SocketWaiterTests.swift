import Foundation
import Glibc
import ModemRuntime
import Testing

/// The blocking side of the one descriptor loop: what driver threads (Bluetooth, the KISS server)
/// sleep on.
@Suite("SocketWaiter's sleeper")
struct SocketWaiterSleeperTests {
    private func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test("a readable descriptor ends the wait with its revents; only the ready one is marked")
    func readiness() {
        let (a, b) = socketPair()
        let (c, d) = socketPair()
        defer { for fd in [a, b, c, d] { close(fd) } }
        var byte: UInt8 = 7
        #expect(write(b, &byte, 1) == 1)
        var fds = [pollfd(fd: c, events: Int16(POLLIN), revents: 0), pollfd(fd: a, events: Int16(POLLIN), revents: 0)]
        let wake = SocketWaiter.Sleeper().wait(&fds, timeoutMilliseconds: 60_000)
        #expect(wake == .init(ready: 1, interrupted: false))
        #expect(fds[0].revents == 0)
        #expect(fds[1].revents & Int16(POLLIN) != 0)
    }

    @Test("nothing ready: the time passes (0 ms is a check, not a wait); block behaves as poll(2)")
    func timeout() {
        let (a, b) = socketPair()
        defer { close(a); close(b) }
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0)]
        #expect(SocketWaiter.Sleeper().wait(&fds, timeoutMilliseconds: 0) == .init(ready: 0, interrupted: false))
        #expect(SocketWaiter.shared.block(&fds, timeoutMilliseconds: 20) == 0)
        var out = [pollfd(fd: a, events: Int16(POLLOUT), revents: 0)]
        #expect(SocketWaiter.shared.block(&out, timeoutMilliseconds: 0) == 1)
    }

    @Test("an interrupt ends a wait under way, and one that came first ends the next wait at once, once")
    func interrupts() async {
        let (a, b) = socketPair()
        defer { close(a); close(b) }
        let sleeper = SocketWaiter.Sleeper()
        sleeper.interrupt()
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0)]
        #expect(sleeper.wait(&fds, timeoutMilliseconds: 60_000) == .init(ready: 0, interrupted: true))
        #expect(sleeper.wait(&fds, timeoutMilliseconds: 0) == .init(ready: 0, interrupted: false))
        // Another thread interrupts a thread that sleeps with no time limit.
        let ended = await withCheckedContinuation { (done: CheckedContinuation<SocketWaiter.Sleeper.Wake, Never>) in
            let thread = Thread {
                var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0)]
                done.resume(returning: sleeper.wait(&fds, timeoutMilliseconds: nil))
            }
            thread.start()
            sleeper.interrupt()
        }
        #expect(ended.interrupted)
        // The interrupted wait left nothing behind: data now wakes a fresh wait.
        var byte: UInt8 = 1
        #expect(write(b, &byte, 1) == 1)
        #expect(sleeper.wait(&fds, timeoutMilliseconds: 60_000) == .init(ready: 1, interrupted: false))
    }
}

/// The async side of the event loop: what tasks await.
@Suite("SocketWaiter's async wait")
struct SocketWaiterAsyncTests {
    private func pipePair() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        return (fds[0], fds[1])
    }

    @Test("data makes the wait ready; 0 ms with nothing there times out at once")
    func readyAndTimedOut() async {
        let p = pipePair()
        defer { close(p.read); close(p.write) }
        #expect(await SocketWaiter.shared.wait(fd: p.read, for: .readable, timeoutMilliseconds: 0) == .timedOut)
        var byte: UInt8 = 1
        #expect(write(p.write, &byte, 1) == 1)
        #expect(await SocketWaiter.shared.wait(fd: p.read, for: .readable, timeoutMilliseconds: 60_000) == .ready)
        #expect(await SocketWaiter.shared.wait(fd: p.write, for: .writable) == .ready)
    }

    @Test("a cancelled task's wait ends cancelled, with no time limit and nothing to read")
    func cancelled() async {
        let p = pipePair()
        defer { close(p.read); close(p.write) }
        let task = Task { await SocketWaiter.shared.wait(fd: p.read, for: .readable) }
        task.cancel()
        #expect(await task.value == .cancelled)
    }

    @Test("a block on no descriptors is a wait for the time alone (0: none)")
    func timeAlone() {
        var nothing: [pollfd] = []
        #expect(SocketWaiter.shared.block(&nothing, timeoutMilliseconds: 0) == 0)
        #expect(SocketWaiter.shared.block(&nothing, timeoutMilliseconds: 5) == 0)
    }
}
