/// HubCore: the hub's pure values (OAuth request rules and errors, JSend envelopes, validation limits,
/// the presence state machine). No I/O here; see docs/hub-plan.md.
public enum HubCore {
    /// The realm named in every `WWW-Authenticate` challenge.
    public static let realm = "modem-hub"
}
