import ModemCodecs
import ModemPipelines

/// The counts of a ``TNC`` run.
public struct TNCStatistics: Sendable, CustomStringConvertible {
    /// The receiver's counts (frames decoded, repaired, CRC failures, samples).
    public var receiver = PacketStatistics()
    /// Frames sent to clients, counting each client once.
    public var framesToClients = 0
    /// Client frames modulated to the output.
    public var framesTransmitted = 0
    /// Client data frames not transmitted (not AX.25, wrong port, no output, queue full).
    public var framesRejected = 0
    /// Parameter frames applied.
    public var parametersSet = 0
    /// Connections accepted.
    public var clientsServed = 0
    /// Clients dropped because they read too slowly.
    public var clientsDroppedAsSlow = 0
    /// Connections refused because too many clients were connected.
    public var clientsRefused = 0
    /// Clients disconnected as idle (past the idle timeout, or to make room for a new one).
    public var clientsDroppedAsIdle = 0
    /// What the clients' KISS decoders counted (garbage bytes, bad escapes, ...).
    public var kiss = KISSDecoderStatistics()
    /// What the AGW clients' decoders counted (nil: no AGW server).
    public var agw: AGWDecoderStatistics?
    /// AGW connections accepted (included in ``clientsServed``).
    public var agwClientsServed = 0
    /// Persistence draws lost (slot times waited) before transmitting.
    public var slotsWaited = 0
    /// Times a transmission was deferred because the channel was busy.
    public var busyDeferrals = 0
    /// Seconds of audio received.
    public var audioSeconds = 0.0

    /// Creates counts of zero.
    public init() {}

    public var description: String {
        let seconds = (audioSeconds * 10).rounded() / 10
        var parts = ["\(seconds) s of audio", "\(receiver.decoded) frame\(receiver.decoded == 1 ? "" : "s") decoded (\(framesToClients) sent to clients)",
                     "\(framesTransmitted) transmitted", "\(framesRejected) rejected",
                     "\(clientsServed) client\(clientsServed == 1 ? "" : "s") served"]
        if clientsDroppedAsSlow > 0 { parts.append("\(clientsDroppedAsSlow) dropped as too slow") }
        if clientsRefused > 0 { parts.append("\(clientsRefused) refused") }
        if clientsDroppedAsIdle > 0 { parts.append("\(clientsDroppedAsIdle) dropped as idle") }
        parts.append("KISS: \(kiss.frames) frame\(kiss.frames == 1 ? "" : "s"), " + TNCEvent.garbage(kiss))
        if let agw {
            parts.append("AGW: \(agwClientsServed) client\(agwClientsServed == 1 ? "" : "s"), \(agw.frames) message\(agw.frames == 1 ? "" : "s")"
                         + (agw.oversized > 0 ? ", \(agw.oversized) oversized" : ""))
        }
        return parts.joined(separator: ", ")
    }
}
