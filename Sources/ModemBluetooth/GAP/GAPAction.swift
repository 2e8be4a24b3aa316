/// What a ``GAPMachine`` asks its driver to do or reports to the layers above.
public enum GAPAction: Sendable, Hashable {
    /// Send this packet to the transport.
    case send(HCIPacket)
    /// The init script finished; the controller's address.
    case ready(address: BDAddress)
    /// The controller is unusable (fatal).
    case failed(String)
    /// A device seen during inquiry; again when its name arrives.
    case found(address: BDAddress, name: String?)
    /// The inquiry and the name requests after it ended; `failure` says why it could not run.
    case inquiryComplete(failure: String?)
    /// An ACL link is up.
    case connected(handle: UInt16, address: BDAddress, incoming: Bool)
    /// A connection attempt failed ("no answer from 00:1B:DC:00:00:0B (page timeout)"); also an
    /// accepted incoming connection that did not complete.
    case connectFailed(address: BDAddress, reason: String)
    /// An ACL link went down: the HCI reason and its name ("remote user terminated connection").
    case disconnected(handle: UInt16, reason: UInt8, description: String)
    /// One reassembled L2CAP frame.
    case l2cap(handle: UInt16, pdu: [UInt8])
    /// A queued PDU left for the controller entirely.
    case aclTransmitted(handle: UInt16)
    /// A dropped packet, counted upstairs.
    case damaged(String)
}
