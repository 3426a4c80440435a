//! Where the team cache lives and how to reach it: the connection URL read into
//! tokio-postgres's settings, `sslmode` as libpq means it (rustls with the system's root
//! certificates, or `sslrootcert`), `PGPASSWORD`, and a form of the address safe to print.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, Error as TlsError, RootCertStore, SignatureScheme};
use tokio_postgres::config::{Host, SslMode};

use super::TeamError;

/// How the connection is encrypted and checked, as libpq's `sslmode` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    Disable,
    /// TLS when the server offers it, unchecked (libpq's default).
    Prefer,
    /// TLS always, the certificate unchecked.
    Require,
    /// TLS always, the certificate signed by a trusted root; any host name.
    VerifyCa,
    /// TLS always, the certificate signed by a trusted root and naming the host.
    VerifyFull,
}

/// A parsed team cache address.
#[derive(Clone)]
pub struct Target {
    pub config: tokio_postgres::Config,
    pub tls: TlsMode,
    root_cert: Option<PathBuf>,
    /// `postgres://user@host:port/db`: what logs, errors and status may show.
    pub shown: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Target {
    /// Reads a `postgres://` URL (or a `key=value` connection string). `sslmode` and
    /// `sslrootcert` are taken out here (tokio-postgres knows only the first three modes);
    /// a URL without a password takes `PGPASSWORD`'s, if set.
    pub fn parse(url: &str, pgpassword: Option<&str>) -> Result<Target, TeamError> {
        let url = url.trim();
        let (kept, tls, root_cert) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            split_url(url)?
        } else if let Some((scheme, _)) = url.split_once("://")
            && !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(TeamError::Config(format!(
                "the address starts with {scheme}://, not postgres:// or postgresql:// (or is key=value pairs)"
            )));
        } else {
            split_key_values(url)?
        };
        let mut config: tokio_postgres::Config = kept.parse().map_err(|e: tokio_postgres::Error| {
            // tokio-postgres says which option is wrong only in the error's source.
            let reason = match std::error::Error::source(&e) {
                Some(source) => format!("{e}: {source}"),
                None => e.to_string(),
            };
            TeamError::Config(scrub(&reason, url))
        })?;
        if config.get_password().is_none()
            && let Some(password) = pgpassword.filter(|p| !p.is_empty())
        {
            config.password(password);
        }
        if config.get_hosts().is_empty() {
            return Err(TeamError::Config("the team cache's address names no host".to_string()));
        }
        config.ssl_mode(match tls {
            TlsMode::Disable => SslMode::Disable,
            TlsMode::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        });
        config.application_name("situate");
        let shown = shown(&config);
        Ok(Target { config, tls, root_cert, shown })
    }

    /// The rustls settings for this address's `sslmode`.
    pub fn tls_config(&self) -> Result<ClientConfig, TeamError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TeamError::Config(format!("tls: {e}")))?;
        if matches!(self.tls, TlsMode::Disable | TlsMode::Prefer | TlsMode::Require) {
            // libpq checks no certificate in these modes; the connection is still encrypted.
            return Ok(builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth());
        }
        let mut roots = RootCertStore::empty();
        match &self.root_cert {
            Some(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| TeamError::Config(format!("sslrootcert {}: {e}", path.display())))?;
                roots.add_parsable_certificates(certs);
            }
            None => {
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
        }
        if roots.is_empty() {
            return Err(TeamError::Config(
                "no trusted root certificates to check the team cache's server with (sslrootcert, or the system's)"
                    .to_string(),
            ));
        }
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| TeamError::Config(format!("tls: {e}")))?;
        let verifier: Arc<dyn ServerCertVerifier> =
            if self.tls == TlsMode::VerifyCa { Arc::new(AnyName(webpki)) } else { webpki };
        Ok(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth())
    }
}

fn mode(value: &str) -> Result<TlsMode, TeamError> {
    Ok(match value {
        "disable" | "allow" => TlsMode::Disable,
        "prefer" => TlsMode::Prefer,
        "require" => TlsMode::Require,
        "verify-ca" => TlsMode::VerifyCa,
        "verify-full" => TlsMode::VerifyFull,
        other => {
            return Err(TeamError::Config(format!(
                "sslmode {other:?} is not one of disable, prefer, require, verify-ca, verify-full"
            )));
        }
    })
}

/// The URL without the TLS parameters, which are returned apart.
fn split_url(url: &str) -> Result<(String, TlsMode, Option<PathBuf>), TeamError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut tls = TlsMode::Prefer;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => tls = mode(value)?,
            "sslrootcert" => root_cert = Some(PathBuf::from(percent_decoded(value))),
            _ => kept.push(pair),
        }
    }
    let kept = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    Ok((kept, tls, root_cert))
}

/// A `key=value` connection string without the TLS parameters (values without spaces).
fn split_key_values(dsn: &str) -> Result<(String, TlsMode, Option<PathBuf>), TeamError> {
    let mut tls = TlsMode::Prefer;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for pair in dsn.split_whitespace() {
        match pair.split_once('=') {
            Some(("sslmode", value)) => tls = mode(value.trim_matches('\''))?,
            Some(("sslrootcert", value)) => root_cert = Some(PathBuf::from(value.trim_matches('\''))),
            _ => kept.push(pair),
        }
    }
    Ok((kept.join(" "), tls, root_cert))
}

fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `postgres://user@host:port/db`, with no password in any form.
fn shown(config: &tokio_postgres::Config) -> String {
    let user = config.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(n, host)| {
            let name = match host {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            };
            match ports.get(n).or(ports.first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    let db = config.get_dbname().map(|d| format!("/{d}")).unwrap_or_default();
    format!("postgres://{user}{}{db}", hosts.join(","))
}

/// An error text with any password of `url` taken out (tokio-postgres quotes bad values).
pub fn scrub(text: &str, url: &str) -> String {
    let mut text = text.to_string();
    for secret in passwords_in(url) {
        if secret.len() >= 2 {
            text = text.replace(&secret, "****");
        }
    }
    text
}

fn passwords_in(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(rest) = url.split_once("://").map(|(_, r)| r)
        && let Some((userinfo, _)) = rest.split_once('@')
        && let Some((_, password)) = userinfo.split_once(':')
    {
        found.push(password.to_string());
        found.push(percent_decoded(password));
    }
    for pair in url.split(['?', '&', ' ']) {
        if let Some(value) = pair.strip_prefix("password=") {
            found.push(value.trim_matches('\'').to_string());
            found.push(percent_decoded(value));
        }
    }
    found
}

/// libpq's `require` and `prefer`: encrypted, the certificate not checked.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// libpq's `verify-ca`: the chain is checked, the host name is not.
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(TlsError::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(TlsError::InvalidCertificate(rustls::CertificateError::NotValidForNameContext {
                ..
            })) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        let t =
            Target::parse("postgres://alice:s3cret@db.example:6543/wiki?sslmode=verify-full", None).unwrap();
        assert_eq!(t.shown, "postgres://alice@db.example:6543/wiki");
        assert_eq!(t.tls, TlsMode::VerifyFull);
        assert_eq!(t.config.get_password(), Some(&b"s3cret"[..]));
        assert!(!format!("{t:?}").contains("s3cret"));
    }

    #[test]
    fn pgpassword_fills_a_missing_password_only() {
        let t = Target::parse("postgres://bob@h/db", Some("fromenv")).unwrap();
        assert_eq!(t.config.get_password(), Some(&b"fromenv"[..]));
        let t = Target::parse("postgres://bob:given@h/db", Some("fromenv")).unwrap();
        assert_eq!(t.config.get_password(), Some(&b"given"[..]));
    }

    #[test]
    fn key_value_strings_and_tls_parameters_are_read() {
        let t = Target::parse("host=h port=5433 user=u dbname=d sslmode=require sslrootcert=/x.pem", None)
            .unwrap();
        assert_eq!(t.tls, TlsMode::Require);
        assert_eq!(t.root_cert.as_deref(), Some(std::path::Path::new("/x.pem")));
        assert_eq!(t.shown, "postgres://u@h:5433/d");
        assert_eq!(Target::parse("postgres://h/d", None).unwrap().tls, TlsMode::Prefer);
    }

    #[test]
    fn bad_addresses_are_clear_errors_without_secrets() {
        let e = Target::parse("postgres://u:pw12@h/d?sslmode=sometimes", None).unwrap_err().to_string();
        assert!(e.contains("sslmode"), "{e}");
        let e = Target::parse("postgres://u:pw12@h/d?bogus=1", None).unwrap_err().to_string();
        assert!(!e.contains("pw12"), "{e}");
        assert_eq!(scrub("password pw%40x failed", "postgres://u:pw%40x@h"), "password **** failed");
        let e = Target::parse("postgres://u:pw12@h:99999/d", None).unwrap_err().to_string();
        assert!(e.ends_with("invalid connection string: invalid value for option `port`"), "{e}");
        let e = Target::parse("postgress://u:pw12@h/d", None).unwrap_err().to_string();
        assert!(e.contains("starts with postgress://, not postgres://") && !e.contains("pw12"), "{e}");
        let e = Target::parse("host=h password='a://b' port=x", None).unwrap_err().to_string();
        assert!(e.contains("option `port`") && !e.contains("a://b"), "{e}");
    }
}
