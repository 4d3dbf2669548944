//! The HTTP clients of Oxydra's crates: one place that sets up reqwest's TLS.
//!
//! reqwest 0.13 is built with `rustls-no-provider` (its `rustls` feature would bring in
//! aws-lc, a C build with cmake). Such a reqwest panics when a client is built while no
//! rustls crypto provider is installed as the process default, even for a plain
//! `http://` URL. This crate keeps that from reaching anyone who uses only one of our
//! crates:
//!
//! - [`client_builder`] (and [`client`]) give a reqwest client whose TLS is set up here:
//!   the process default crypto provider if one is installed, rustls' `ring` otherwise,
//!   TLS 1.2 and 1.3, and Mozilla's root certificates compiled in (`webpki-roots`). This
//!   is what reqwest 0.12's `rustls-tls` feature did, so a provider, `web_fetch` and the
//!   model download trust the same servers as before. Nothing process-wide is changed.
//! - [`install_crypto_provider`] installs `ring` as the process default if no provider
//!   is installed yet, for the clients other crates build for us and whose TLS we do
//!   not set (rmcp's streamable-HTTP client, the OTLP exporter's). Those use reqwest
//!   0.13's own set-up: the operating system's trust store through
//!   `rustls-platform-verifier`.

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::sync::{Arc, Once};

use rustls::crypto::CryptoProvider;

/// The ALPN protocols offered, as reqwest offers them with its `http2` feature.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A reqwest client builder with Oxydra's TLS set-up (see the [crate] docs): rustls on
/// the process default provider or `ring`, Mozilla's roots, ALPN `h2` and `http/1.1`.
///
/// It works whether or not a crypto provider is installed, and installs none. reqwest's
/// own TLS options (`tls_certs_merge`, `tls_version_min`, `http1_only`'s ALPN …) do not
/// apply to a client built from it: its TLS configuration is already made.
pub fn client_builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    match tls_config() {
        Ok(config) => builder.tls_backend_preconfigured(config),
        // ring (or an installed provider) supports TLS 1.2 and 1.3, so this does not
        // happen; if it did, reqwest's own set-up runs, with ring installed for it.
        Err(_) => {
            install_crypto_provider();
            builder
        }
    }
}

/// A reqwest client from [`client_builder`] with reqwest's defaults otherwise.
///
/// Should that build fail (reqwest cannot start its DNS resolver), this returns
/// `reqwest::Client::new()` with `ring` installed, which fails as reqwest's own
/// default client does.
pub fn client() -> reqwest::Client {
    client_builder().build().unwrap_or_else(|_| {
        install_crypto_provider();
        reqwest::Client::new()
    })
}

/// Installs rustls' `ring` provider as the process default, unless a provider is
/// installed already (then that one stays). Clients that reqwest builds with its own
/// TLS set-up need one; call this before building or handing over such a client.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if CryptoProvider::get_default().is_none() {
            // Another thread may install one in between: either provider does.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The rustls configuration of [`client_builder`]: Mozilla's roots.
fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    tls_config_trusting(rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    })
}

/// A client configuration trusting `roots`, on the process default provider or `ring`,
/// with the versions rustls deems safe (1.2 and 1.3) and ALPN `h2`, `http/1.1`.
fn tls_config_trusting(
    roots: rustls::RootCertStore,
) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = ALPN.iter().map(|protocol| protocol.to_vec()).collect();
    Ok(config)
}

#[cfg(test)]
mod tests;
