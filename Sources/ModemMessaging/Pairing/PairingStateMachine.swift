import ModemCrypto

/// Which end of a pairing.
public enum PairingRole: Sendable, Hashable {
    /// Plays the token (`--announce`).
    case announcer
    /// Listens for a token and answers it.
    case listener
}

/// Why a pairing ended without a pair.
public enum PairingFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing of a pairing was heard before the time ran out.
    case noPairingHeard
    /// Two pairings were heard at once (or someone else's message in ours): nothing is trusted.
    case ambiguous
    /// A pairing started but did not complete in time.
    case incomplete

    public var description: String {
        switch self {
        case .noPairingHeard: return "no pairing heard"
        case .ambiguous: return "ambiguous, pair again"
        case .incomplete: return "pairing did not complete"
        }
    }
}

/// What the driver of a ``PairingStateMachine`` does.
public enum PairingAction: Sendable, Hashable {
    /// Transmit these bytes (one pairing message) on the shared line.
    case play([UInt8])
    /// Drop what was queued for transmission and has not started playing.
    case cancelQueued
    /// Add the peer's key to the trusted keys. `suggestedName` is what the peer claimed when that is a
    /// valid label, else `paired-CODE`: only a suggestion, since the peer chose it. The driver picks
    /// the local name (``KeyStore/trustPaired(claimedName:publicKey:fallback:)`` keeps a key's existing
    /// name and never gives a name that another key holds).
    case trust(suggestedName: String, publicKey: [UInt8])
    /// The pairing succeeded: show this 6-digit code.
    case paired(code: String)
    /// The pairing ended without a pair.
    case failed(PairingFailure)
}

/// Timers of a pairing, in seconds of the line's clock.
public struct PairingTiming: Sendable, Hashable {
    /// A token or P2 is played again when nothing answered it this long after it ended.
    public var resendSeconds: Double
    /// The announcer waits this long after the first answer (P1) for a second listener's answer.
    public var collectSeconds: Double
    /// The listener holds its verdict this long after sending P3: it answers a repeated P2 and hears
    /// the aborts of an end that saw a second pairing. (The announcer, once it heard P3, holds its own
    /// verdict half a resend interval and 0.5 s, until such an abort would have been heard.)
    public var holdSeconds: Double
    /// An end that found the pairing ambiguous keeps playing aborts until the line has carried no
    /// pairing message for this long.
    public var abortLingerSeconds: Double

    /// Creates timers.
    public init(resendSeconds: Double, collectSeconds: Double, holdSeconds: Double, abortLingerSeconds: Double) {
        precondition(resendSeconds > 0 && collectSeconds >= 0 && holdSeconds >= 0 && abortLingerSeconds >= 0)
        self.resendSeconds = resendSeconds
        self.collectSeconds = collectSeconds
        self.holdSeconds = holdSeconds
        self.abortLingerSeconds = abortLingerSeconds
    }

    /// Timers for an audio line: the longest answer (about 110 bytes with its link frame) at `baud`,
    /// the demodulator's decision delay (256 bit times) and the path's latency both ways.
    public static func audio(baud: Double, latencySeconds: Double) -> PairingTiming {
        let roundTrip = 2 * latencySeconds + 2 * 256 / baud + 110 * 8 * 1.05 / baud + 0.3
        return PairingTiming(resendSeconds: roundTrip, collectSeconds: 0.1, holdSeconds: 2 * roundTrip + 0.5,
                             abortLingerSeconds: roundTrip + 1)
    }
}

/// Pairing by sound as a pure state machine (`docs/messaging-plan.md` section 4): the announcer plays a
/// token committing to its public key; a listener answers (P1: its key and a nonce); the announcer
/// opens its commitment (P2, with MAC_A); the listener checks the commitment and MAC_A and proves
/// itself (P3, MAC_B). Both then trust each other and show the same 6-digit code.
///
/// The token commits to every field of P2 (key, opening, name, session), and P1 is sent before P2
/// opens it, so no input of the code is left free once the other end's random bytes are known: a
/// man in the middle, pairing with each end separately, gets equal codes with a chance of one in the
/// code space (10^6), not by trying names until the codes match.
///
/// Both ends share one line and hear themselves: a message this end played is recognised by its bytes
/// and ignored. Anything that shows a second pairing (another token, a second listener's answer,
/// someone else's message in our session, an abort) makes the pairing ambiguous: the end trusts
/// nothing, plays aborts for a while (so the others stop too) and fails with
/// ``PairingFailure/ambiguous``. It never pairs with a key it cannot tie to the token it heard.
///
/// Aborts must be heard even by ends busy finishing their own pairing, so an aborting end does not
/// answer a message the moment it hears it (the message's own addressee answers then, and the two would
/// collide every time): it plays its aborts half a resend interval (plus jitter) after the last message
/// it heard, again every resend interval, while the sessions it found ambiguous carry traffic (until
/// they have been silent for ``PairingTiming/abortLingerSeconds``). Both ends of a complete pairing
/// hold their verdict long enough to hear such an abort.
///
/// Randomness (the session number, the commitment's opening, the nonce) is drawn at ``init``, from
/// the generator given, so tests are deterministic.
public struct PairingStateMachine: Sendable {
    /// This end's role.
    public let role: PairingRole
    /// This end's public key (32 bytes).
    public let publicKey: [UInt8]
    /// The timers.
    public let timing: PairingTiming
    /// The code, once paired.
    public private(set) var code: String?
    /// The peer's public key, once paired.
    public private(set) var peerKey: [UInt8]?
    /// The failure, once failed.
    public private(set) var failure: PairingFailure?

    /// Digits of the code (6; tests shrink it to play an attacker within a small code space).
    var codeDigits = PairingCrypto.codeDigits

    private let privateKey: X25519PrivateKey
    private let name: [UInt8]
    private let seconds: Double
    private let session: UInt16
    /// Announcer: r_A; listener: n_B.
    private let randomBytes: [UInt8]
    /// Draws the jitter added to each resend (0...1 s), so two announcers that collided do not
    /// collide again on every repeat.
    private var jitter: UInt64

    private enum Phase: Sendable {
        case idle
        case announcing
        case collecting(until: Double)
        case revealing
        case listening
        case answered
        case holding(until: Double)
        case aborting(until: Double)
        case done
    }
    private var phase: Phase = .idle
    private var deadline = 0.0
    private var resendAt: Double?
    private var heardAnything = false
    private var played: Set<[UInt8]> = []
    // Announcer
    private var tokenBytes: [UInt8] = []
    private var answerBytes: [UInt8] = []
    private var peerName: [UInt8] = []
    private var revealBytes: [UInt8] = []
    private var confirmationKey: [UInt8]?
    // Listener
    private var chosen: PairingToken?
    private var confirmBytes: [UInt8] = []
    private var abortedSessions: Set<UInt16> = []
    /// Aborting: when the aborts are played next.
    private var abortAt: Double?

    /// Creates a machine (call ``start(now:)`` next).
    /// - Parameters:
    ///   - role: announcer or listener.
    ///   - privateKey: this installation's identity.
    ///   - name: a user name to give the peer (at most 64 bytes of UTF-8; longer is cut), or nil.
    ///   - seconds: give up this long after ``start(now:)``.
    ///   - timing: the timers.
    ///   - random: draws the session number and the 16 random bytes.
    public init<R: RandomNumberGenerator>(role: PairingRole, privateKey: X25519PrivateKey, name: String?,
                                          seconds: Double, timing: PairingTiming, random: inout R) {
        precondition(seconds > 0, "seconds must be positive")
        self.role = role
        self.privateKey = privateKey
        publicKey = Array(privateKey.publicKey.rawRepresentation)
        var n = Array((name ?? "").utf8)
        if n.count > PairingMessage.maximumNameLength { n = Array(n.prefix(PairingMessage.maximumNameLength)) }
        self.name = n
        self.seconds = seconds
        self.timing = timing
        session = UInt16.random(in: 0...UInt16.max, using: &random)
        randomBytes = (0..<PairingMessage.nonceLength).map { _ in UInt8.random(in: 0...255, using: &random) }
        jitter = random.next() | 1
    }

    /// The next resend jitter, 0...1 s (xorshift64): wide enough that two ends whose first messages
    /// collided (each started before it could hear the other, a sound server's buffers late) seldom
    /// collide again.
    private mutating func nextJitter() -> Double {
        jitter ^= jitter << 13
        jitter ^= jitter >> 7
        jitter ^= jitter << 17
        return Double(jitter % 1001) / 1000
    }

    /// Whether the machine has finished (paired or failed): the driver may stop.
    public var isFinished: Bool { if case .done = phase { return true } else { return false } }

    /// The peer's user name as it sent it (empty when it sent none): a claim the peer chose, not a
    /// name to trust it under as is (see ``PairingAction/trust(suggestedName:publicKey:)``).
    public var peerUserName: String { String(decoding: peerName, as: UTF8.self) }

    /// Starts: the announcer plays its token, the listener listens.
    public mutating func start(now: Double) -> [PairingAction] {
        guard case .idle = phase else { return [] }
        deadline = now + seconds
        switch role {
        case .announcer:
            // Commits to all of P2 (key, opening, name, session): nothing of the code is left to choose.
            let c = PairingToken.commitment(session: session, publicKey: publicKey, opening: randomBytes, name: name)
            tokenBytes = PairingToken(session: session, commitment: c).encode()
            phase = .announcing
            return [play(tokenBytes)]
        case .listener:
            phase = .listening
            return []
        }
    }

    /// This end's transmission ended (the resend timers start from here).
    public mutating func transmitted(now: Double) -> [PairingAction] {
        switch phase {
        case .announcing, .revealing: resendAt = now + timing.resendSeconds + nextJitter()
        default: break
        }
        return []
    }

    /// Time passes.
    public mutating func tick(now: Double) -> [PairingAction] {
        switch phase {
        case .idle, .done: return []
        case .aborting(let until):
            if now >= until || now >= deadline { return finish(.ambiguous) }
            if let a = abortAt, now >= a {
                abortAt = now + timing.resendSeconds + nextJitter()
                return abortedSessions.sorted().flatMap { abort($0) }
            }
            return []
        case .holding(let until):
            if now >= until || now >= deadline { return succeed() }
            return []
        default: break
        }
        if now >= deadline { return finish(heardAnything ? .incomplete : .noPairingHeard) }
        switch phase {
        case .announcing:
            if let r = resendAt, now >= r { resendAt = nil; return [play(tokenBytes)] }
        case .collecting(let until):
            if now >= until { return reveal(now: now) }
        case .revealing:
            if let r = resendAt, now >= r { resendAt = nil; return [play(revealBytes)] }
        default: break
        }
        return []
    }

    /// A frame's payload was heard on the line (possibly this end's own).
    public mutating func frameHeard(_ bytes: [UInt8], now: Double) -> [PairingAction] {
        guard !played.contains(bytes), let m = try? PairingMessage(decoding: bytes) else { return [] }
        switch phase {
        case .idle, .done: return []
        case .aborting(let until):
            // Another end's aborts say nothing new; anything else is a pairing still going on: its
            // session is aborted too, after the message's addressee had its turn to answer. Traffic of
            // the sessions found ambiguous keeps this end aborting; a session heard only now does not
            // (it is aborted until the linger ends, as before).
            if case .abort = m { return [] }
            if abortedSessions.contains(m.session) {
                phase = .aborting(until: min(max(until, now + timing.abortLingerSeconds), deadline))
            }
            abortedSessions.insert(m.session)
            let soon = now + abortDelay()
            if abortAt.map({ $0 > soon }) ?? true { abortAt = soon }
            return []
        default: break
        }
        switch role {
        case .announcer: return announcerHeard(m, bytes, now: now)
        case .listener: return listenerHeard(m, bytes, now: now)
        }
    }

    // MARK: - Announcer

    private mutating func announcerHeard(_ m: PairingMessage, _ bytes: [UInt8], now: Double) -> [PairingAction] {
        guard m.session == session else { return ambiguous(now, also: m.session) }
        switch m {
        case .token, .reveal, .abort:
            // Our own token and reveal are in `played`: these are someone else's.
            return ambiguous(now)
        case .answer(_, let pk, _, let name):
            // A key no one can prove to hold (all zeros, low order): junk, not a listener.
            guard (try? KeyText.validatePublicKey(pk)) != nil else { return [] }
            heardAnything = true
            switch phase {
            case .announcing:
                answerBytes = bytes
                peerKey = pk
                peerName = name
                phase = .collecting(until: now + timing.collectSeconds)
                return []
            case .collecting, .revealing:
                if bytes != answerBytes { return ambiguous(now) }
                return []
            default: return []
            }
        case .confirm(_, let mac):
            guard case .revealing = phase, let k = confirmationKey else { return [] }
            guard PairingCrypto.equal(mac, PairingCrypto.mac(key: k, role: "B")) else { return ambiguous(now) }
            // Complete: hold the verdict until an abort from an end that saw a second pairing would
            // have been heard: one played ``abortDelay()`` after our P2 (at most half a resend
            // interval and 0.5 s) comes at most half a resend interval and 0.3 s after P3 did. (An
            // abort that only answers P3 comes later; the listener, holding longer, still hears it.)
            phase = .holding(until: min(now + timing.resendSeconds / 2 + 0.5, deadline))
            return []
        }
    }

    private mutating func reveal(now: Double) -> [PairingAction] {
        guard let pk = peerKey else { return [] }
        let withoutMAC = PairingMessage.reveal(session: session, publicKey: publicKey, opening: randomBytes, name: name, mac: []).encode()
        let transcript = tokenBytes + answerBytes + withoutMAC
        guard let k = try? PairingCrypto.confirmationKey(privateKey: privateKey, peer: pk, transcript: transcript) else {
            // A listener with an invalid key (a low-order point): not a pairing we can finish.
            return ambiguous(now)
        }
        confirmationKey = k
        code = PairingCrypto.code(transcript: transcript, digits: codeDigits)
        revealBytes = withoutMAC + PairingCrypto.mac(key: k, role: "A")
        phase = .revealing
        resendAt = nil
        return [play(revealBytes)]
    }

    // MARK: - Listener

    private mutating func listenerHeard(_ m: PairingMessage, _ bytes: [UInt8], now: Double) -> [PairingAction] {
        guard let token = chosen else {
            // Not involved yet: the first token we hear is ours; other traffic belongs to someone else.
            guard case .token(let t) = m else { return [] }
            heardAnything = true
            chosen = t
            tokenBytes = bytes
            answerBytes = PairingMessage.answer(session: t.session, publicKey: publicKey, nonce: randomBytes, name: name).encode()
            phase = .answered
            return [play(answerBytes)]
        }
        guard m.session == token.session else { return ambiguous(now, also: m.session) }
        switch m {
        case .token:
            if bytes != tokenBytes { return ambiguous(now) }
            // The announcer did not hear our answer.
            if case .answered = phase { return [play(answerBytes)] }
            return []
        case .answer, .confirm, .abort:
            // Ours are in `played`: a second listener, or someone else's message in our session.
            return ambiguous(now)
        case .reveal(_, let pk, let r, let name, let mac):
            if case .holding = phase {
                // The announcer did not hear our P3: play it again, if it is the same P2.
                return bytes == revealBytes ? [play(confirmBytes)] : ambiguous(now)
            }
            guard case .answered = phase else { return [] }
            // The token committed to every field of P2: a P2 that differs in any (another key, opening or
            // name) is someone else's, never a pairing.
            let committed = PairingToken.commitment(session: token.session, publicKey: pk, opening: r, name: name)
            guard PairingCrypto.equal(committed, token.commitment) else {
                return ambiguous(now)
            }
            let transcript = tokenBytes + answerBytes + Array(bytes.dropLast(PairingMessage.macLength))
            guard let k = try? PairingCrypto.confirmationKey(privateKey: privateKey, peer: pk, transcript: transcript),
                  PairingCrypto.equal(mac, PairingCrypto.mac(key: k, role: "A"))
            else { return ambiguous(now) }
            revealBytes = bytes
            peerKey = pk
            peerName = name
            code = PairingCrypto.code(transcript: transcript, digits: codeDigits)
            confirmBytes = PairingMessage.confirm(session: token.session, mac: PairingCrypto.mac(key: k, role: "B")).encode()
            phase = .holding(until: min(now + timing.holdSeconds, deadline))
            return [play(confirmBytes)]
        }
    }

    // MARK: - Endings

    /// How long after a message an aborting end plays its aborts: half a resend interval (the message's
    /// addressee answers first) and 0...0.5 s of jitter (two aborting ends do not collide every time).
    private mutating func abortDelay() -> Double {
        timing.resendSeconds / 2 + nextJitter() / 2
    }

    private mutating func play(_ bytes: [UInt8]) -> PairingAction {
        played.insert(bytes)
        return .play(bytes)
    }

    /// Two pairings at once: trust nothing, tell the others, linger answering with aborts.
    private mutating func ambiguous(_ now: Double, also other: UInt16? = nil) -> [PairingAction] {
        heardAnything = true
        code = nil
        peerKey = nil
        phase = .aborting(until: min(now + timing.abortLingerSeconds, deadline))
        var actions: [PairingAction] = [.cancelQueued]
        var sessions: [UInt16] = []
        switch role {
        case .announcer: sessions.append(session)
        case .listener: if let c = chosen { sessions.append(c.session) }
        }
        if let other, !sessions.contains(other) { sessions.append(other) }
        for s in sessions { actions += abort(s) }
        // Played again once the others' answers to what we heard are out of the way, and then every
        // resend interval while pairing traffic goes on.
        abortAt = now + abortDelay()
        return actions
    }

    private mutating func abort(_ s: UInt16) -> [PairingAction] {
        abortedSessions.insert(s)
        let bytes = PairingMessage.abort(session: s).encode()
        played.insert(bytes)
        return [.play(bytes)]
    }

    private mutating func succeed() -> [PairingAction] {
        guard let pk = peerKey, let c = code else { return finish(.incomplete) }
        phase = .done
        return [.trust(suggestedName: trustName(code: c), publicKey: pk), .paired(code: c)]
    }

    private mutating func finish(_ f: PairingFailure) -> [PairingAction] {
        phase = .done
        failure = f
        code = nil
        peerKey = nil
        return [.failed(f)]
    }

    /// The peer's user name when it is a valid trust label (``KeyStore/validateName(_:)``), else `paired-CODE`.
    private func trustName(code: String) -> String {
        let n = String(decoding: peerName, as: UTF8.self)
        return (try? KeyStore.validateName(n)) != nil ? n : "paired-\(code)"
    }
}
