import ModemSockets

/// Why a ``KISSServer`` could not start or keep serving: the failed socket call, its `errno` and a
/// one-line explanation (ModemSockets' error, shared by every TCP user in the project).
public typealias KISSServerError = SocketError
