//! Clients built with no process-wide crypto provider, over plain HTTP and over TLS.
//! nextest runs each test in its own process, so none starts with a provider installed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::Response;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

use super::*;

const CA: &[u8] = include_bytes!("../tests/fixtures/ca.pem");
const LEAF: &[u8] = include_bytes!("../tests/fixtures/localhost.pem");
const LEAF_KEY: &[u8] = include_bytes!("../tests/fixtures/localhost.key");

/// A plain-HTTP server answering `plain` on `/`.
async fn http_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "plain" }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// An HTTP/2-only server over rustls (ALPN `h2` alone) with a certificate for
/// `localhost` from the test CA, answering `over TLS`.
async fn h2_tls_server() -> SocketAddr {
    let certs = CertificateDer::pem_slice_iter(LEAF)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(LEAF_KEY).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(|_request| async {
                    Ok::<_, Infallible>(Response::new(String::from("over TLS")))
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

fn test_ca() -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CA).unwrap())
        .unwrap();
    roots
}

/// The error and its sources, one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn a_client_built_with_no_provider_installed_sends_over_plain_http_and_installs_none() {
    assert!(CryptoProvider::get_default().is_none());
    let addr = http_server().await;
    let response = client()
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "plain");
    let built = client_builder().build().unwrap();
    let response = built.get(format!("http://{addr}/")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(CryptoProvider::get_default().is_none());
}

#[tokio::test]
async fn our_tls_config_speaks_h2_over_rustls_with_no_provider_installed() {
    assert!(CryptoProvider::get_default().is_none());
    let addr = h2_tls_server().await;
    // The configuration `client_builder` uses, trusting the test CA instead of Mozilla's.
    let config = tls_config_trusting(test_ca()).unwrap();
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .resolve("localhost", addr)
        .build()
        .unwrap();
    let response = client
        .get(format!("https://localhost:{}/", addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The server offers only h2: without our ALPN there would be no HTTP/2.
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.text().await.unwrap(), "over TLS");
    assert!(CryptoProvider::get_default().is_none());
}

#[tokio::test]
async fn the_default_client_checks_certificates_against_mozillas_roots() {
    let addr = h2_tls_server().await;
    let client = client_builder().resolve("localhost", addr).build().unwrap();
    let error = client
        .get(format!("https://localhost:{}/", addr.port()))
        .send()
        .await
        .unwrap_err();
    // The handshake ran (ring, no process provider) and refused the private CA.
    let text = chain(&error);
    assert!(text.contains("UnknownIssuer"), "{text}");
}

#[test]
fn install_crypto_provider_installs_ring_when_there_is_none() {
    assert!(CryptoProvider::get_default().is_none());
    install_crypto_provider();
    let installed = CryptoProvider::get_default().unwrap();
    assert_eq!(
        installed.cipher_suites.len(),
        rustls::crypto::ring::default_provider().cipher_suites.len()
    );
}

#[test]
fn an_installed_provider_is_kept_and_used() {
    let mut own = rustls::crypto::ring::default_provider();
    own.cipher_suites.truncate(1);
    own.install_default().unwrap();
    install_crypto_provider();
    assert_eq!(
        CryptoProvider::get_default().unwrap().cipher_suites.len(),
        1
    );
    let config = tls_config().unwrap();
    assert_eq!(config.crypto_provider().cipher_suites.len(), 1);
    assert_eq!(
        config.alpn_protocols,
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    );
}
