import Foundation
import HubCore

/// Targets for HubCore: what HTTP clients and socket clients send to the hub, parsed by its pure values.
enum HubFuzzTargets {
    static let all: [FuzzTarget] = [oauthForm, jsonScanner, jsend, socketOps]

    /// The text of `bytes` up to the first newline, and the rest.
    static func firstLine(_ bytes: [UInt8]) -> (String, String) {
        let cut = bytes.firstIndex(of: 0x0A) ?? bytes.count
        return (String(decoding: bytes[..<cut], as: UTF8.self), String(decoding: bytes[min(bytes.count, cut + 1)...], as: UTF8.self))
    }

    /// The first line is the `Authorization` header (empty: none), the rest the token request's
    /// `application/x-www-form-urlencoded` body: FormBody, then the client and the grant, as /oauth/token does.
    static let oauthForm = FuzzTarget(
        name: "oauth-form",
        summary: "FormBody(parsing:), OAuthRequestParser.client(authorization:form:) and .grant",
        seeds: {
            [(name: "password", bytes: Array("\ngrant_type=password&username=alice&password=s%C3%A9cret+1&client_id=app&client_secret=x&scope=hub".utf8)),
             (name: "basic", bytes: Array("Basic YXBwOnNlY3JldA==\ngrant_type=client_credentials".utf8)),
             (name: "refresh", bytes: Array("Bearer abc\ngrant_type=refresh_token&refresh_token=r1%2Bx".utf8))]
        },
        run: { input in
            let (header, body) = firstLine(input)
            guard let form = try? FormBody(parsing: body) else { return }
            for (name, value) in form.fields {
                precondition(FormBody.decode(formEncoded(name)) == name && FormBody.decode(formEncoded(value)) == value,
                             "form body: a decoded field does not encode back to itself")
            }
            _ = try? OAuthRequestParser.client(authorization: header.isEmpty ? nil : header, form: form)
            _ = try? OAuthRequestParser.grant(form)
        }
    )

    /// `text` form-encoded: every byte but unreserved ones as `%XX`.
    static func formEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The input is JSON text as a socket client sends a payload: validated as one object, split into
    /// members, each string member unescaped.
    static let jsonScanner = FuzzTarget(
        name: "json-scanner",
        summary: "JSONObjectText(validating:) and JSONObjectMembers(parsing:): the hub's JSON scanner",
        seeds: {
            [(name: "object", bytes: Array(#"{"a":1,"b":[true,false,null,{"c":"\u00e9\n\"x\""}],"d":-1.5e+3,"e":{}}"#.utf8)),
             (name: "nested", bytes: Array(#" { "k" : [[[["deep"]]]] , "n":0.25 } "#.utf8))]
        },
        run: { input in
            let text = String(decoding: input, as: UTF8.self)
            if let object = try? JSONObjectText(validating: text, maxBytes: 1 << 20, maxMembers: 1 << 20) {
                precondition((try? JSONObjectText(validating: object.text, maxBytes: 1 << 20, maxMembers: 1 << 20)) == object,
                             "JSON: validated text does not validate again")
                // Whatever the hub accepts, every client must read back (Foundation's parser here).
                precondition((try? JSONSerialization.jsonObject(with: Data(object.text.utf8))) != nil,
                             "JSON: the hub accepts text that Foundation's JSONSerialization refuses")
            }
            if let members = try? JSONObjectMembers(parsing: text, maxBytes: 1 << 20) {
                for name in members.values.keys { _ = members.string(name) }
            }
        }
    )

    /// The input's lines are strings put in JSend envelopes (as messages, fields and data); every
    /// envelope must scan as a JSON object whose strings come back unchanged.
    static let jsend = FuzzTarget(
        name: "jsend",
        summary: "JSend and JSONText encoding, read back by the hub's JSON scanner",
        seeds: { [(name: "strings", bytes: Array("bad name\n\u{1}\u{2028}\"quoted\"\\\n\u{1F600} done".utf8))] },
        run: { input in
            let parts = String(decoding: input, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let message = parts.first ?? "", field = parts.count > 1 ? parts[1] : nil
            func members(_ text: String) -> JSONObjectMembers {
                do {
                    return try JSONObjectMembers(parsing: text, maxBytes: 1 << 22)
                } catch {
                    preconditionFailure("JSend: the envelope does not scan: \(error)")
                }
            }
            let fail = members(JSend.fail(message, field: field))
            precondition(fail.string("status") == "fail", "JSend: fail status")
            let data = members(fail.values["data"] ?? "")
            precondition(data.string("message") == message && data.string("field") == field, "JSend: fail data")
            precondition(members(JSend.error(message)).string("message") == message, "JSend: error message")
            let items = parts.map { RawJSON(JSONText.object([("s", JSONText.string($0))])) }
            let list = members(JSend.list(limit: parts.count, more: false, items: items))
            precondition(list.values["limit"] == String(parts.count), "JSend: list limit")
            let success = members(JSend.success(RawJSON(JSONText.object(parts.enumerated().map { ("k\($0.offset)", JSONText.string($0.element)) }))))
            _ = success.values["data"].map(members)
        }
    )

    /// The input is one text frame from a groups socket client.
    static let socketOps = FuzzTarget(
        name: "socket-ops",
        summary: "ClientOp.parse: the groups socket's operations (hello, join, listen, leave, post, unpost, update)",
        seeds: {
            [#"{"op":"hello","user":"alice"}"#, #"{"op":"join","group":"radio"}"#,
             #"{"op":"post","group":"radio","pid":"p1","pidload":{"text":"hi","n":[1,2]}}"#,
             #"{"op":"update","userload":{"status":"away"}}"#, #"{"op":"unpost","group":"radio","pid":"p1"}"#]
                .enumerated().map { (name: "op-\($0.offset)", bytes: Array($0.element.utf8)) }
        },
        run: { input in
            let text = String(decoding: input, as: UTF8.self)
            do throws(ClientOpError) {
                let op = try ClientOp.parse(text)
                _ = op.name
            } catch {
                _ = error.jsonText
            }
        }
    )
}
