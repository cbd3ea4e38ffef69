//! Where a webhook may go: an `http`/`https` URL whose host is not on the
//! server's own networks (loopback, private, link-local, unique-local,
//! unspecified, multicast…) unless the operator allows them. Checked when
//! an endpoint is registered and again at every delivery, on every address
//! the name resolves to then; the delivery connects to the address that
//! was checked, so a second lookup cannot point elsewhere.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use mediagen_core::ApiError;
use url::{Host, Url};

/// Whether `ip` is on a network a webhook must not reach by default.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => internal_v4(v4),
            None => internal_v6(v6),
        },
    }
}

fn internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // Shared address space (carrier-grade NAT) and benchmarking.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments (192.0.0.0/24: DS-Lite, NAT64
        // discovery, relays), which gateways answer themselves.
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
}

fn internal_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let first = s[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local (fc00::/7), link-local (fe80::/10), and the old
        // site-local (fec0::/10) that some hosts still route.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        // IPv4-compatible (::/96) and IPv4-translated (::ffff:0:0:0/96):
        // deprecated or host-internal forms with no public use.
        || s[..6] == [0; 6]
        || s[..6] == [0, 0, 0, 0, 0xffff, 0]
        // Local-use NAT64 (64:ff9b:1::/48).
        || s[..3] == [0x64, 0xff9b, 1]
        || embedded_v4(s).is_some_and(internal_v4)
}

/// The IPv4 address a translated form carries, where a gateway on the path
/// would reach it: NAT64 (64:ff9b::/96), 6to4 (2002::/16) and Teredo
/// (2001::/32, its client address inverted in the last 32 bits).
fn embedded_v4(s: [u16; 8]) -> Option<Ipv4Addr> {
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        [0x2001, 0, server_hi, server_lo, _, _, hi, lo] => {
            let server = v4(server_hi, server_lo);
            let client = v4(!hi, !lo);
            Some(if internal_v4(server) { server } else { client })
        }
        _ => None,
    }
}

/// A webhook URL as registered: 400 naming `parameter` unless it starts
/// `http://` or `https://` (at most 2048 characters, as the schema says);
/// 422 unless it then parses, carries no credentials and (unless
/// `allow_private`) its host is neither `localhost` nor an internal
/// address.
pub fn check_url(raw: &str, parameter: &str, allow_private: bool) -> Result<Url, ApiError> {
    let lower = raw.get(..8).unwrap_or(raw).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(ApiError::invalid_parameter(
            parameter,
            "must be an http or https URL",
        ));
    }
    if raw.len() > 2048 {
        return Err(ApiError::invalid_parameter(
            parameter,
            "must be at most 2048 characters",
        ));
    }
    let bad = |reason: &str| ApiError::unprocessable(parameter, reason);
    let url = Url::parse(raw).map_err(|_| bad("is not a valid URL"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry credentials"));
    }
    let internal = match url.host() {
        None => return Err(bad("must name a host")),
        Some(Host::Ipv4(ip)) => is_internal(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => is_internal(IpAddr::V6(ip)),
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    };
    if internal && !allow_private {
        return Err(ApiError::unprocessable(
            parameter,
            "is on a loopback, private or link-local network, which webhooks may not reach here",
        ));
    }
    Ok(url)
}

/// The address to deliver to: the URL's host resolved now, refused when
/// any answer is internal (unless `allow_private`). The reason is ours to
/// log, never DNS's own text.
pub async fn resolve(url: &Url, allow_private: bool) -> Result<SocketAddr, String> {
    let host = url.host_str().ok_or("no host")?;
    let port = url.port_or_known_default().ok_or("no port")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| "the host name did not resolve".to_owned())?
        .collect();
    if !allow_private && addrs.iter().any(|a| is_internal(a.ip())) {
        return Err("the host resolves to a loopback, private or link-local address".into());
    }
    addrs
        .into_iter()
        .next()
        .ok_or_else(|| "the host name has no address".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_networks_are_refused_unless_allowed() {
        for url in [
            "http://127.0.0.1/x",
            "http://10.1.2.3/",
            "http://192.168.0.10:8080/",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[fd00::1]/",
            "http://localhost:9000/",
            "http://api.localhost/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://192.0.0.170/",
            "http://[::ffff:192.0.0.8]/",
            // Forms that carry an internal IPv4 address (the probe's).
            "http://[64:ff9b::7f00:1]/",
            "http://[64:ff9b:1::a00:1]/",
            "http://[::ffff:0:7f00:1]/",
            "http://[::127.0.0.1]/",
            "http://[fec0::1]/",
            "http://[2002:7f00:1::1]/",
            "http://[2002:a9fe:a9fe::1]/",
            "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        ] {
            assert_eq!(
                check_url(url, "url", false).unwrap_err().status(),
                422,
                "{url}"
            );
            assert!(check_url(url, "url", true).is_ok(), "{url}");
        }
        assert!(check_url("https://hooks.example.com/mediagen", "url", false).is_ok());
        assert!(check_url("http://93.184.216.34/", "url", false).is_ok());
        // Public addresses in the same forms stay allowed.
        assert!(check_url("http://[64:ff9b::5db8:d822]/", "url", false).is_ok());
        assert!(check_url("http://[2002:5db8:d822::1]/", "url", false).is_ok());
        assert!(check_url("http://[2606:4700::1111]/", "url", false).is_ok());
    }

    #[test]
    fn only_plain_http_urls_are_taken() {
        for url in [
            "ftp://example.com/",
            "example.com/hook",
            "file:///etc/passwd",
        ] {
            assert_eq!(
                check_url(url, "url", true).unwrap_err().status(),
                400,
                "{url}"
            );
        }
        for url in ["http://user:pw@example.com/", "http://[nope/"] {
            assert_eq!(
                check_url(url, "url", true).unwrap_err().status(),
                422,
                "{url}"
            );
        }
    }
}

#[cfg(test)]
mod resolve_tests {
    use super::*;

    /// A name is checked by what it resolves to at delivery, not by how
    /// it reads: `localhost` stands for any name of the server's own.
    #[tokio::test]
    async fn names_resolving_inside_are_refused_at_delivery() {
        let url = Url::parse("http://localhost:9/hook").unwrap();
        let refused = resolve(&url, false).await.unwrap_err();
        assert!(refused.contains("loopback"), "{refused}");
        let addr = resolve(&url, true).await.unwrap();
        assert!(addr.ip().is_loopback() && addr.port() == 9, "{addr}");
    }
}
