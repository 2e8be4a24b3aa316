/// How a ``GAPMachine`` sets up its controller and treats other devices.
public struct GAPConfiguration: Sendable, Hashable {
    /// What the host is to other devices.
    public enum Role: Sendable, Hashable {
        /// Scans and connects out; not discoverable or connectable.
        case central
        /// Discoverable and connectable under `name` (Write_Local_Name, the EIR and
        /// Write_Scan_Enable 0x03); accepts every ACL connection.
        case device(name: String, classOfDevice: UInt32)
    }

    /// The role.
    public var role: Role
    /// Accepts incoming connections also as a central (a device always accepts).
    public var acceptIncoming: Bool
    /// Lowers the ACL fragment size below the controller's (tests): min(override, controller's).
    public var aclMTUOverride: Int?
    /// Lowers the ACL buffer count below the controller's (tests): min(override, controller's).
    public var aclCountOverride: Int?
    /// Page timeout in slots of 0.625 ms (0x2000 = 5.12 s).
    public var pageTimeoutSlots: UInt16
    /// 16-bit service UUIDs listed in a device's EIR (0x1101 Serial Port, say).
    public var serviceUUID16s: [UInt16]
    /// Seconds a command may go unanswered by the controller.
    public var commandTimeout: Double
    /// Seconds a connection attempt may take before we give up on it ourselves.
    public var connectTimeout: Double
    /// Seconds one remote name request may take.
    public var nameTimeout: Double

    /// A configuration; the defaults are those of plan sections 4 and 5.
    public init(role: Role = .central, acceptIncoming: Bool = false, aclMTUOverride: Int? = nil,
                aclCountOverride: Int? = nil, pageTimeoutSlots: UInt16 = 0x2000, serviceUUID16s: [UInt16] = [],
                commandTimeout: Double = 2, connectTimeout: Double = 10, nameTimeout: Double = 5) {
        self.role = role
        self.acceptIncoming = acceptIncoming
        self.aclMTUOverride = aclMTUOverride
        self.aclCountOverride = aclCountOverride
        self.pageTimeoutSlots = pageTimeoutSlots
        self.serviceUUID16s = serviceUUID16s
        self.commandTimeout = commandTimeout
        self.connectTimeout = connectTimeout
        self.nameTimeout = nameTimeout
    }
}
