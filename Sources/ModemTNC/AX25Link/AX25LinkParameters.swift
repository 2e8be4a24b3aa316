/// The settings of a station's connected-mode links, with Dire Wolf 1.8's defaults.
public struct AX25LinkParameters: Sendable, Hashable {
    /// Try AX.25 2.2 first (SABME, modulo 128, then XID); `false` connects with SABM (modulo 8) at once,
    /// as Dire Wolf does for the stations in its `V20` list.
    public var preferV22: Bool = true
    /// Accept SABME from peers; `false` answers it with DM, as a 2.0-only TNC (KPC-3+) does.
    public var acceptV22: Bool = true
    /// SABME attempts (answered by nothing) before falling back to SABM; Dire Wolf's `MAXV22`, N2 / 3.
    public var maxV22Attempts: Int = 3
    /// Send XID after a SABME connection is accepted (Dire Wolf: yes, unless the peer is in its `NOXID` list).
    public var negotiateXID: Bool = true
    /// Window k for modulo 8, 1...7 (Dire Wolf `MAXFRAME`, 4).
    public var windowModulo8: Int = 4
    /// Window k for modulo 128, 1...63 (Dire Wolf `EMAXFRAME`, 32; it keeps k at most 63 for SREJ).
    public var windowModulo128: Int = 32
    /// N1: the most bytes in one I frame's information field, 1...2048 (Dire Wolf `PACLEN`, 256).
    public var maxInformationBytes: Int = 256
    /// T1's initial value, seconds (Dire Wolf `FRACK`, 3); multiplied by 2m + 1 for m digipeaters.
    public var t1Initial: Double = 3
    /// T3, the idle-link probe, seconds (300).
    public var t3: Double = 300
    /// N2: retries before a link gives up (Dire Wolf `RETRY`, 10).
    public var retries: Int = 10
    /// The reject methods this end offers in XID: REJ and SREJ by default (selective reject is used
    /// only on modulo-128 links, after SABME, unless XID says otherwise).
    public var reject: AX25XID.Reject = [.rej, .srej]
    /// The most links a station holds at once (incoming SABMs beyond it are answered DM).
    public var maxLinks: Int = 16
    /// The most bytes a link holds for sending (queued and not yet acknowledged), and the most it holds
    /// out of order for selective reject; a `send` beyond it is refused.
    public var maxQueuedBytes: Int = 64 * 1024
    /// Answer SABM/SABME to a callsign that is not registered with DM. Dire Wolf does not answer at all
    /// (`false`, the default); a refusing BBS answers DM.
    public var answerUnregisteredWithDM: Bool = false

    /// The defaults.
    public init() {}

    /// The window for a modulo.
    func window(_ modulo: AX25Modulo) -> Int {
        modulo == .eight ? min(max(windowModulo8, 1), 7) : min(max(windowModulo128, 1), 63)
    }

    /// Values clamped to their valid ranges.
    var checked: AX25LinkParameters {
        var p = self
        p.maxV22Attempts = max(0, p.maxV22Attempts)
        p.maxInformationBytes = min(max(p.maxInformationBytes, 1), 2048)
        p.t1Initial = min(max(p.t1Initial, 0.5), 30)
        p.t3 = max(p.t3, 1)
        p.retries = min(max(p.retries, 1), 50)
        p.maxLinks = max(p.maxLinks, 1)
        p.maxQueuedBytes = max(p.maxQueuedBytes, p.maxInformationBytes)
        return p
    }
}
