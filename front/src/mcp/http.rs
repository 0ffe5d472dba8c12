//! `pond serve --http ADDR`: the server's MCP sessions over streamable HTTP as well, for
//! clients that take a URL: rmcp's streamable HTTP service behind hyper's HTTP/1 server, at
//! `http://ADDR/mcp`, sharing the server's front (its caches, workers and background sync).
//!
//! A TCP port, even on loopback, is open to every account of the machine, so every request
//! must carry a bearer token (401 without it): `POND_HTTP_TOKEN`, or else one the server
//! makes at start and keeps in its owner-only state file, where `pond status` shows it.
//! A port on loopback is still reachable from every web page the user opens (DNS
//! rebinding), so every request's `Host` must be a loopback name or the bound address (on a
//! wildcard bind, an address of the machine; or one allowed with `--allow-host`), and an
//! `Origin`, when a browser sends one, a loopback origin (or one allowed with
//! `--allow-origin`): anything else gets 403. A non-loopback address is bound only with
//! `--allow-remote` and a token of the user's own (`POND_HTTP_TOKEN`).
//!
//! What one caller can hold is bounded: connections (`MAX_CONNECTIONS`; more wait to be
//! accepted), the time a request's head and body take to arrive (`READ_DEADLINE`), a
//! body's size (`MAX_BODY_BYTES`, 413 past it), and live sessions (`MAX_SESSIONS`: an
//! `initialize` past it closes the least recently used one, as does `SESSION_IDLE` without
//! a request; its client then gets 404).
//!
//! A loopback connection whose client socket another user owns (the kernel's socket tables,
//! `loopback_peer_uid`) is closed at accept, before any byte is read. Memory a flood of
//! sessions took is handed back (`malloc_trim`) after sessions close.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{
    SessionId, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::PondServer;
use crate::Front;

/// The one path MCP is served at.
pub const PATH: &str = "/mcp";

/// Shortest bearer token accepted: a guessable one would protect nothing.
const MIN_TOKEN_LEN: usize = 16;

/// Connections served at once; more wait in the listen queue until one closes.
const MAX_CONNECTIONS: usize = 256;

/// A request's head, and then its body, must each arrive within this: a connection that
/// holds half a request is closed.
const READ_DEADLINE: Duration = Duration::from_secs(10);

/// The largest request body: pond's requests are a tool's name and a few arguments.
const MAX_BODY_BYTES: usize = 1 << 20;

/// MCP sessions live at once; an `initialize` past it closes the least recently used one.
const MAX_SESSIONS: usize = 64;

/// A session with no request for this long is closed. Long: the cap bounds the memory, and
/// many clients do not start a new session on the 404 that follows (as MCP says they must).
const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// The pause after an accept that failed (out of file descriptors): retrying at once spins.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// How the HTTP transport listens and whom it answers.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// The user's token (`POND_HTTP_TOKEN`); without one the server makes one. Needed to
    /// bind a non-loopback address.
    pub token: Option<String>,
    /// Bind a non-loopback address (with a token).
    pub allow_remote: bool,
    /// Host names accepted besides loopback names and the bound address.
    pub allow_hosts: Vec<String>,
    /// Browser origins accepted besides loopback ones (`scheme://host[:port|:*]`).
    pub allow_origins: Vec<String>,
}

impl HttpOptions {
    /// Refuse what would expose the archive: a non-loopback address without the explicit
    /// flag and a token of the user's, or a token too short to mean anything.
    pub fn check(&self) -> Result<(), String> {
        if let Some(t) = &self.token {
            if t.len() < MIN_TOKEN_LEN {
                return Err(format!(
                    "the HTTP bearer token is {} characters; use at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`)",
                    t.len()
                ));
            }
        }
        if self.addr.ip().is_loopback() {
            return Ok(());
        }
        match (self.allow_remote, &self.token) {
            (true, Some(_)) => Ok(()),
            (false, _) => Err(format!(
                "{} is not a loopback address: anyone who can reach it could read the archive. Bind 127.0.0.1, or pass --allow-remote with a bearer token (POND_HTTP_TOKEN)",
                self.addr
            )),
            (true, None) => Err(format!(
                "serving {} to other machines takes a bearer token of your own: set POND_HTTP_TOKEN (at least {MIN_TOKEN_LEN} characters)",
                self.addr
            )),
        }
    }

    fn hosts(&self, bound: SocketAddr) -> Vec<String> {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).into();
        if bound.ip().is_unspecified() {
            // A wildcard bind answers at every address of the machine: those are its own.
            hosts.extend(own_addresses().iter().map(IpAddr::to_string));
        } else {
            hosts.push(bound.ip().to_string());
        }
        hosts.extend(self.allow_hosts.iter().cloned());
        hosts
    }

    fn origins(&self) -> Vec<String> {
        let mut origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .flat_map(|h| [format!("http://{h}:*"), format!("https://{h}:*")])
            .collect();
        origins.extend(self.allow_origins.iter().cloned());
        origins
    }
}

/// The addresses of this machine's interfaces.
fn own_addresses() -> Vec<IpAddr> {
    let Ok(all) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    all.filter_map(|i| {
        let a = i.address?;
        a.as_sockaddr_in()
            .map(|v4| IpAddr::V4(v4.ip()))
            .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
    })
    .collect()
}

/// A random token: 32 bytes of the kernel's randomness, in hex.
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot make the HTTP token (reading /dev/urandom): {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The URL MCP is served at on `addr`.
pub fn url(addr: SocketAddr) -> String {
    format!("http://{addr}{PATH}")
}

/// The bound port, the token every request must carry, and whom it answers.
pub struct Listener {
    tcp: TcpListener,
    token: String,
    opts: HttpOptions,
}

impl Listener {
    /// The URL it serves MCP at.
    pub fn url(&self) -> Option<String> {
        self.tcp.local_addr().ok().map(url)
    }

    /// The bearer token every request must carry (the user's, or the one made at start).
    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Bind the address (so that a port in use is reported before the server says it serves).
pub async fn bind(opts: &HttpOptions) -> Result<Listener, String> {
    opts.check()?;
    let token = match &opts.token {
        Some(t) => t.clone(),
        None => new_token()?,
    };
    let tcp = TcpListener::bind(opts.addr)
        .await
        .map_err(|e| format!("cannot listen on http://{}: {e}", opts.addr))?;
    Ok(Listener {
        tcp,
        token,
        opts: opts.clone(),
    })
}

/// Answer MCP over HTTP on `listener` until `stopped` turns true. Each MCP session (its
/// `initialize`, then requests with its `Mcp-Session-Id`) is one client of `front`.
pub async fn serve(
    front: Front,
    listener: Listener,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let Listener { tcp, token, opts } = listener;
    let bound = tcp.local_addr().unwrap_or(opts.addr);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(opts.hosts(bound))
        .with_allowed_origins(opts.origins())
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let cancel = config.cancellation_token.clone();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(SESSION_IDLE);
    let manager = Arc::new(manager);
    let service = StreamableHttpService::new(
        move || Ok(PondServer::new(front.clone(), "http", "http")),
        manager.clone(),
        config,
    );
    let shared = Arc::new(Shared {
        service,
        token,
        sessions: Sessions::new(manager),
    });
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    // A connection is accepted only when a slot is free to serve it.
    let mut slot = None;
    let mut trim = tokio::time::interval(Duration::from_secs(10));
    tracing::info!(url = %url(bound), "pond server listening over HTTP");
    loop {
        tokio::select! {
            free = slots.clone().acquire_owned(), if slot.is_none() => {
                slot = Some(free.expect("the semaphore is never closed"));
            }
            accepted = tcp.accept(), if slot.is_some() => match accepted {
                Ok((stream, peer)) => {
                    // Another local account's connection is closed before a byte is read:
                    // it can neither try tokens nor hold a connection slot.
                    let local = stream.local_addr().ok();
                    if let Some(uid) = local.and_then(|l| loopback_peer_uid(peer, l)) {
                        if uid != nix::unistd::geteuid().as_raw() {
                            tracing::debug!(%peer, uid, "closed another user's connection");
                            continue;
                        }
                    }
                    let (shared, stopped, slot) = (shared.clone(), stopped.clone(), slot.take());
                    tokio::spawn(async move {
                        connection(stream, shared, stopped).await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept an HTTP connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            _ = trim.tick() => shared.sessions.trim_after_closes().await,
            _ = stopped.changed() => break,
        }
    }
    cancel.cancel();
}

/// The uid owning the client end of a loopback TCP connection (`peer` connected to our
/// `local`), from the kernel's socket tables (`/proc/net/tcp`, `tcp6`); `None` for a peer
/// elsewhere, or one not found there (gone already).
fn loopback_peer_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let canonical = |a: SocketAddr| SocketAddr::new(a.ip().to_canonical(), a.port());
    let (peer, local) = (canonical(peer), canonical(local));
    if !peer.ip().is_loopback() {
        return None;
    }
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .into_iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            text.lines().skip(1).find_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                let (ours, theirs) = (proc_addr(f.get(1)?)?, proc_addr(f.get(2)?)?);
                (ours == peer && theirs == local).then(|| f.get(7)?.parse().ok())?
            })
        })
}

/// An address as the kernel's socket tables write it: the IP's 32-bit words in hex, each
/// in the machine's byte order, then the port in hex (`0100007F:1F90`).
fn proc_addr(field: &str) -> Option<SocketAddr> {
    let (ip, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Option<Vec<[u8; 4]>> = (0..ip.len() / 8)
        .map(|i| {
            let word = u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok()?;
            Some(word.to_ne_bytes())
        })
        .collect();
    let bytes: Vec<u8> = words?.concat();
    let ip = match bytes.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?).to_canonical(),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

type Service = StreamableHttpService<PondServer, LocalSessionManager>;

/// What every connection answers with.
struct Shared {
    service: Service,
    token: String,
    sessions: Sessions,
}

/// The live sessions and when each was last used, to close the least recently used one
/// when a new one would pass [`MAX_SESSIONS`].
struct Sessions {
    manager: Arc<LocalSessionManager>,
    last_used: Mutex<HashMap<SessionId, Instant>>,
    /// One `initialize` at a time, so that concurrent ones cannot pass the cap together.
    opening: tokio::sync::Mutex<()>,
    /// The live count at the last look, and whether one was closed to make room since: to
    /// give memory back after sessions closed.
    seen: Mutex<usize>,
    evicted: AtomicBool,
}

impl Sessions {
    fn new(manager: Arc<LocalSessionManager>) -> Sessions {
        Sessions {
            manager,
            last_used: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
            seen: Mutex::new(0),
            evicted: AtomicBool::new(false),
        }
    }

    async fn live(&self) -> HashSet<SessionId> {
        self.manager.sessions.read().await.keys().cloned().collect()
    }

    /// Note a request of a live session.
    async fn used(&self, id: &str) {
        let id: SessionId = Arc::from(id);
        if self.manager.sessions.read().await.contains_key(&id) {
            self.last_used
                .lock()
                .expect("never poisoned")
                .insert(id, Instant::now());
        }
    }

    /// Below the cap, or close the least recently used session to get there.
    async fn make_room(&self) {
        let live = self.live().await;
        let oldest = {
            let mut used = self.last_used.lock().expect("never poisoned");
            used.retain(|id, _| live.contains(id));
            if live.len() < MAX_SESSIONS {
                return;
            }
            live.iter().min_by_key(|id| used.get(*id).copied()).cloned()
        };
        if let Some(id) = oldest {
            tracing::info!(session = %id, "{MAX_SESSIONS} HTTP sessions live: closing the least recently used");
            self.last_used.lock().expect("never poisoned").remove(&id);
            let _ =
                tokio::time::timeout(Duration::from_secs(1), self.manager.close_session(&id)).await;
            self.evicted.store(true, Ordering::Relaxed);
        }
    }

    /// Give the memory of closed sessions back to the system: the allocator keeps freed
    /// pages otherwise, and one flood of sessions would stay the server's size.
    async fn trim_after_closes(&self) {
        let now = self.manager.sessions.read().await.len();
        let closed = {
            let mut seen = self.seen.lock().expect("never poisoned");
            let closed = now < *seen || self.evicted.swap(false, Ordering::Relaxed);
            *seen = now;
            closed
        };
        if closed {
            trim();
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks and releases the allocator's free memory.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// One HTTP connection (its requests in turn), closed gracefully when the server stops.
async fn connection(
    stream: tokio::net::TcpStream,
    shared: Arc<Shared>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let answer = hyper::service::service_fn(move |req: Request<Incoming>| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(answer(&shared, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(READ_DEADLINE)
        .serve_connection(TokioIo::new(stream), answer);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stopped.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
        }
    }
}

async fn answer(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != PATH {
        return plain(StatusCode::NOT_FOUND, &format!("pond serves MCP at {PATH}"));
    }
    if !authorized(&req, &shared.token) {
        let mut r = plain(
            StatusCode::UNAUTHORIZED,
            "this pond server takes a bearer token: send `Authorization: Bearer TOKEN`, TOKEN being POND_HTTP_TOKEN or the one `pond status` shows to the server's owner",
        );
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    let (parts, body) = req.into_parts();
    let body = match read_body(&parts, body).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    let method = parts.method.clone();
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let opens = method == Method::POST && session.is_none() && is_initialize(&body);
    let req = Request::from_parts(parts, Full::new(body));
    let mut r = if opens {
        let _one = shared.sessions.opening.lock().await;
        shared.sessions.make_room().await;
        let r = shared.service.handle(req).await;
        if let Some(id) = r
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            shared.sessions.used(id).await;
        }
        r
    } else {
        if let Some(id) = &session {
            shared.sessions.used(id).await;
        }
        shared.service.handle(req).await
    };
    // A session ended on request: 204, as clients expect (rmcp answers 202).
    if method == Method::DELETE && r.status() == StatusCode::ACCEPTED {
        *r.status_mut() = StatusCode::NO_CONTENT;
        *r.body_mut() = Full::new(Bytes::new()).boxed();
    }
    if r.status() == StatusCode::FORBIDDEN {
        return explain_forbidden(r).await;
    }
    r
}

const SESSION_HEADER: &str = "mcp-session-id";

/// The body, whole, if it is at most [`MAX_BODY_BYTES`] and arrives within
/// [`READ_DEADLINE`]; else the answer that refuses it.
async fn read_body(
    parts: &hyper::http::request::Parts,
    body: Incoming,
) -> Result<Bytes, Response<Body>> {
    let too_large = || {
        plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "the request body is over {} KiB; pond's requests are far smaller",
                MAX_BODY_BYTES >> 10
            ),
        )
    };
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(READ_DEADLINE, Limited::new(body, MAX_BODY_BYTES).collect()).await {
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(e)) => Err(plain(
            StatusCode::BAD_REQUEST,
            &format!("cannot read the request body: {e}"),
        )),
        Err(_) => Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {} s",
                READ_DEADLINE.as_secs()
            ),
        )),
    }
}

/// Whether a JSON-RPC body is an `initialize` request (one that opens a session).
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<String>,
    }
    serde_json::from_slice::<Head>(body).is_ok_and(|h| h.method.as_deref() == Some("initialize"))
}

/// rmcp's 403 for a foreign `Host` says what was refused; add how to allow it.
async fn explain_forbidden(r: Response<Body>) -> Response<Body> {
    let (parts, body) = r.into_parts();
    let text = body
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    if text.contains("Host header is not allowed") {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed: pond answers loopback names and its own addresses (a name could be a DNS-rebinding page); to reach it by this name, start the server with --allow-host NAME",
        );
    }
    Response::from_parts(parts, Full::new(Bytes::from(text)).boxed())
}

/// Whether the request carries the token (scheme `Bearer` in any case, RFC 7235),
/// compared in constant time.
fn authorized<B>(req: &Request<B>, token: &str) -> bool {
    let Some((scheme, given)) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim_start().split_once(' '))
    else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return false;
    }
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_endian = "little")]
    fn addresses_read_as_the_kernel_writes_them() {
        assert_eq!(
            super::proc_addr("0100007F:1F90"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            super::proc_addr("00000000000000000000000001000000:0016"),
            Some("[::1]:22".parse().unwrap())
        );
        // An IPv4 client of a server bound on `::` appears mapped; it is read as IPv4.
        assert_eq!(
            super::proc_addr("0000000000000000FFFF00000100007F:1F90"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(super::proc_addr("garbage"), None);
    }

    use super::*;

    fn opts(addr: &str, token: Option<&str>, allow_remote: bool) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            token: token.map(String::from),
            allow_remote,
            allow_hosts: Vec::new(),
            allow_origins: Vec::new(),
        }
    }

    #[test]
    fn loopback_binds_freely_anything_else_takes_the_flag_and_a_token() {
        let token = "0123456789abcdef0123";
        assert!(opts("127.0.0.1:0", None, false).check().is_ok());
        assert!(opts("[::1]:7777", None, false).check().is_ok());
        let e = opts("0.0.0.0:7777", None, false).check().unwrap_err();
        assert!(e.contains("--allow-remote"), "{e}");
        let e = opts("0.0.0.0:7777", Some(token), false)
            .check()
            .unwrap_err();
        assert!(e.contains("not a loopback address"), "{e}");
        let e = opts("192.168.1.5:7777", None, true).check().unwrap_err();
        assert!(e.contains("POND_HTTP_TOKEN"), "{e}");
        assert!(opts("192.168.1.5:7777", Some(token), true).check().is_ok());
        let e = opts("127.0.0.1:0", Some("short"), false)
            .check()
            .unwrap_err();
        assert!(e.contains("at least 16"), "{e}");
    }

    #[test]
    fn the_bound_address_and_loopback_names_are_the_hosts() {
        let mut o = opts("192.168.1.5:7777", Some("0123456789abcdef"), true);
        o.allow_hosts.push("pond.lan".into());
        let hosts = o.hosts(o.addr);
        for h in ["localhost", "127.0.0.1", "::1", "192.168.1.5", "pond.lan"] {
            assert!(hosts.iter().any(|x| x == h), "{h} in {hosts:?}");
        }
        let any = opts("0.0.0.0:7777", None, true);
        assert!(!any.hosts(any.addr).iter().any(|h| h == "0.0.0.0"));
    }
}
