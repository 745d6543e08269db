//! `socket` (contract 0.1.4): TCP, optionally TLS, to the host:port pairs
//! an extension was granted. The host resolves the name and checks every
//! address before connecting: an internal address (loopback, private,
//! link-local, ...) only when the person granted exactly that host and
//! port in their settings, never on the manifest's word alone. Components
//! never see an address or open a socket themselves (WASI sockets stay
//! off), so a grant cannot be widened by resolving names or by a DNS
//! rebinding between check and connect. Time spent waiting on the network
//! does not count against the guest's deadline; cancelling the turn
//! aborts the wait.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use wasmtime::component::Resource;

use crate::manifest::HostPattern;
use crate::runtime::contract::v0_1::stud::extension::socket as s;
use crate::runtime::host_state::HostState;
use crate::runtime::net::is_internal;
use crate::runtime::services::{ErrorClass, ExtError, ext_error};

/// Longest wait for a connection (name lookup, TCP, TLS handshake).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait for bytes to arrive, or to be taken.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Most bytes one `read` returns.
const MAX_READ: u32 = 1 << 20;

/// Hosts on one port an extension may connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketGrant {
    /// The host (or `*.domain`), with its port.
    pub host: HostPattern,
    pub port: u16,
    /// The person granted exactly this host and port (global settings
    /// `sockets.<id>`): internal addresses are allowed for it.
    pub by_person: bool,
    /// The only roots TLS to this host and port trusts (PEM file), where
    /// the person named them (a session store's `sslrootcert`); else the
    /// web's.
    pub roots: Option<std::path::PathBuf>,
}

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin> Stream for T {}

/// The bytes' way: in the clear until `start-tls` (or `connect`'s `tls`).
enum Link {
    Plain(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
    /// A TLS handshake failed midway: nothing more goes over it.
    Broken,
}

/// An open connection, held in the instance's resource table.
pub struct Connection {
    link: Link,
    peer: String,
    host: String,
    roots: Option<std::path::PathBuf>,
}

impl Connection {
    fn stream(&mut self) -> Result<&mut dyn Stream, ExtError> {
        match &mut self.link {
            Link::Plain(t) => Ok(t),
            Link::Tls(t) => Ok(&mut **t),
            Link::Broken => Err(network(
                "socket-tls",
                format!("the connection to {} broke in its TLS handshake", self.peer),
            )),
        }
    }
}

fn refused(code: &str, message: String) -> ExtError {
    ext_error(ErrorClass::ToolTerminal, code, message)
}

fn network(code: &str, message: String) -> ExtError {
    ext_error(ErrorClass::ProviderTransient, code, message)
}

fn cancelled() -> ExtError {
    ext_error(
        ErrorClass::Cancellation,
        "cancelled",
        "the connection was cancelled",
    )
}

/// The TLS settings of connections checked against the web's roots, with
/// ring's primitives. `None` if they cannot be put together (never seen).
fn tls_config() -> Option<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<Option<Arc<rustls::ClientConfig>>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            with_roots(rustls::RootCertStore::from_iter(
                webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
            ))
        })
        .clone()
}

fn with_roots(roots: rustls::RootCertStore) -> Option<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()
        .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
}

/// The TLS settings for a connection: the person's roots for it, else the
/// web's.
fn config_for(roots: Option<&std::path::Path>) -> Result<Arc<rustls::ClientConfig>, ExtError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let Some(path) = roots else {
        return tls_config()
            .ok_or_else(|| network("socket-tls", "TLS is not available in this build".into()));
    };
    let bad = |why: String| {
        refused(
            "socket-tls-roots",
            format!("the TLS roots `{}`: {why}", path.display()),
        )
    };
    let mut store = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    for cert in certs {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        store.add(cert).map_err(|e| bad(e.to_string()))?;
    }
    if store.is_empty() {
        return Err(bad("it holds no certificate".into()));
    }
    with_roots(store)
        .ok_or_else(|| network("socket-tls", "TLS is not available in this build".into()))
}

/// TLS over `tcp`, the certificate checked for `host`.
async fn handshake(
    tcp: tokio::net::TcpStream,
    host: &str,
    port: u16,
    roots: Option<&std::path::Path>,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, ExtError> {
    let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| {
        refused(
            "input-invalid",
            format!("`{host}` is not a TLS server name: {e}"),
        )
    })?;
    tokio_rustls::TlsConnector::from(config_for(roots)?)
        .connect(name, tcp)
        .await
        .map_err(|e| {
            network(
                "socket-tls",
                format!("TLS with `{host}:{port}` failed: {e}"),
            )
        })
}

impl HostState {
    /// The grant that covers `host`:`port`, or why none does.
    fn socket_grant(&self, host: &str, port: u16) -> Result<SocketGrant, ExtError> {
        let id = &self.ext.id;
        // The person's own grant first: it is the one that allows an
        // internal address.
        let mut covering: Vec<&SocketGrant> = self
            .ext
            .sockets
            .iter()
            .filter(|g| g.port == port && g.host.matches(host, port))
            .collect();
        covering.sort_by_key(|g| !g.by_person);
        covering
            .first()
            .map(|g| (*g).clone())
            .ok_or_else(|| {
                refused(
                    "socket-denied",
                    format!(
                        "extension `{id}` may not connect to `{host}:{port}`: it is not granted; its manifest must list it under [capabilities] sockets (or `*:{port}`), and for `*` or an internal address you grant it in your global settings: \"sockets\": {{\"{id}\": [\"{host}:{port}\"]}}"
                    ),
                )
            })
    }
}

/// Resolve, check each address, connect to the first that answers.
async fn open(
    id: &crate::manifest::ExtensionId,
    host: &str,
    grant: &SocketGrant,
) -> Result<(tokio::net::TcpStream, SocketAddr), ExtError> {
    let port = grant.port;
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| network("socket-resolve", format!("cannot resolve `{host}`: {e}")))?
        .collect();
    let mut last = None;
    let mut internal = None;
    for addr in addrs {
        if is_internal(addr.ip()) && !grant.by_person {
            internal = Some(addr);
            continue;
        }
        match tokio::net::TcpStream::connect(addr).await {
            Ok(stream) => return Ok((stream, addr)),
            Err(e) => last = Some(format!("{addr}: {e}")),
        }
    }
    Err(match (last, internal) {
        (Some(why), _) => network(
            "socket-connect",
            format!("cannot connect to `{host}:{port}` ({why})"),
        ),
        (None, Some(addr)) => refused(
            "socket-denied",
            format!(
                "extension `{id}` may not connect to `{host}:{port}`: it resolves to the internal address {}, which is refused unless you grant exactly that host and port in your global settings: \"sockets\": {{\"{id}\": [\"{host}:{port}\"]}}",
                addr.ip()
            ),
        ),
        (None, None) => network("socket-resolve", format!("`{host}` resolves to no address")),
    })
}

impl s::Host for HostState {
    async fn connect(
        &mut self,
        host: String,
        port: u16,
        tls: bool,
    ) -> wasmtime::Result<Result<Resource<Connection>, ExtError>> {
        if let Err(message) = self.effects_allowed("socket.connect") {
            return Ok(Err(refused("effect-outside-call", message)));
        }
        let grant = match self.socket_grant(&host, port) {
            Ok(g) => g,
            Err(e) => return Ok(Err(e)),
        };
        let id = self.ext.id.clone();
        let cancel = self.deadline.cancelled();
        let paused = self.deadline.pause();
        let opened = async {
            let (tcp, addr) = open(&id, &host, &grant).await?;
            let _ = tcp.set_nodelay(true);
            let link = if tls {
                Link::Tls(Box::new(
                    handshake(tcp, &host, port, grant.roots.as_deref()).await?,
                ))
            } else {
                Link::Plain(tcp)
            };
            Ok::<_, ExtError>((link, addr))
        };
        let result = tokio::select! {
            r = tokio::time::timeout(CONNECT_TIMEOUT, opened) => r.unwrap_or_else(|_| {
                Err(network("socket-timeout", format!("connecting to `{host}:{port}` took longer than {} s", CONNECT_TIMEOUT.as_secs())))
            }),
            _ = cancel => Err(cancelled()),
        };
        drop(paused);
        let (link, addr) = match result {
            Ok(x) => x,
            Err(e) => return Ok(Err(e)),
        };
        let handle = self.table().push(Connection {
            link,
            peer: format!("{host}:{port} ({addr})"),
            host,
            roots: grant.roots,
        })?;
        Ok(Ok(handle))
    }
}

impl s::HostConnection for HostState {
    async fn read(
        &mut self,
        this: Resource<Connection>,
        max: u32,
    ) -> wasmtime::Result<Result<Vec<u8>, ExtError>> {
        let cancel = self.deadline.cancelled();
        let paused = self.deadline.pause();
        let conn = self.table().get_mut(&this)?;
        let peer = conn.peer.clone();
        let stream = match conn.stream() {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let mut buf = vec![0u8; max.clamp(1, MAX_READ) as usize];
        let result = tokio::select! {
            r = tokio::time::timeout(IDLE_TIMEOUT, stream.read(&mut buf)) => match r {
                Ok(Ok(n)) => {
                    buf.truncate(n);
                    Ok(buf)
                }
                Ok(Err(e)) => Err(network("socket-read", format!("reading from {peer} failed: {e}"))),
                Err(_) => Err(network("socket-timeout", format!("nothing from {peer} for {} s", IDLE_TIMEOUT.as_secs()))),
            },
            _ = cancel => Err(cancelled()),
        };
        drop(paused);
        if let Ok(bytes) = &result {
            self.ext.meter.add_net(0, bytes.len() as u64);
        }
        Ok(result)
    }

    async fn write(
        &mut self,
        this: Resource<Connection>,
        bytes: Vec<u8>,
    ) -> wasmtime::Result<Result<(), ExtError>> {
        let cancel = self.deadline.cancelled();
        let paused = self.deadline.pause();
        let sent = bytes.len() as u64;
        let conn = self.table().get_mut(&this)?;
        let peer = conn.peer.clone();
        let stream = match conn.stream() {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let result = tokio::select! {
            r = tokio::time::timeout(IDLE_TIMEOUT, async {
                stream.write_all(&bytes).await?;
                stream.flush().await
            }) => match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(network("socket-write", format!("writing to {peer} failed: {e}"))),
                Err(_) => Err(network("socket-timeout", format!("{peer} took nothing for {} s", IDLE_TIMEOUT.as_secs()))),
            },
            _ = cancel => Err(cancelled()),
        };
        drop(paused);
        if result.is_ok() {
            self.ext.meter.add_net(sent, 0);
        }
        Ok(result)
    }

    async fn start_tls(
        &mut self,
        this: Resource<Connection>,
    ) -> wasmtime::Result<Result<(), ExtError>> {
        let cancel = self.deadline.cancelled();
        let paused = self.deadline.pause();
        let conn = self.table().get_mut(&this)?;
        let tcp = match std::mem::replace(&mut conn.link, Link::Broken) {
            Link::Plain(tcp) => tcp,
            other => {
                conn.link = other;
                return Ok(Err(refused(
                    "socket-tls",
                    format!("the connection to {} is not in the clear", conn.peer),
                )));
            }
        };
        let (host, roots, peer) = (conn.host.clone(), conn.roots.clone(), conn.peer.clone());
        let port = tcp.peer_addr().map(|a| a.port()).unwrap_or(0);
        let result = tokio::select! {
            r = tokio::time::timeout(CONNECT_TIMEOUT, handshake(tcp, &host, port, roots.as_deref())) => r.unwrap_or_else(|_| {
                Err(network("socket-timeout", format!("the TLS handshake with {peer} took longer than {} s", CONNECT_TIMEOUT.as_secs())))
            }),
            _ = cancel => Err(cancelled()),
        };
        drop(paused);
        Ok(match result {
            Ok(tls) => {
                self.table().get_mut(&this)?.link = Link::Tls(Box::new(tls));
                Ok(())
            }
            Err(e) => Err(e),
        })
    }

    async fn drop(&mut self, this: Resource<Connection>) -> wasmtime::Result<()> {
        self.table().delete(this)?;
        Ok(())
    }
}
