/// POSIX TCP, wrapped once: the KISS server (ModemTNC) and the messaging transports (ModemMessaging)
/// both stand on this. Placeholder until the socket calls move down from ModemTNC's KISSServerSocket.
public enum ModemSockets {}
