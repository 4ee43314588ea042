//! Certificates made with openssl for the TLS tests (the extender's verbs,
//! the admin port): CAs, server certificates for 127.0.0.1 and client
//! certificates, and a rustls client that trusts a CA and may present one.
//! A module of its own: only the tests that speak TLS depend on rustls.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;

/// A directory of keys and certificates: `NAME.pem` and `NAME.key`.
pub struct Pki {
    pub dir: PathBuf,
}

const EC: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

impl Pki {
    /// An empty directory tagged `tag`.
    pub fn new(tag: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("wasmsched-pki-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("client.ext"),
            "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
        )
        .unwrap();
        Pki { dir }
    }

    fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A self-signed CA `name`.
    pub fn ca(&self, name: &str) -> &Self {
        let (key, pem, subject) = (format!("{name}.key"), format!("{name}.pem"), format!("/CN={name}"));
        self.openssl(
            &[
                &["req", "-x509"][..],
                &EC,
                &["-days", "1", "-subj", &subject, "-keyout", &key, "-out", &pem],
            ]
            .concat(),
        );
        self
    }

    /// A certificate `name` for `subject`, signed by the CA `ca`: a
    /// server's for 127.0.0.1, or (not `server`) a client's.
    pub fn issue(&self, name: &str, subject: &str, ca: &str, server: bool) -> &Self {
        let (key, csr, pem) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
        self.openssl(&[&["req"][..], &EC, &["-subj", subject, "-keyout", &key, "-out", &csr]].concat());
        let (ca_pem, ca_key) = (format!("{ca}.pem"), format!("{ca}.key"));
        let ext = if server { "server.ext" } else { "client.ext" };
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            ext,
            "-out",
            &pem,
        ]);
        self
    }

    /// The path of a file of the directory.
    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).to_str().unwrap().to_owned()
    }

    /// A client that trusts the CA `ca`, presenting the certificate `who`
    /// when given.
    pub fn client(&self, ca: &str, who: Option<&str>) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(self.dir.join(format!("{ca}.pem"))).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match who {
            Some(who) => {
                let chain: Vec<_> = CertificateDer::pem_file_iter(self.dir.join(format!("{who}.pem")))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let key = PrivateKeyDer::from_pem_file(self.dir.join(format!("{who}.key"))).unwrap();
                builder.with_client_auth_cert(chain, key).unwrap()
            }
            None => builder.with_no_client_auth(),
        };
        Arc::new(config)
    }
}
