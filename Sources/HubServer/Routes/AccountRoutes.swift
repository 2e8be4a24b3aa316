import Foundation
import HubCore
import HubStore
import Hummingbird

/// The hub API's account flow under `/v1` (JSend): create -> code out of band -> confirm returns tokens;
/// forgot -> reset code -> reset returns tokens; `GET /v1/users/me`.
enum AccountRoutes {
    /// Codes live 15 minutes and allow 5 tries.
    static let codeLifetimeMs: Int64 = 15 * 60 * 1000
    static let codeTries = 5

    static func register(on router: HubRouter, authority: HubAuthority, store: any HubAuthStore,
                         sender: any ConfirmationSender) {
        router.add(.post, "/v1/accounts") { request, context in
            let principal = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username", "password", "contact"])
            let username = f["username"]!, password = f["password"]!, contact = f["contact"]!
            try validateUsername(username)
            try validatePassword(password)
            guard (1...Limits.contactMaxLength).contains(contact.unicodeScalars.count) else {
                throw HubAPIError.badRequest("contact must be 1 to \(Limits.contactMaxLength) characters", field: "contact")
            }
            let now = authority.clock()
            if let existing = try await store.user(name: username) {
                // A pending sign-up whose code is gone may be taken again; anything else is taken.
                if existing.confirmed { throw HubAPIError.conflict("username is taken") }
                try await store.deletePendingUser(name: username)
            }
            let hash = try await authority.hashPassword(password)
            do {
                try await store.createUser(UserRecord(id: HubTokens.newID(prefix: "u_"), name: username, passwordBcrypt: hash,
                                                      contact: contact, confirmed: false, createdMs: now))
            } catch StoreError.conflict {
                throw HubAPIError.conflict("username is taken")
            }
            let code = HubTokens.newCode()
            try await store.putCode(userName: username, purpose: "confirm", codeSHA256: HubTokens.sha256(code),
                                    expiresMs: now + codeLifetimeMs)
            await sender.send(code: code, purpose: "confirm", user: username, contact: contact)
            _ = principal
            return JSendResponse.make(.accepted, JSend.success(Pending()))
        }

        router.add(.post, "/v1/accounts/confirm") { request, context in
            let principal = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username", "code"])
            let username = f["username"]!, code = f["code"]!
            try validateUsername(username)
            try validateCode(code)
            let outcome = try await store.checkCode(userName: username, purpose: "confirm", codeSHA256: HubTokens.sha256(code),
                                                    nowMs: authority.clock(), maxTries: codeTries)
            guard outcome == .matched, let user = try await store.user(name: username) else {
                throw HubAPIError.notFound("no such pending code")
            }
            try await store.confirmUser(name: username)
            let tokens = try await authority.issuePair(clientID: principal.clientID, subject: user.id)
            return JSendResponse.make(.ok, JSend.success(tokens))
        }

        router.add(.post, "/v1/accounts/forgot") { request, context in
            _ = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username"])
            let username = f["username"]!
            try validateUsername(username)
            // 202 whether or not the account exists (no user enumeration).
            if let user = try await store.user(name: username), user.confirmed {
                let code = HubTokens.newCode()
                try await store.putCode(userName: username, purpose: "reset", codeSHA256: HubTokens.sha256(code),
                                        expiresMs: authority.clock() + codeLifetimeMs)
                await sender.send(code: code, purpose: "reset", user: username, contact: user.contact)
            }
            return JSendResponse.make(.accepted, JSend.success(Pending()))
        }

        router.add(.post, "/v1/accounts/reset") { request, context in
            let principal = try context.requirePrincipal()
            let f = try await StrictJSON.strings(request, context: context, required: ["username", "code", "password"])
            let username = f["username"]!, code = f["code"]!, password = f["password"]!
            try validateUsername(username)
            try validateCode(code)
            try validatePassword(password)
            let outcome = try await store.checkCode(userName: username, purpose: "reset", codeSHA256: HubTokens.sha256(code),
                                                    nowMs: authority.clock(), maxTries: codeTries)
            guard outcome == .matched, let user = try await store.user(name: username) else {
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

    static func validateUsername(_ s: String) throws {
        guard Limits.isValidUsername(s) else {
            throw HubAPIError.badRequest("username must match \(Limits.usernamePattern)", field: "username")
        }
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
