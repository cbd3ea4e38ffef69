//! The HTTP edge (the outside probe's reproductions, issue 70): clients
//! that never finish their headers are closed and capped per address, and
//! metric labels come from closed sets, read by the operator only.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{assert_error, Backend, TestApp};

/// A connection that sends half a request's headers and waits.
async fn half_open(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr.trim_start_matches("http://"))
        .await
        .unwrap();
    // Nothing may be answered before the headers end; a refused connection
    // is closed by the server, which the read below sees.
    let _ = s
        .write_all(b"GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await;
    s
}

/// Whether the server closed `s` within `wait` (end of file or a reset).
async fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(wait, s.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => true,
        // A 408 or other answer before the close: read on to the close.
        Ok(Ok(_)) => tokio::time::timeout(wait, s.read_to_end(&mut Vec::new()))
            .await
            .is_ok(),
        Err(_) => false,
    }
}

/// Connections sending partial headers are closed at the header timeout,
/// an address holds at most its cap of them (the rest are closed as they
/// arrive), and a tenant on another address is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_headers_are_closed_and_capped() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.max_anonymous_connections_per_address = 20;
        c.header_read_timeout_seconds = 1.5;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..60 {
        held.push(half_open(&app.addr).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Past the cap, closed at once.
    let mut refused = 0;
    for s in held.iter_mut().skip(20) {
        if closed_within(s, Duration::from_millis(200)).await {
            refused += 1;
        }
    }
    assert_eq!(refused, 40, "connections past the address's cap");
    // The other tenant, from another address, is served at once.
    let other = reqwest::Client::builder()
        .local_address(Some("127.0.0.2".parse().unwrap()))
        .build()
        .unwrap();
    let started = Instant::now();
    let r = other
        .get(format!("{}/v1/account", app.addr))
        .bearer_auth(&app.admin_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(2));
    // Within the cap: closed at the header timeout, whatever they send.
    let started = Instant::now();
    for s in held.iter_mut().take(20) {
        let _ = s.write_all(b"a").await;
        assert!(
            closed_within(s, Duration::from_secs(4)).await,
            "a slow header"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    drop(held);
    // The address's places are free again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = app.get("/v1/account", &app.admin_key).await;
    assert_eq!(r.status(), 200);
}

/// A connection that has shown a valid key leaves its address's anonymous
/// cap: a client keeping many authenticated connections is not refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticated_connections_leave_the_anonymous_cap() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.max_anonymous_connections_per_address = 4;
    })
    .await;
    // Forty clients, each with its own connection, each authenticated by
    // its first request and kept open in its pool.
    let mut clients = Vec::new();
    for i in 0..40 {
        let client = reqwest::Client::new();
        let r = client
            .get(format!("{}/v1/account", app.addr))
            .bearer_auth(&app.admin_key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "client {i}");
        clients.push(client);
    }
    // Four anonymous ones still fit; a fifth does not.
    let mut anonymous = Vec::new();
    for _ in 0..5 {
        anonymous.push(half_open(&app.addr).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(closed_within(&mut anonymous[4], Duration::from_millis(500)).await);
    assert!(!closed_within(&mut anonymous[0], Duration::from_millis(200)).await);
}

/// An account's keys hold at most `max_connections_per_account` open
/// connections: past it a request is refused with 429 and its connection
/// closed, while another account is served; a closed connection frees its
/// place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_holds_its_cap_of_connections() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.max_connections_per_account = 3;
    })
    .await;
    let (_, key) = app.account(0, "read").await;
    let (_, other) = app.account(0, "read").await;
    let account = |client: &reqwest::Client, key: &str| {
        client
            .get(format!("{}/v1/account", app.addr))
            .bearer_auth(key)
            .send()
    };
    // Three clients, each keeping its own connection in its pool.
    let mut clients = Vec::new();
    for i in 0..3 {
        let client = reqwest::Client::new();
        assert_eq!(account(&client, &key).await.unwrap().status(), 200, "{i}");
        clients.push(client);
    }
    let fourth = reqwest::Client::new();
    let refused = account(&fourth, &key).await.unwrap();
    assert_eq!(
        refused.headers().get("connection").map(|v| v.as_bytes()),
        Some(&b"close"[..])
    );
    let body = assert_error(refused, 429, "connection_limit_exceeded").await;
    assert_eq!(body["error"]["details"]["limit"], 3, "{body}");
    // The same account on a kept connection, and another account, are served.
    assert_eq!(account(&clients[0], &key).await.unwrap().status(), 200);
    assert_eq!(
        account(&reqwest::Client::new(), &other)
            .await
            .unwrap()
            .status(),
        200
    );
    // A client gone, its place is free.
    drop(clients.pop());
    let mut served = false;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if account(&fourth, &key).await.unwrap().status() == 200 {
            served = true;
            break;
        }
    }
    assert!(served, "a freed place is taken");
}

/// Unknown methods are one label: 300 requests with 8000-character methods
/// add one series, and `/metrics` stays small. It answers only the
/// operator's admin keys (401 without a key, 403 for another account's
/// admin key), or anyone on `metrics_bind`'s own address.
async fn metrics_are_the_operators_and_closed(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| {
        c.metrics_bind = "127.0.0.1:0".into();
    })
    .await;
    let raw = app.addr.trim_start_matches("http://").to_owned();
    for i in 0..300 {
        let method = format!("M{i}{}", "X".repeat(if i % 2 == 0 { 8000 } else { 8 }));
        let mut s = TcpStream::connect(&raw).await.unwrap();
        s.write_all(
            format!("{method} /v1/account HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer).await;
    }
    let anonymous = app
        .client
        .get(format!("{}/metrics", app.addr))
        .send()
        .await
        .unwrap();
    assert_error(anonymous, 401, "missing_api_key").await;
    let (_, tenant) = app.account(10, "admin").await;
    let r = app.get("/metrics", &tenant).await;
    assert_error(r, 403, "insufficient_permissions").await;
    let r = app.get("/metrics", &app.admin_key).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(text.len() < 50_000, "metrics grew to {} bytes", text.len());
    assert!(!text.contains("XXXX"), "a method became a label");
    assert!(
        text.lines().any(|l| l.contains("method=\"other\"")),
        "unknown methods are counted as `other`"
    );
    // The private address: no key, the same exposition.
    let private = app
        .client
        .get(format!(
            "http://{}/metrics",
            app.metrics_addr.as_ref().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(private.status(), 200);
    assert!(private
        .text()
        .await
        .unwrap()
        .contains("mediagen_queue_depth"));
    let other = app
        .client
        .get(format!(
            "http://{}/v1/account",
            app.metrics_addr.as_ref().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(
        other.status(),
        404,
        "the metrics address serves nothing else"
    );
}

crate::on_both_backends!(metrics_are_the_operators_and_closed);
