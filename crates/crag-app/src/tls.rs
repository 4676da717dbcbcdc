//! TLS for both APIs (`server.tls_cert_path`, `server.tls_key_path`): the PEM files read and
//! checked once at start, so that a missing file, a file holding no certificate or a key that
//! does not match stops the server with a message naming the key, before it listens.

use std::fmt;
use std::sync::Arc;

use crate::compose::error::bail;
use crate::compose::{Context as _, Result};
use crag_config::ServerSection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The server's certificate chain and private key, as PEM.
#[derive(Clone)]
pub struct TlsIdentity {
    cert_pem: Arc<[u8]>,
    key_pem: Arc<[u8]>,
}

impl fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"[redacted]")
            .finish()
    }
}

impl TlsIdentity {
    /// Reads and checks the configured files; `None` when TLS is not configured.
    pub fn load(server: &ServerSection) -> Result<Option<Self>> {
        let Some((cert, key)) = server.tls() else {
            return Ok(None);
        };
        let cert_pem = std::fs::read(cert)
            .with_context(|| format!("server.tls_cert_path: cannot read {}", cert.display()))?;
        let key_pem = std::fs::read(key)
            .with_context(|| format!("server.tls_key_path: cannot read {}", key.display()))?;
        Self::from_pem(cert_pem, key_pem).map(Some)
    }

    /// An identity from PEM text, checked as [`TlsIdentity::load`] checks files.
    pub fn from_pem(cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Result<Self> {
        let identity = Self {
            cert_pem: cert_pem.into().into(),
            key_pem: key_pem.into().into(),
        };
        identity.server_config(&[])?;
        Ok(identity)
    }

    /// The certificate chain, as PEM.
    pub fn cert_pem(&self) -> &[u8] {
        &self.cert_pem
    }

    /// The private key, as PEM.
    pub fn key_pem(&self) -> &[u8] {
        &self.key_pem
    }

    /// A rustls server configuration (ring provider, TLS 1.2 and 1.3) offering `alpn`.
    pub fn server_config(&self, alpn: &[&[u8]]) -> Result<rustls::ServerConfig> {
        let chain = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<std::result::Result<Vec<_>, _>>()
            .context("server.tls_cert_path: not a PEM certificate chain")?;
        if chain.is_empty() {
            bail!("server.tls_cert_path: no certificate in the file");
        }
        let key = PrivateKeyDer::from_pem_slice(&self.key_pem).context(
            "server.tls_key_path: no PEM private key (PKCS#8, PKCS#1 or SEC1) in the file",
        )?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .context("server.tls_key_path: the key does not fit the certificate")?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }
}

/// Makes ring rustls's process-wide default provider (the first call; later ones do
/// nothing). Two providers are compiled in (ring for crag's own TLS, aws-lc-rs brought by
/// LanceDB's S3 client), so rustls cannot pick one itself and panics when code builds a TLS
/// configuration without naming one (tonic's server and client, an HTTPS object store):
/// every entry point calls this first.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generated() -> (String, String) {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        (key.cert.pem(), key.signing_key.serialize_pem())
    }

    #[test]
    fn a_matching_pair_loads_and_offers_alpn() {
        let (cert, key) = generated();
        let identity = TlsIdentity::from_pem(cert, key).unwrap();
        let config = identity.server_config(&[b"h2", b"http/1.1"]).unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(
            !format!("{identity:?}").contains("PRIVATE KEY"),
            "the key is never printed"
        );
    }

    #[test]
    fn bad_material_is_refused_naming_the_key() {
        let (cert, key) = generated();
        let (_, other_key) = generated();
        for (cert, key, expected) in [
            ("not pem".to_owned(), key.clone(), "server.tls_cert_path"),
            (cert.clone(), "not pem".to_owned(), "server.tls_key_path"),
            (key.clone(), key.clone(), "server.tls_cert_path"),
            (cert.clone(), other_key, "server.tls_key_path"),
        ] {
            let error = crate::error_chain(&TlsIdentity::from_pem(cert, key).unwrap_err());
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn files_are_read_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = generated();
        let mut server = ServerSection::default();
        assert!(
            TlsIdentity::load(&server).unwrap().is_none(),
            "off by default"
        );
        server.tls_cert_path = dir.path().join("cert.pem");
        server.tls_key_path = dir.path().join("key.pem");
        let error = crate::error_chain(&TlsIdentity::load(&server).unwrap_err());
        assert!(error.contains("server.tls_cert_path"), "{error}");
        std::fs::write(&server.tls_cert_path, cert).unwrap();
        std::fs::write(&server.tls_key_path, key).unwrap();
        assert!(TlsIdentity::load(&server).unwrap().is_some());
    }
}
