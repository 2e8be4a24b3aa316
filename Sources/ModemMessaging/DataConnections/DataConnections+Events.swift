/// ``DataConnections``' events: a bounded queue read by one consumer as an `AsyncSequence`.
extension DataConnections {
    // MARK: events

    /// The events, in order, for one consumer. Ends after ``DataEvent/sessionEnded(_:)``.
    public nonisolated var events: Events { Events(owner: self) }

    /// An `AsyncSequence` of ``DataEvent``.
    public struct Events: AsyncSequence, Sendable {
        let owner: DataConnections
        public typealias Element = DataEvent
        public struct AsyncIterator: AsyncIteratorProtocol {
            let owner: DataConnections
            public mutating func next() async -> DataEvent? { await owner.nextEvent() }
        }
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(owner: owner) }
    }

    func nextEvent() async -> DataEvent? {
        if eventHead < eventQueue.count {
            let e = eventQueue[eventHead]
            eventHead += 1
            if eventHead > 64, eventHead * 2 > eventQueue.count {
                eventQueue.removeFirst(eventHead); eventHead = 0
            }
            if !eventSpaceWaiters.isEmpty { eventSpaceWaiters.removeFirst().resume() }
            if let w = loopSpaceWaiter, eventQueue.count - eventHead < maximumUnreadEvents { loopSpaceWaiter = nil; w.resume() }
            return e
        }
        if eventsFinished { return nil }
        return await withCheckedContinuation { eventReader = $0 }
    }

    /// Queues an event. Data-bearing events wait for room (back-pressure reaches the peer through the
    /// session); control events never wait (the loop stops reading the session instead while
    /// `maximumUnreadEvents` are unread); progress is dropped when many events are unread.
    func emit(_ event: DataEvent, wait: Bool = false) async {
        if let r = eventReader {
            eventReader = nil
            r.resume(returning: event)
            return
        }
        let unread = eventQueue.count - eventHead
        if case .progress = event, unread >= eventCapacity { return }
        if case .peerProgress = event, unread >= eventCapacity { return }
        if wait {
            while eventQueue.count - eventHead >= eventCapacity, !eventsFinished {
                await withCheckedContinuation { eventSpaceWaiters.append($0) }
            }
            if let r = eventReader {
                eventReader = nil
                r.resume(returning: event)
                return
            }
        }
        eventQueue.append(event)
    }

    func finishEvents() {
        eventsFinished = true
        if let r = eventReader { eventReader = nil; r.resume(returning: nil) }
        for w in eventSpaceWaiters { w.resume() }
        eventSpaceWaiters.removeAll()
        loopSpaceWaiter?.resume()
        loopSpaceWaiter = nil
    }
}

extension DataConnections {
    /// Events queued and not yet read (for tests and diagnostics).
    var unreadEvents: Int { eventQueue.count - eventHead }
    /// True while the loop waits for the application to read events before it reads the session again.
    var readingPaused: Bool { loopSpaceWaiter != nil }
}
