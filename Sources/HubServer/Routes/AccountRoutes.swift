import Foundation
import HubCore
import HubStore
import Hummingbird

/// The hub API's account flow under `/v1` (JSend): create -> code out of band -> confirm returns tokens;
/// forgot -> reset code -> reset returns tokens; `GET /v1/users/me`.
///
/// Every name is looked up, limited and stored under one key (``AccountName/key(_:)``: names that differ
/// only in case are one account); codes belong to an account's id. Sign-ups, codes issued and guesses at
/// codes are bounded per account and per client address (``AccountLimits``): over a bound, 429 with
/// `Retry-After` and nothing done.
enum AccountRoutes {
    /// Codes live 15 minutes.
    static let codeLifetimeMs: Int64 = 15 * 60 * 1000

    static func register(on router: HubRouter, authority: HubAuthority, store: any HubAuthStore,
                         sender: any ConfirmationSender) {
        let limiter = authority.accountLimiter
        let codeTries = limiter.limits.codeTries

        /// Refuses with 429 when `event` is over a bound (counted otherwise).
        @Sendable func admit(_ event: AccountLimiter.Event, now: Int64) throws {
            if let wait = limiter.admit(event, nowMs: now) { throw HubAPIError.tooManyRequests(retryAfter: wait) }
        }

        /// Stores a new code for `user` and delivers it; 429 when the delivery cannot start now.
        @Sendable func issueCode(_ purpose: String, for user: UserRecord, now: Int64) async throws {
            let code = HubTokens.newCode()
            guard try await store.putCode(userID: user.id, purpose: purpose, codeSHA256: HubTokens.sha256(code),
                                          expiresMs: now + codeLifetimeMs, nowMs: now)
            else { throw HubAPIError.notFound("the account is gone") }
            do {
                try await sender.deliver(code: code, purpose: purpose, user: user.name, contact: user.contact)
            } catch let busy as CodeDeliveryBusy {
                throw HubAPIError.tooManyRequests(retryAfter: busy.retryAfter)
            }
        }

        router.add(.post, "/v1/accounts") { request, context in
            let principal = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username", "password", "contact"])
            let username = f["username"]!, password = f["password"]!, contact = f["contact"]!
            let key = try validateUsername(username)
            try validatePassword(password)
            guard (1...Limits.contactMaxLength).contains(contact.unicodeScalars.count) else {
                throw HubAPIError.badRequest("contact must be 1 to \(Limits.contactMaxLength) characters", field: "contact")
            }
            let now = authority.clock()
            // Each sign-up costs a bcrypt and a delivery: bounded per address before either.
            try admit(.signup(address: context.remoteIP), now: now)
            if let existing = try await store.user(name: key), existing.confirmed {
                throw HubAPIError.conflict("username is taken")
            }
            try admit(.code(account: key, address: context.remoteIP), now: now)
            let hash = try await authority.hashPassword(password)
            let user = UserRecord(id: HubTokens.newID(prefix: "u_"), name: username, passwordBcrypt: hash,
                                  contact: contact, confirmed: false, createdMs: now)
            do {
                // A pending sign-up of the same name (any case) is replaced, with its codes: a code sent
                // for it has no power over the new account.
                try await store.replacePendingUser(user)
            } catch StoreError.conflict {
                throw HubAPIError.conflict("username is taken")
            }
            try await issueCode("confirm", for: user, now: now)
            _ = principal
            return JSendResponse.make(.accepted, JSend.success(Pending()))
        }

        router.add(.post, "/v1/accounts/confirm") { request, context in
            let principal = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username", "code"])
            let username = f["username"]!, code = f["code"]!
            let key = try validateUsername(username)
            try validateCode(code)
            let now = authority.clock()
            try admit(.guess(account: key, address: context.remoteIP), now: now)
            // The code is checked against the one account of this key, and only that account is
            // confirmed and gets tokens.
            guard let user = try await store.user(name: key), !user.confirmed,
                  try await store.checkCode(userID: user.id, purpose: "confirm", codeSHA256: HubTokens.sha256(code),
                                            nowMs: now, maxTries: codeTries) == .matched,
                  try await store.confirmUser(id: user.id)
            else {
                throw HubAPIError.notFound("no such pending code")
            }
            let tokens = try await authority.issuePair(clientID: principal.clientID, subject: user.id)
            return JSendResponse.make(.ok, JSend.success(tokens))
        }

        router.add(.post, "/v1/accounts/forgot") { request, context in
            _ = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username"])
            let username = f["username"]!
            let key = try validateUsername(username)
            // Counted whether or not the account exists, so that neither the 202 nor a 429 tells.
            try admit(.code(account: key, address: context.remoteIP), now: authority.clock())
            // The same for every name: a busy sender refuses whether or not the account exists (asked
            // before the lookup, and again where a real delivery would take its slot), so that a 429 while
            // the hooks are busy tells nothing about which names exist.
            if let wait = sender.busyRetryAfter() { throw HubAPIError.tooManyRequests(retryAfter: wait) }
            if let user = try await store.user(name: key), user.confirmed {
                try await issueCode("reset", for: user, now: authority.clock())
            } else if let wait = sender.busyRetryAfter() {
                throw HubAPIError.tooManyRequests(retryAfter: wait)
            }
            return JSendResponse.make(.accepted, JSend.success(Pending()))
        }

        router.add(.post, "/v1/accounts/reset") { request, context in
            let principal = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username", "code", "password"])
            let username = f["username"]!, code = f["code"]!, password = f["password"]!
            let key = try validateUsername(username)
            try validateCode(code)
            try validatePassword(password)
            let now = authority.clock()
            try admit(.guess(account: key, address: context.remoteIP), now: now)
            guard let user = try await store.user(name: key), user.confirmed,
                  try await store.checkCode(userID: user.id, purpose: "reset", codeSHA256: HubTokens.sha256(code),
                                            nowMs: now, maxTries: codeTries) == .matched
            else {
                throw HubAPIError.notFound("no such pending code")
            }
            try await store.setPassword(userID: user.id, bcrypt: try await authority.hashPassword(password))
            try await store.revokeFamilies(subject: user.id)
            let tokens = try await authority.issuePair(clientID: principal.clientID, subject: user.id)
            return JSendResponse.make(.ok, JSend.success(tokens))
        }

        router.add(.get, "/v1/users/me") { _, context in
            let p = try context.requirePrincipal()
            var name: String?
            if p.kind == .account, let u = try await store.user(id: p.subject) { name = u.name }
            return JSendResponse.make(.ok, JSend.success(Me(user: p.subject, kind: p.kind.rawValue, name: name, clientID: p.clientID)))
        }
    }

    /// The `data` of a 202: a code is on its way.
    struct Pending: Encodable {
        let pending = true
    }

    /// The `data` of `GET /v1/users/me` (`name` for an account only).
    struct Me: Encodable {
        let user: String
        let kind: String
        let name: String?
        let clientID: String

        enum CodingKeys: String, CodingKey {
            case user, kind, name
            case clientID = "client_id"
        }
    }

    /// The key of a valid name (``AccountName/key(_:)``), else 400.
    static func validateUsername(_ s: String) throws -> String {
        guard let key = AccountName.validKey(s) else {
            throw HubAPIError.badRequest("username must match \(Limits.usernamePattern)", field: "username")
        }
        return key
    }

    static func validatePassword(_ s: String) throws {
        guard Limits.isValidPassword(s) else {
            throw HubAPIError.badRequest("password must be \(Limits.passwordMinLength) to \(Limits.passwordMaxLength) characters",
                                         field: "password")
        }
    }

    static func validateCode(_ s: String) throws {
        guard Limits.isValidCode(s) else { throw HubAPIError.badRequest("code must be 8 digits", field: "code") }
    }
}
