//! `ProviderConfig::new`'s client needs no process-wide rustls crypto provider: reqwest
//! 0.13 built without one panics when a client uses its own TLS set-up, even for
//! `http://`. nextest runs each test in its own process, so none is installed here.

use rustls::crypto::CryptoProvider;

use crate::request_shape::keyless_hello;

#[tokio::test]
async fn a_default_config_completes_with_no_crypto_provider_installed_and_installs_none() {
    assert!(CryptoProvider::get_default().is_none());
    let (_server, text) = keyless_hello().await;
    assert_eq!(text, "hello");
    assert!(CryptoProvider::get_default().is_none());
}
