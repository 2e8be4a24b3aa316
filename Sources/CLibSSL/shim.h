// OpenSSL's libssl for the wormhole client's wss:// (ModemWormhole's TLS/ folder). Several of libssl's
// calls are macros, which Swift cannot import: the small functions below name them.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>

/// SSL_set_tlsext_host_name: the name sent in SNI.
static inline int modem_ssl_set_sni(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION).
static inline int modem_ssl_ctx_minimum_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

/// Partial writes allowed and the buffer of a retried write free to move (Swift arrays may).
static inline void modem_ssl_ctx_set_modes(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
}

/// A memory BIO that says "retry" (not end of file) when empty.
static inline BIO *modem_bio_new_memory(void) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio != NULL) BIO_set_mem_eof_return(bio, -1);
    return bio;
}

/// BIO_pending: the bytes waiting in a memory BIO.
static inline size_t modem_bio_pending(BIO *bio) {
    return (size_t)BIO_pending(bio);
}
