//! TLS for the admin port and the extender's verbs: a server configuration
//! from PEM files, or a self-signed certificate made at start (as
//! kube-scheduler makes one when it is given none), optionally requiring a
//! client certificate signed by a given CA (kube-scheduler's extender
//! client presents one with `tlsConfig.certFile`); and a listener whose
//! handshakes run concurrently, each bounded in time, so a client that
//! never finishes its handshake holds nobody else up.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::rustls;

/// Longest a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes under way at most; more connections wait in the kernel's
/// backlog.
const MAX_HANDSHAKES: usize = 128;

/// A certificate chain and its key, as PEM files.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// The chain, leaf first.
    pub cert: PathBuf,
    /// The leaf's private key.
    pub key: PathBuf,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM file; an error names the file.
pub fn read_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    anyhow::ensure!(!certs.is_empty(), "{}: no certificate in it", path.display());
    Ok(certs)
}

/// A certificate for `names` (DNS names or IP addresses) signed by its own
/// key, valid for a year: what the admin port serves when no certificate
/// is given. Clients that must verify the server are given a certificate
/// of the cluster's instead.
pub fn self_signed(names: &[String]) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let mut params = rcgen::CertificateParams::new(names.to_vec())
        .map_err(|e| anyhow::anyhow!("cannot make a self-signed certificate for {names:?}: {e}"))?;
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, format!("wasmsched@{}", unix_now()));
    params.distinguished_name = dn;
    let now = std::time::SystemTime::now();
    params.not_before = now.into();
    params.not_after = (now + Duration::from_secs(365 * 24 * 3600)).into();
    let key = rcgen::KeyPair::generate().map_err(|e| anyhow::anyhow!("cannot make a key: {e}"))?;
    let cert = params
        .self_signed(&key)
        .map_err(|e| anyhow::anyhow!("cannot sign the certificate: {e}"))?;
    let key = PrivateKeyDer::try_from(key.serialize_der()).map_err(|e| anyhow::anyhow!("the key: {e}"))?;
    Ok((vec![cert.der().clone()], key))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The names a self-signed admin certificate is made for: `localhost`,
/// the loopback addresses, the host's name and the address it listens on.
pub fn default_names(listen: SocketAddr) -> Vec<String> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    if let Ok(h) = std::fs::read_to_string("/etc/hostname")
        && !h.trim().is_empty()
    {
        names.push(h.trim().to_owned());
    }
    if !listen.ip().is_unspecified() {
        names.push(listen.ip().to_string());
    }
    names.dedup();
    names
}

/// Whether a client certificate is asked for, and what of one that is
/// not presented.
#[derive(Debug, Clone, Copy)]
pub enum ClientCerts<'a> {
    /// None asked for.
    None,
    /// Every connection must present one signed by this CA.
    Required(&'a Path),
    /// One signed by this CA is checked when presented (it names the
    /// user); a connection without one goes on (a token may name it).
    Optional(&'a Path),
}

/// A server configuration: the certificate of `files` (or self-signed for
/// `names`), and the client certificates `clients` says.
pub fn server_config(
    files: Option<&CertFiles>,
    names: &[String],
    clients: ClientCerts<'_>,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let (certs, key) = match files {
        Some(f) => (
            read_certs(&f.cert)?,
            PrivateKeyDer::from_pem_file(&f.key).map_err(|e| anyhow::anyhow!("{}: {e}", f.key.display()))?,
        ),
        None => self_signed(names)?,
    };
    let builder = rustls::ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let (ca, optional) = match clients {
        ClientCerts::None => (None, false),
        ClientCerts::Required(ca) => (Some(ca), false),
        ClientCerts::Optional(ca) => (Some(ca), true),
    };
    let builder = match ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in read_certs(ca)? {
                roots
                    .add(c)
                    .map_err(|e| anyhow::anyhow!("{}: not a CA certificate: {e}", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
            let verifier = if optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| anyhow::anyhow!("{}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| anyhow::anyhow!("the TLS certificate and key do not go together: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Who is at the other end of a TLS connection: its address, and the
/// client certificate it presented, verified against the configured CA.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The remote address.
    pub addr: SocketAddr,
    /// The leaf of the verified client certificate, if one was presented.
    pub certificate: Option<CertificateDer<'static>>,
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// TCP connections made TLS before axum reads them. Handshakes run in
/// tasks of their own, at most [`MAX_HANDSHAKES`] at once, each within
/// [`HANDSHAKE_TIMEOUT`]; a failed one drops that connection only.
pub struct TlsListener {
    ready: mpsc::Receiver<(tokio_rustls::server::TlsStream<tokio::net::TcpStream>, Peer)>,
    local: Peer,
}

impl TlsListener {
    /// Accepts on `tcp` with `config`; `what` names the port in logs.
    pub fn new(tcp: tokio::net::TcpListener, config: Arc<rustls::ServerConfig>, what: &'static str) -> Self {
        let local = Peer {
            addr: tcp.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
            certificate: None,
        };
        let (tx, ready) = mpsc::channel(32);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let slots = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    // The server stopped: stop accepting.
                    _ = tx.closed() => return,
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => (slot, tcp.accept().await),
                        Err(_) => return,
                    },
                };
                let (slot, (conn, addr)) = match accepted {
                    (slot, Ok(c)) => (slot, c),
                    (_, Err(e)) => {
                        // Out of file descriptors and the like: wait, go on.
                        tracing::warn!(error = %e, "accepting a connection on the {what} port failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let _slot = slot;
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(conn)).await {
                        Ok(Ok(tls)) => {
                            let certificate = tls
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .map(|c| c.clone().into_owned());
                            let _ = tx.send((tls, Peer { addr, certificate })).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%addr, error = %e, "TLS handshake on the {what} port failed"),
                        Err(_) => tracing::debug!(%addr, "TLS handshake on the {what} port timed out"),
                    }
                });
            }
        });
        Self { ready, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accepting task ended: nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local.clone())
    }
}

/// A client configuration that trusts the certificates of `ca`, or, with
/// none, any certificate (for a self-signed admin port reached through a
/// port-forward; the bearer token is still needed to read it).
pub fn client_config(ca: Option<&Path>) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let builder = rustls::ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let config = match ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in read_certs(ca)? {
                roots
                    .add(c)
                    .map_err(|e| anyhow::anyhow!("{}: not a CA certificate: {e}", ca.display()))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider())))
            .with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Accepts any server certificate, checking only that the handshake is
/// signed by its key (`insecureSkipVerify`, a self-signed admin port).
#[derive(Debug)]
pub(crate) struct AnyCertificate(pub(crate) Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_certificate_serves() {
        let config = server_config(None, &default_names("127.0.0.1:0".parse().unwrap()), ClientCerts::None).unwrap();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
    }

    #[test]
    fn errors_name_the_file() {
        let files = CertFiles {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
        };
        let e = server_config(Some(&files), &[], ClientCerts::None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/cert.pem"), "{e}");
    }
}
