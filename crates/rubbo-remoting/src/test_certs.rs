//! Certificates for tests and interop runs (feature `test-certs`): a CA, a server
//! certificate for `127.0.0.1` and `localhost`, a client certificate the CA signs, and
//! one signed by another CA (untrusted), written as PEM files Java and Rubbo both read.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

/// The PEM files [`generate`] writes, by role.
#[derive(Debug, Clone)]
pub struct TestCerts {
    /// The CA that signs the server and the trusted client (`ca.pem`).
    pub ca: PathBuf,
    /// The server's chain (`server.pem`) and key (`server.key`).
    pub server_chain: PathBuf,
    /// The server's private key, PKCS#8.
    pub server_key: PathBuf,
    /// A client certificate the CA signs (`client.pem`, `client.key`).
    pub client_chain: PathBuf,
    /// Its key.
    pub client_key: PathBuf,
    /// A client certificate another CA signs (`rogue-client.pem`, `rogue-client.key`).
    pub rogue_chain: PathBuf,
    /// Its key.
    pub rogue_key: PathBuf,
    /// The other CA (`rogue-ca.pem`), trusted by no one.
    pub rogue_ca: PathBuf,
}

/// An error while generating or writing certificates.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertError {
    /// rcgen failed.
    #[error("cannot generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

fn new_ca(name: &str) -> Result<CertifiedIssuer<'static, KeyPair>, CertError> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut p);
    Ok(CertifiedIssuer::self_signed(p, KeyPair::generate()?)?)
}

fn validity(p: &mut CertificateParams) {
    p.not_before = rcgen::date_time_ymd(2024, 1, 1);
    p.not_after = rcgen::date_time_ymd(2099, 1, 1);
}

/// A leaf certificate signed by `issuer`: its PEM chain and key.
fn leaf(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    name: &str,
    usage: ExtendedKeyUsagePurpose,
) -> Result<(String, String), CertError> {
    let mut p = CertificateParams::new(vec!["localhost".to_owned()])?;
    p.subject_alt_names
        .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![usage];
    validity(&mut p);
    let key = KeyPair::generate()?;
    let cert = p.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, CertError> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| CertError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Generates fresh certificates and writes them into `dir` (which must exist).
pub fn generate(dir: &Path) -> Result<TestCerts, CertError> {
    let ca = new_ca("Rubbo test CA")?;
    let rogue_ca = new_ca("Rubbo untrusted CA")?;
    let (server, server_key) = leaf(&ca, "rubbo-server", ExtendedKeyUsagePurpose::ServerAuth)?;
    let (client, client_key) = leaf(&ca, "rubbo-client", ExtendedKeyUsagePurpose::ClientAuth)?;
    let (rogue, rogue_key) = leaf(
        &rogue_ca,
        "rubbo-rogue-client",
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;
    Ok(TestCerts {
        ca: write(dir, "ca.pem", &ca.pem())?,
        server_chain: write(dir, "server.pem", &server)?,
        server_key: write(dir, "server.key", &server_key)?,
        client_chain: write(dir, "client.pem", &client)?,
        client_key: write(dir, "client.key", &client_key)?,
        rogue_chain: write(dir, "rogue-client.pem", &rogue)?,
        rogue_key: write(dir, "rogue-client.key", &rogue_key)?,
        rogue_ca: write(dir, "rogue-ca.pem", &rogue_ca.pem())?,
    })
}
