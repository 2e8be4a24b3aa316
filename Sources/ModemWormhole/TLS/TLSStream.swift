#if canImport(Glibc)
import Glibc
#endif
import CLibSSL
import ModemRuntime
import Synchronization

/// A TLS client connection (OpenSSL's libssl) over a ``ByteStream``: what `wss://` runs on.
///
/// OpenSSL works on two memory BIOs and never touches the socket: what it wants to send is taken out
/// and written through the stream, what arrives is read through the stream (so every wait is the
/// runtime's ``SocketWaiter``, no thread blocks, and a cancelled task ends at once) and handed in only
/// when OpenSSL asks for more (`SSL_ERROR_WANT_READ`), one read of at most 16 KiB at a time, so neither
/// BIO holds more than one record's worth beyond what is being processed. The engine is behind a lock
/// that is never held across a wait; one reader and one writer at a time, and what the engine emits is
/// written out in the order it was made (one output lock). Renegotiation is refused (TLS 1.2; TLS 1.3
/// has none), so a write never needs to read. TLS 1.2 at least; the certificate is verified against
/// ``TLSTrust`` and the host name (or IP address) of the URL, and the name is sent in SNI.
final class TLSStream: Sendable {
    private struct Engine: ~Copyable {
        let ssl: OpaquePointer
        let input: OpaquePointer   // the network's bytes, into OpenSSL
        let output: OpaquePointer  // OpenSSL's bytes, to the network

        /// Takes out what OpenSSL wrote (at most what it holds).
        mutating func drain() -> [UInt8] {
            let pending = modem_bio_pending(output)
            guard pending > 0 else { return [] }
            var out = [UInt8](repeating: 0, count: pending)
            let n = out.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32(pending)) }
            out.removeLast(pending - max(0, Int(n)))
            return out
        }

        deinit { SSL_free(ssl) }  // frees both BIOs too
    }

    private let stream: ByteStream
    private let engine: Mutex<Engine>
    private let readLock = AsyncLock()
    private let outputLock = AsyncLock()
    /// What the errors name (`wss://HOST:PORT`).
    private let name: String
    /// The most read from the network at once: one TLS record and its header.
    private static let readChunk = 16 * 1024 + 512
    /// The most plaintext handed to OpenSSL at once (one record), so the output BIO stays small.
    private static let writeChunk = 16 * 1024

    private init(stream: ByteStream, engine: consuming sending Engine, name: String) {
        self.stream = stream
        self.engine = Mutex(engine)
        self.name = name
    }

    /// Runs the TLS handshake as a client over `stream` (connected to `host`), verifying the server's
    /// certificate against `trust` and `host`, within `deadline`.
    /// - Throws: ``WormholeError``: `.certificate` when the certificate is not trusted,
    ///   `.certificateNotForHost` when it is not for `host` (the description says why), `.network` for the connection, `.server` for a handshake that
    ///   failed otherwise, `.local` for a bad host or certificate file.
    static func handshake(over stream: ByteStream, host: String, name: String, trust: TLSTrust,
                          deadline: Deadline) async throws(WormholeError) -> TLSStream {
        let tls = TLSStream(stream: stream, engine: try makeEngine(host: host, name: name, trust: trust), name: name)
        while true {
            let step: Step = tls.engine.withLock { e in
                ERR_clear_error()
                let r = SSL_do_handshake(e.ssl)
                let code = SSL_get_error(e.ssl, r)
                let out = e.drain()
                if r == 1 { return .done(out) }
                if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return .needInput(out) }
                let verify = SSL_get_verify_result(e.ssl)
                if verify != X509_V_OK { return .failed(certificateError(verify, host: host, name: name), out) }
                return .failed(WormholeError(.server, "\(name): the TLS handshake failed: \(openSSLReason(fallback: "error \(code)"))"), out)
            }
            switch step {
            case .done(let out):
                try await tls.send(out, deadline: deadline)
                return tls
            case .needInput(let out):
                let more: [UInt8]
                do throws(WormholeError) {
                    try await tls.send(out, deadline: deadline)
                    more = try await stream.read(maximum: readChunk, deadline: deadline)
                } catch {
                    stream.close()
                    throw WormholeError(error.kind, "\(name): the TLS handshake: \(error.description)")
                }
                guard !more.isEmpty else {
                    throw WormholeError(.network, "\(name) closed the connection during the TLS handshake (is it a TLS port?)")
                }
                tls.feed(more)
            case .failed(let error, let out):
                try? await tls.send(out, deadline: deadline)  // the alert, if any
                stream.close()
                throw error
            }
        }
    }

    private enum Step: Sendable {
        case done([UInt8])
        case needInput([UInt8])
        case failed(WormholeError, [UInt8])
    }

    private static func makeEngine(host: String, name: String, trust: TLSTrust) throws(WormholeError) -> sending Engine {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw WormholeError(.local, "\(name): \(openSSLReason(fallback: "OpenSSL could not make a TLS context"))")
        }
        defer { SSL_CTX_free(context) }  // the connection keeps its own reference
        guard modem_ssl_ctx_minimum_tls12(context) == 1 else {
            throw WormholeError(.local, "\(name): \(openSSLReason(fallback: "TLS 1.2 cannot be required"))")
        }
        modem_ssl_ctx_set_modes(context)
        try trust.load(into: context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        guard let ssl = SSL_new(context) else {
            throw WormholeError(.local, "\(name): \(openSSLReason(fallback: "OpenSSL could not make a TLS connection"))")
        }
        let newInput = modem_bio_new_memory(), newOutput = modem_bio_new_memory()
        guard let input = newInput, let output = newOutput else {
            BIO_free(newInput)
            BIO_free(newOutput)
            SSL_free(ssl)
            throw WormholeError(.local, "\(name): OpenSSL could not make its buffers")
        }
        SSL_set_bio(ssl, input, output)
        let engine = Engine(ssl: ssl, input: input, output: output)
        // The name the certificate must carry: an IP address for an IP literal (no SNI then: RFC 6066
        // allows only names), else the DNS name, no partial wildcards, and the same name in SNI.
        if isIPAddress(host) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 else {
                throw WormholeError(.local, "\(name): '\(host)' cannot be checked against a certificate")
            }
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(ssl, host) == 1, modem_ssl_set_sni(ssl, host) == 1 else {
                throw WormholeError(.local, "\(name): '\(host)' cannot be checked against a certificate")
            }
        }
        SSL_set_connect_state(ssl)
        return engine
    }

    /// An IPv4 literal, or anything with a colon (IPv6, which a zone makes no certificate's address).
    private static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        return host.contains(":") || inet_pton(AF_INET, host, &v4) == 1
    }

    private static func certificateError(_ result: Int, host: String, name: String) -> WormholeError {
        let reason = String(cString: X509_verify_cert_error_string(result))
        switch Int32(result) {
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            return WormholeError(.certificateNotForHost, "\(name): certificate verify failed: \(reason) (the certificate is not for \(host))")
        default:
            return WormholeError(.certificate, "\(name): certificate verify failed: \(reason)")
        }
    }

    /// The reason of OpenSSL's latest error on this thread (its queue cleared), or `fallback`.
    static func openSSLReason(fallback: String) -> String {
        var last: UInt = 0
        while case let e = ERR_get_error(), e != 0 { last = e }
        guard last != 0 else { return fallback }
        if let reason = ERR_reason_error_string(last) { return String(cString: reason) }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(last, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Hands bytes from the network to OpenSSL.
    private func feed(_ bytes: [UInt8]) {
        engine.withLock { e in
            _ = bytes.withUnsafeBytes { BIO_write(e.input, $0.baseAddress, Int32($0.count)) }
        }
    }

    /// Writes bytes OpenSSL made, in order (under the output lock by the caller, or alone).
    private func send(_ bytes: [UInt8], deadline: Deadline?) async throws(WormholeError) {
        guard !bytes.isEmpty else { return }
        try await stream.write(bytes, deadline: deadline)
    }

    /// Writes what OpenSSL holds for the network, after whatever another task is writing.
    private func flushOutput(deadline: Deadline?) async throws(WormholeError) {
        await outputLock.lock()
        defer { outputLock.unlock() }
        let out = engine.withLock { $0.drain() }
        try await send(out, deadline: deadline)
    }

    /// Reads what is there (waiting for something): up to `maximum` bytes of plaintext, or an empty
    /// array once the server closed (a TLS close, or the connection's end).
    /// - Throws: ``WormholeError`` (`.network` for the connection, `.server` for a TLS failure).
    func read(maximum: Int = 65_536, deadline: Deadline? = nil) async throws(WormholeError) -> [UInt8] {
        await readLock.lock()
        defer { readLock.unlock() }
        let name = self.name
        while true {
            enum ReadStep: Sendable { case data([UInt8], Bool), needInput(Bool), closed, failed(WormholeError) }
            let step: ReadStep = engine.withLock { e in
                ERR_clear_error()
                var buffer = [UInt8](repeating: 0, count: max(1, maximum))
                var n = 0
                let r = buffer.withUnsafeMutableBytes { SSL_read_ex(e.ssl, $0.baseAddress, $0.count, &n) }
                let code = SSL_get_error(e.ssl, r)
                let hasOutput = modem_bio_pending(e.output) > 0
                if r == 1 {
                    buffer.removeLast(buffer.count - n)
                    return .data(buffer, hasOutput)
                }
                switch code {
                case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needInput(hasOutput)
                case SSL_ERROR_ZERO_RETURN: return .closed
                default: return .failed(WormholeError(.server, "\(name): TLS: \(Self.openSSLReason(fallback: "error \(code)"))"))
                }
            }
            switch step {
            case .data(let bytes, let hasOutput):
                if hasOutput { try await flushOutput(deadline: deadline) }
                return bytes
            case .needInput(let hasOutput):
                if hasOutput { try await flushOutput(deadline: deadline) }
                let more = try await stream.read(maximum: Self.readChunk, deadline: deadline)
                if more.isEmpty { return [] }
                feed(more)
            case .closed:
                return []
            case .failed(let error):
                throw error
            }
        }
    }

    /// Writes all of `bytes` (as records of at most 16 KiB).
    /// - Throws: ``WormholeError`` (`.network`) when the peer is gone, the deadline passes or the task
    ///   is cancelled; `.server` for a TLS failure.
    func write(_ bytes: [UInt8], deadline: Deadline? = nil) async throws(WormholeError) {
        await outputLock.lock()
        defer { outputLock.unlock() }
        let name = self.name
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + Self.writeChunk)
            let result: Result<[UInt8], WormholeError> = engine.withLock { e in
                ERR_clear_error()
                var written = 0
                // Memory BIOs take everything, and with renegotiation refused a write never waits to read.
                let r = bytes[offset..<end].withUnsafeBytes { SSL_write_ex(e.ssl, $0.baseAddress, $0.count, &written) }
                guard r == 1, written == end - offset else {
                    let code = SSL_get_error(e.ssl, r)
                    return .failure(WormholeError(.network, "\(name): TLS: \(Self.openSSLReason(fallback: "the write failed (error \(code))"))"))
                }
                return .success(e.drain())
            }
            try await send(try result.get(), deadline: deadline)
            offset = end
        }
    }

    /// Says the TLS close (`close_notify`), then ends the sending direction; best effort, within 5 s.
    func shutdownWrite() async {
        await outputLock.lock()
        defer { outputLock.unlock() }
        let out = engine.withLock { e in
            ERR_clear_error()
            _ = SSL_shutdown(e.ssl)
            ERR_clear_error()
            return e.drain()
        }
        try? await send(out, deadline: TimerClock.continuous.deadline(after: 5))
        stream.shutdownWrite()
    }

    /// Closes the connection; pending reads and writes fail.
    func close() {
        stream.close()
    }
}
