/// Why the rendezvous server refused a request: sent to the client as the protocol's `error` message,
/// whose text is ``description``. The server's side of magic-wormhole (the client's failures are
/// `ModemWormhole`'s `WormholeError`). Callers decide by case; the words are for the client.
public enum RendezvousRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// A request not of the protocol: a missing or bad field, a request out of order or repeated on
    /// one connection. The text names it (the reference server's words where it has them).
    case badRequest(String)
    /// The nameplate is claimed by two other sides already, or the mailbox opened by two (`crowded`).
    case crowded
    /// A side claims again a nameplate it released (`reclaimed`).
    case reclaimed
    /// The mailbox to add to does not exist (`no such mailbox`).
    case noSuchMailbox
    /// One of the server's bounds in all (nameplates, mailboxes, bytes kept, addresses remembered);
    /// the text names it and says to try again later.
    case serverFull(String)
    /// One of the bounds per client address (nameplates, mailboxes or bytes held; allocations or
    /// claims per window); the text names it and what to do.
    case addressLimit(String)
    /// One of the bounds per mailbox (messages or bytes kept); the text names it.
    case mailboxFull(String)
    /// The server's database failed; the request may be tried again.
    case databaseFailed

    /// The protocol's `error` text.
    public var description: String {
        switch self {
        case .badRequest(let text), .serverFull(let text), .addressLimit(let text), .mailboxFull(let text): text
        case .crowded: "crowded"
        case .reclaimed: "reclaimed"
        case .noSuchMailbox: "no such mailbox"
        case .databaseFailed: "the server's database failed; try again"
        }
    }
}
