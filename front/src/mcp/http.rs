//! `pond serve --http ADDR`: the server's MCP sessions over streamable HTTP as well, for
//! clients that take a URL: rmcp's streamable HTTP service behind hyper's HTTP/1 server, at
//! `http://ADDR/mcp`, sharing the server's front (its caches, workers and background sync).
//!
//! A port on loopback is still reachable from every web page the user opens (DNS
//! rebinding), so every request's `Host` must be a loopback name or the bound address (or
//! one allowed with `--allow-host`), and an `Origin`, when a browser sends one, a loopback
//! origin (or one allowed with `--allow-origin`): anything else gets 403. A non-loopback
//! address is bound only with `--allow-remote` and a bearer token, which every request
//! must then carry (401 without it).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::PondServer;
use crate::Front;

/// The one path MCP is served at.
pub const PATH: &str = "/mcp";

/// Shortest bearer token accepted: a guessable one would protect nothing.
const MIN_TOKEN_LEN: usize = 16;

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// How the HTTP transport listens and whom it answers.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Required of every request when set; needed to bind a non-loopback address.
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
    /// flag and a token, or a token too short to mean anything.
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
                "serving {} to other machines takes a bearer token: set POND_HTTP_TOKEN (at least {MIN_TOKEN_LEN} characters)",
                self.addr
            )),
        }
    }

    fn hosts(&self, bound: SocketAddr) -> Vec<String> {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).into();
        if !bound.ip().is_unspecified() {
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

/// The URL MCP is served at on `addr`.
pub fn url(addr: SocketAddr) -> String {
    format!("http://{addr}{PATH}")
}

/// Bind the address (so that a port in use is reported before the server says it serves).
pub async fn bind(opts: &HttpOptions) -> Result<TcpListener, String> {
    opts.check()?;
    TcpListener::bind(opts.addr)
        .await
        .map_err(|e| format!("cannot listen on http://{}: {e}", opts.addr))
}

/// Answer MCP over HTTP on `listener` until `stopped` turns true. Each MCP session (its
/// `initialize`, then requests with its `Mcp-Session-Id`) is one client of `front`.
pub async fn serve(
    front: Front,
    listener: TcpListener,
    opts: HttpOptions,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let bound = listener.local_addr().unwrap_or(opts.addr);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(opts.hosts(bound))
        .with_allowed_origins(opts.origins())
        .enforce_origin_validation();
    let sessions = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(PondServer::new(front.clone(), "http")),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token: Option<Arc<str>> = opts.token.as_deref().map(Arc::from);
    tracing::info!(url = %url(bound), "pond server listening over HTTP");
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let (service, token, stopped) = (service.clone(), token.clone(), stopped.clone());
                tokio::spawn(connection(stream, service, token, stopped));
            }
            _ = stopped.changed() => break,
        }
    }
    sessions.cancel();
}

type Service = StreamableHttpService<PondServer, LocalSessionManager>;

/// One HTTP connection (its requests in turn), closed gracefully when the server stops.
async fn connection(
    stream: tokio::net::TcpStream,
    service: Service,
    token: Option<Arc<str>>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let answer = hyper::service::service_fn(move |req: Request<Incoming>| {
        let (service, token) = (service.clone(), token.clone());
        async move { Ok::<_, Infallible>(answer(&service, token.as_deref(), req).await) }
    });
    let conn =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), answer);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stopped.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
        }
    }
}

async fn answer(service: &Service, token: Option<&str>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != PATH {
        return plain(StatusCode::NOT_FOUND, &format!("pond serves MCP at {PATH}"));
    }
    if let Some(token) = token {
        if !authorized(&req, token) {
            let mut r = plain(
                StatusCode::UNAUTHORIZED,
                "this pond server takes a bearer token: send `Authorization: Bearer TOKEN`",
            );
            r.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return r;
        }
    }
    service.handle(req).await
}

/// Whether the request carries the token, compared in constant time.
fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
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
