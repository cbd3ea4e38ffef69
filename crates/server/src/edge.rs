//! The HTTP edge: connections are accepted under caps and served with
//! timeouts, so that clients that never finish their headers, or never
//! show a key, cannot hold the server's descriptors.
//!
//! - At most `max_connections` are open at once; past that, a new one is
//!   closed as it is accepted.
//! - A connection is *anonymous* until one of its requests shows a valid
//!   key ([`Connection::authenticated`], from the authentication layer); an
//!   address (an IPv4 address, or an IPv6 /64) holds at most
//!   `max_anonymous_connections_per_address` anonymous connections.
//! - A connection belongs to the account whose key it shows first; an
//!   account holds at most `max_connections_per_account` (its keys share
//!   one count). A request that would take it past that is answered 429
//!   and its connection closed.
//! - A request's headers must arrive within `header_read_timeout`, and an
//!   idle keep-alive connection is closed after the same time (hyper starts
//!   the timer whenever it waits for the next request's head).

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tower::Service;

/// The edge's limits (from the configuration).
#[derive(Debug, Clone, Copy)]
pub struct EdgeLimits {
    pub max_connections: usize,
    pub max_anonymous_per_address: usize,
    pub max_per_account: usize,
    pub header_read_timeout: Duration,
}

/// Where connections come from, for the per-address cap: an IPv4 address,
/// or the /64 of an IPv6 one (one host commonly holds a whole /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Origin {
    V4(u32),
    V6(u64),
}

impl Origin {
    fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Origin::V4(u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Origin::V4(u32::from(v4)),
                None => Origin::V6((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

/// The open connections: how many, the anonymous ones by origin, and the
/// others by account.
#[derive(Debug)]
pub struct Tracker {
    limits: EdgeLimits,
    open: AtomicUsize,
    anonymous: Mutex<HashMap<Origin, usize>>,
    accounts: Mutex<HashMap<String, usize>>,
}

impl Tracker {
    pub fn new(limits: EdgeLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            open: AtomicUsize::new(0),
            anonymous: Mutex::new(HashMap::new()),
            accounts: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for a new connection from `ip`, or `None` when a cap is
    /// reached (the connection is then closed unanswered).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Connection> {
        let origin = Origin::of(ip);
        let mut anonymous = self.anonymous.lock().unwrap_or_else(|e| e.into_inner());
        let from_here = anonymous.get(&origin).copied().unwrap_or(0);
        if from_here >= self.limits.max_anonymous_per_address {
            return None;
        }
        if self.open.fetch_add(1, Ordering::SeqCst) >= self.limits.max_connections {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        anonymous.insert(origin, from_here + 1);
        Some(Connection(Arc::new(Slot {
            tracker: self.clone(),
            origin,
            authenticated: AtomicBool::new(false),
            account: Mutex::new(None),
        })))
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Counts one more connection for `account`, unless it holds its cap.
    fn join_account(&self, account: &str) -> bool {
        let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        let n = accounts.get(account).copied().unwrap_or(0);
        if n >= self.limits.max_per_account {
            return false;
        }
        accounts.insert(account.to_owned(), n + 1);
        true
    }

    fn leave_account(&self, account: &str) {
        let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = accounts.get_mut(account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                accounts.remove(account);
            }
        }
    }

    fn leave_anonymous(&self, origin: Origin) {
        let mut anonymous = self.anonymous.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = anonymous.get_mut(&origin) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                anonymous.remove(&origin);
            }
        }
    }
}

#[derive(Debug)]
struct Slot {
    tracker: Arc<Tracker>,
    origin: Origin,
    authenticated: AtomicBool,
    /// The account the connection counts for (the first key it showed).
    account: Mutex<Option<String>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.authenticated.load(Ordering::SeqCst) {
            self.tracker.leave_anonymous(self.origin);
        }
        let account = self.account.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(account) = account.as_deref() {
            self.tracker.leave_account(account);
        }
        self.tracker.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One accepted connection, in the extensions of each of its requests.
/// Its slot is given back when the connection closes.
#[derive(Debug, Clone)]
pub struct Connection(Arc<Slot>);

impl Connection {
    /// One of this connection's requests showed a valid key of `account`:
    /// it no longer counts against its address's anonymous cap, and counts
    /// for the first account it showed a key of. False when that account
    /// already holds its cap of connections: the request is refused and
    /// the connection closed (it stays anonymous until then).
    pub fn authenticated(&self, account: &str) -> bool {
        let mut counted = self.0.account.lock().unwrap_or_else(|e| e.into_inner());
        if counted.is_none() {
            if !self.0.tracker.join_account(account) {
                return false;
            }
            *counted = Some(account.to_owned());
        }
        drop(counted);
        if !self.0.authenticated.swap(true, Ordering::SeqCst) {
            self.0.tracker.leave_anonymous(self.0.origin);
        }
        true
    }
}

/// Serves `router` on `listener` under `tracker`'s caps until `shutdown`
/// completes, then waits for the open connections to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tracker: Arc<Tracker>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(tracker.limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(tracker.limits.header_read_timeout))
        .keep_alive_timeout(tracker.limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (or a connection reset before it
                    // was taken): wait a little rather than spin.
                    tracing::warn!(error = %e, "accepting a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(connection) = tracker.admit(peer.ip()) else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = hyper::service::service_fn({
            let (router, connection) = (router.clone(), connection.clone());
            move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut().insert(connection.clone());
                // A router is always ready.
                let mut router = router.clone();
                router.call(req)
            }
        });
        let served = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let served = graceful.watch(served);
        tokio::spawn(async move {
            let _ = served.await;
            drop(connection);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The soft limit on this process's open files, where the system says
/// (Linux's `/proc/self/limits`).
pub fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, per: usize) -> EdgeLimits {
        EdgeLimits {
            max_connections: max,
            max_anonymous_per_address: per,
            max_per_account: 2,
            header_read_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn anonymous_connections_are_capped_per_address() {
        let tracker = Tracker::new(limits(100, 2));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let first = tracker.admit(a).unwrap();
        let second = tracker.admit(a).unwrap();
        assert!(tracker.admit(a).is_none(), "a third anonymous one");
        assert!(tracker.admit("10.0.0.2".parse().unwrap()).is_some());
        // The same host over IPv6-mapped IPv4 is the same origin.
        assert!(tracker.admit("::ffff:10.0.0.1".parse().unwrap()).is_none());
        // Showing a key frees the anonymous place, not the connection.
        assert!(first.authenticated("acct_a"));
        assert!(first.authenticated("acct_a"));
        let third = tracker.admit(a).unwrap();
        assert!(tracker.admit(a).is_none());
        drop(third);
        assert!(tracker.admit(a).is_some());
        drop(first);
        drop(second);
        assert_eq!(tracker.anonymous.lock().unwrap().get(&Origin::of(a)), None);
        assert_eq!(tracker.open(), 0);
    }

    /// An account's keys hold at most its cap of connections; one refused
    /// stays anonymous, a connection counts once (for the first account it
    /// showed), and a closed one frees its place.
    #[test]
    fn connections_are_capped_per_account() {
        let tracker = Tracker::new(limits(100, 100));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let held: Vec<Connection> = (0..2).map(|_| tracker.admit(ip).unwrap()).collect();
        for c in &held {
            assert!(c.authenticated("acct_a"));
        }
        assert!(held[0].authenticated("acct_b"), "counted for acct_a only");
        let third = tracker.admit(ip).unwrap();
        assert!(!third.authenticated("acct_a"));
        assert_eq!(tracker.anonymous.lock().unwrap()[&Origin::of(ip)], 1);
        assert!(third.authenticated("acct_b"));
        drop(held);
        assert!(tracker.admit(ip).unwrap().authenticated("acct_a"));
        drop(third);
        assert!(tracker.accounts.lock().unwrap().is_empty());
        assert_eq!(tracker.open(), 0);
    }

    #[test]
    fn an_ipv6_host_is_its_64() {
        let tracker = Tracker::new(limits(100, 1));
        let _held = tracker.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert!(tracker
            .admit("2001:db8:1:2::ffff".parse().unwrap())
            .is_none());
        assert!(tracker.admit("2001:db8:1:3::1".parse().unwrap()).is_some());
    }

    #[test]
    fn open_connections_are_capped() {
        let tracker = Tracker::new(limits(2, 10));
        let held: Vec<_> = (1..=2)
            .map(|i| {
                tracker
                    .admit(format!("10.0.1.{i}").parse().unwrap())
                    .unwrap()
            })
            .collect();
        assert!(tracker.admit("10.0.1.9".parse().unwrap()).is_none());
        assert_eq!(tracker.open(), 2);
        assert!(held[0].authenticated("acct_a"));
        drop(held);
        assert_eq!(tracker.open(), 0);
        assert!(tracker.admit("10.0.1.9".parse().unwrap()).is_some());
    }
}
