//! TLS with rustls for every transport: the settings Java's `dubbo.ssl.*` keys give
//! (read from a URL), the acceptor a server wraps accepted sockets in, and the
//! connector a client wraps its sockets in. Both sides bound the handshake in time.
//!
//! As Java's `SSLConfigCertProvider` decides: a server speaks TLS when it has a
//! certificate chain and a private key, and then refuses plaintext; with a trust
//! collection it requires and verifies a client certificate (Java's `CLIENT_AUTH`). A
//! client speaks TLS when it has a certificate chain and a private key (Java's rule),
//! or, unlike Java, a trust collection alone (TLS without a client certificate).

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rubbo_common::Url;
use rubbo_common::keys;
use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::debug;

/// How long a TLS handshake may take (Netty's `SslHandler` default, which Java uses).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS configuration or handshake error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("cannot read {what} {path}: {source}")]
    Read {
        /// Which file (`dubbo.ssl.*` key).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A PEM file holds nothing usable.
    #[error("bad {what} {path}: {reason}")]
    Pem {
        /// Which file (`dubbo.ssl.*` key).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Only one of a certificate chain and its private key was given.
    #[error("{given} is set but {missing} is not: TLS needs both")]
    Incomplete {
        /// The key that is set.
        given: &'static str,
        /// The key that is missing.
        missing: &'static str,
    },
    /// rustls refused the certificates or keys.
    #[error("invalid TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The client verifier could not be built from the trust collection.
    #[error("invalid trust collection for client certificates: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    /// The host to connect to is not a valid TLS server name.
    #[error("{host} is not a valid TLS server name")]
    ServerName {
        /// The host.
        host: String,
    },
    /// The handshake failed (bad or untrusted certificate, plaintext peer, ...).
    #[error("TLS handshake with {peer} failed: {source}")]
    Handshake {
        /// The peer address.
        peer: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The handshake did not finish in time.
    #[error("TLS handshake with {peer} did not finish within {timeout:?}")]
    HandshakeTimeout {
        /// The peer address.
        peer: String,
        /// The bound.
        timeout: Duration,
    },
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

fn pem_err(what: &'static str, path: &Path, reason: impl fmt::Display) -> TlsError {
    TlsError::Pem {
        what,
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

/// Every certificate in the PEM file at `path`; at least one.
fn load_certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_err(what, path, e))?;
    if certs.is_empty() {
        return Err(pem_err(what, path, "no CERTIFICATE in it"));
    }
    Ok(certs)
}

/// The private key in the PEM file at `path` (PKCS#8, PKCS#1 or SEC1).
fn load_key(
    what: &'static str,
    path: &Path,
    password: Option<&str>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(what, path)?;
    if pem
        .windows(b"ENCRYPTED PRIVATE KEY".len())
        .any(|w| w == b"ENCRYPTED PRIVATE KEY")
        || password.is_some_and(|p| !p.is_empty())
    {
        return Err(pem_err(
            what,
            path,
            "encrypted private keys (a key password) are not supported; give the key unencrypted (PKCS#8)",
        ));
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| pem_err(what, path, e))
}

fn trust_store(what: &'static str, path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(what, path)? {
        roots
            .add(cert)
            .map_err(|e| pem_err(what, path, format!("not a usable CA certificate: {e}")))?;
    }
    Ok(roots)
}

/// The platform's trusted CAs, for a client given no trust collection (Java then uses
/// the JDK's default trust store).
fn native_roots() -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(pem_err(
            "platform trust store",
            Path::new("(system)"),
            format!(
                "no CA certificate found ({} errors); set {}",
                found.errors.len(),
                keys::SSL_CLIENT_TRUST_CERT_COLLECTION_PATH_KEY
            ),
        ));
    }
    Ok(roots)
}

fn path_param<'a>(url: &'a Url, key: &str) -> Option<&'a Path> {
    url.get_param(key)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(Path::new)
}

/// A certificate chain and its key, both or neither.
fn pair<'a>(
    url: &'a Url,
    chain: &'static str,
    key: &'static str,
) -> Result<Option<(&'a Path, &'a Path)>, TlsError> {
    match (path_param(url, chain), path_param(url, key)) {
        (Some(c), Some(k)) => Ok(Some((c, k))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(TlsError::Incomplete {
            given: chain,
            missing: key,
        }),
        (None, Some(_)) => Err(TlsError::Incomplete {
            given: key,
            missing: chain,
        }),
    }
}

/// Accepts TLS on a server's sockets: built once per server from its URL.
#[derive(Clone)]
pub struct TlsAcceptor {
    inner: tokio_rustls::TlsAcceptor,
    mutual: bool,
    timeout: Duration,
}

impl TlsAcceptor {
    /// The acceptor the `dubbo.ssl.server-*` keys on `url` describe, or `None` when
    /// the URL has no server certificate (a plaintext server). `alpn` is what the
    /// server offers (`h2` for Triple; empty for the dubbo protocol).
    pub fn from_url(url: &Url, alpn: &[&[u8]]) -> Result<Option<TlsAcceptor>, TlsError> {
        let Some((chain, key)) = pair(
            url,
            keys::SSL_SERVER_KEY_CERT_CHAIN_PATH_KEY,
            keys::SSL_SERVER_PRIVATE_KEY_PATH_KEY,
        )?
        else {
            return Ok(None);
        };
        let trust = path_param(url, keys::SSL_SERVER_TRUST_CERT_COLLECTION_PATH_KEY);
        let password = url.get_param(keys::SSL_SERVER_KEY_PASSWORD_KEY);
        Self::from_pem_files(chain, key, password, trust, alpn).map(Some)
    }

    /// An acceptor from PEM files: the server's chain and key, and the CAs that
    /// sign client certificates (`Some`: mutual TLS, a client certificate required).
    pub fn from_pem_files(
        chain: &Path,
        key: &Path,
        password: Option<&str>,
        trust: Option<&Path>,
        alpn: &[&[u8]],
    ) -> Result<TlsAcceptor, TlsError> {
        let certs = load_certs(keys::SSL_SERVER_KEY_CERT_CHAIN_PATH_KEY, chain)?;
        let key = load_key(keys::SSL_SERVER_PRIVATE_KEY_PATH_KEY, key, password)?;
        let provider = provider();
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let builder = match trust {
            Some(path) => {
                let roots = trust_store(keys::SSL_SERVER_TRUST_CERT_COLLECTION_PATH_KEY, path)?;
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_single_cert(certs, key)?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(TlsAcceptor {
            inner: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            mutual: trust.is_some(),
            timeout: HANDSHAKE_TIMEOUT,
        })
    }

    /// Sets the handshake bound (default [`HANDSHAKE_TIMEOUT`]).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether clients must present a certificate.
    pub fn is_mutual(&self) -> bool {
        self.mutual
    }

    /// Runs the server side of the handshake on `io`, within the handshake bound.
    pub async fn accept<IO>(
        &self,
        io: IO,
        peer: SocketAddr,
    ) -> Result<tokio_rustls::server::TlsStream<IO>, TlsError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        match tokio::time::timeout(self.timeout, self.inner.accept(io)).await {
            Err(_) => Err(TlsError::HandshakeTimeout {
                peer: peer.to_string(),
                timeout: self.timeout,
            }),
            Ok(Err(source)) => Err(TlsError::Handshake {
                peer: peer.to_string(),
                source,
            }),
            Ok(Ok(stream)) => {
                let (_, session) = stream.get_ref();
                debug!(
                    %peer,
                    version = ?session.protocol_version(),
                    alpn = ?session.alpn_protocol().map(String::from_utf8_lossy),
                    client_cert = session.peer_certificates().is_some(),
                    "TLS handshake done"
                );
                Ok(stream)
            }
        }
    }
}

impl fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsAcceptor")
            .field("mutual", &self.mutual)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Opens TLS on a client's sockets: built once per set of client settings.
#[derive(Clone)]
pub struct TlsConnector {
    inner: tokio_rustls::TlsConnector,
    timeout: Duration,
}

impl TlsConnector {
    /// The connector the `dubbo.ssl.client-*` keys on `url` describe, or `None` for
    /// plaintext (neither a client certificate nor a trust collection). `alpn` is
    /// what the client offers (`h2` for Triple).
    pub fn from_url(url: &Url, alpn: &[&[u8]]) -> Result<Option<TlsConnector>, TlsError> {
        let own = pair(
            url,
            keys::SSL_CLIENT_KEY_CERT_CHAIN_PATH_KEY,
            keys::SSL_CLIENT_PRIVATE_KEY_PATH_KEY,
        )?;
        let trust = path_param(url, keys::SSL_CLIENT_TRUST_CERT_COLLECTION_PATH_KEY);
        if own.is_none() && trust.is_none() {
            return Ok(None);
        }
        let password = url.get_param(keys::SSL_CLIENT_KEY_PASSWORD_KEY);
        Self::from_pem_files(own, password, trust, alpn).map(Some)
    }

    /// A connector from PEM files: the client's own chain and key (for mutual TLS),
    /// and the CAs that sign server certificates (`None`: the platform's).
    pub fn from_pem_files(
        own: Option<(&Path, &Path)>,
        password: Option<&str>,
        trust: Option<&Path>,
        alpn: &[&[u8]],
    ) -> Result<TlsConnector, TlsError> {
        let roots = match trust {
            Some(path) => trust_store(keys::SSL_CLIENT_TRUST_CERT_COLLECTION_PATH_KEY, path)?,
            None => native_roots()?,
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots);
        let mut config = match own {
            Some((chain, key)) => {
                let certs = load_certs(keys::SSL_CLIENT_KEY_CERT_CHAIN_PATH_KEY, chain)?;
                let key = load_key(keys::SSL_CLIENT_PRIVATE_KEY_PATH_KEY, key, password)?;
                builder.with_client_auth_cert(certs, key)?
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(TlsConnector {
            inner: tokio_rustls::TlsConnector::from(Arc::new(config)),
            timeout: HANDSHAKE_TIMEOUT,
        })
    }

    /// Sets the handshake bound (default [`HANDSHAKE_TIMEOUT`]).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs the client side of the handshake on `io` with the server at `addr`
    /// (`host:port`; the host, a name or an IP address, is what the server's
    /// certificate must name), within the handshake bound.
    pub async fn connect<IO>(
        &self,
        addr: &str,
        io: IO,
    ) -> Result<tokio_rustls::client::TlsStream<IO>, TlsError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let host = host_of(addr);
        let name = ServerName::try_from(host.to_owned()).map_err(|_| TlsError::ServerName {
            host: host.to_owned(),
        })?;
        match tokio::time::timeout(self.timeout, self.inner.connect(name, io)).await {
            Err(_) => Err(TlsError::HandshakeTimeout {
                peer: addr.to_owned(),
                timeout: self.timeout,
            }),
            Ok(Err(source)) => Err(TlsError::Handshake {
                peer: addr.to_owned(),
                source,
            }),
            Ok(Ok(stream)) => {
                let (_, session) = stream.get_ref();
                debug!(
                    peer = addr,
                    version = ?session.protocol_version(),
                    alpn = ?session.alpn_protocol().map(String::from_utf8_lossy),
                    "TLS handshake done"
                );
                Ok(stream)
            }
        }
    }
}

impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConnector")
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The host of `host:port` or `[v6]:port`, without brackets.
fn host_of(addr: &str) -> &str {
    let host = match addr.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    };
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The settings of `url` that decide its client TLS, as one string: references with
/// the same string can share connections.
pub fn client_key(url: &Url) -> String {
    keys::SSL_CLIENT_KEYS
        .iter()
        .map(|k| url.get_param(k).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_strips_port_and_brackets() {
        assert_eq!(host_of("127.0.0.1:20880"), "127.0.0.1");
        assert_eq!(host_of("[::1]:50051"), "::1");
        assert_eq!(host_of("example.org"), "example.org");
    }

    #[test]
    fn no_keys_means_plaintext_and_half_a_pair_is_an_error() {
        let plain = Url::parse("dubbo://127.0.0.1:1/S").unwrap();
        assert!(TlsAcceptor::from_url(&plain, &[]).unwrap().is_none());
        assert!(TlsConnector::from_url(&plain, &[]).unwrap().is_none());
        let half = Url::parse("dubbo://127.0.0.1:1/S?server-key-cert-chain-path=/x.pem").unwrap();
        let err = TlsAcceptor::from_url(&half, &[]).unwrap_err();
        assert!(err.to_string().contains("server-private-key-path"), "{err}");
    }

    #[test]
    fn a_missing_file_names_its_key_and_path() {
        let url = Url::parse(
            "dubbo://127.0.0.1:1/S?server-key-cert-chain-path=/nonexistent/c.pem&server-private-key-path=/nonexistent/k.pem",
        )
        .unwrap();
        let err = TlsAcceptor::from_url(&url, &[]).unwrap_err().to_string();
        assert!(err.contains("server-key-cert-chain-path"), "{err}");
        assert!(err.contains("/nonexistent/c.pem"), "{err}");
    }
}
