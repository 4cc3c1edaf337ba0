//! Who a request comes from, for the per-client-address session limit
//! ([`HttpConfig::max_sessions_per_peer`](crate::http::HttpConfig::max_sessions_per_peer)):
//! the connection's address, or, when that is a trusted proxy
//! ([`HttpConfig::trusted_proxies`](crate::http::HttpConfig::trusted_proxies)), the address
//! the proxies report in `Forwarded` (RFC 7239) or `X-Forwarded-For`.

use std::net::IpAddr;
use std::str::FromStr;

use http::HeaderMap;

/// A proxy whose `Forwarded` and `X-Forwarded-For` headers are believed: one address, or a
/// network in CIDR notation.
///
/// ```
/// use mcp_server::http::{HttpConfig, TrustedProxy};
///
/// let proxies: Vec<TrustedProxy> = ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"]
///     .iter()
///     .map(|text| text.parse())
///     .collect::<Result<_, _>>()?;
/// let config = HttpConfig::new().trusted_proxies(proxies);
/// # let _ = config;
/// # Ok::<(), mcp_server::http::InvalidProxy>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrustedProxy {
    network: IpAddr,
    prefix: u8,
}

/// A [`TrustedProxy`] that does not parse: neither an IP address nor `address/prefix` with a
/// prefix within the address's length.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an IP address or CIDR network (such as 10.0.0.0/8): {0:?}")]
pub struct InvalidProxy(String);

impl TrustedProxy {
    /// Whether `ip` is this proxy (or in its network).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(
                u128::from(u32::from(net)),
                u128::from(u32::from(ip)),
                self.prefix,
                32,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(u128::from(net), u128::from(ip), self.prefix, 128)
            }
            _ => false,
        }
    }
}

/// Whether the first `prefix` of `width` bits of `a` and `b` agree.
fn prefix_eq(a: u128, b: u128, prefix: u8, width: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let shift = u32::from(width - prefix.min(width));
    (a >> shift) == (b >> shift)
}

impl From<IpAddr> for TrustedProxy {
    fn from(ip: IpAddr) -> Self {
        let ip = ip.to_canonical();
        Self {
            network: ip,
            prefix: if ip.is_ipv4() { 32 } else { 128 },
        }
    }
}

impl FromStr for TrustedProxy {
    type Err = InvalidProxy;

    fn from_str(text: &str) -> Result<Self, InvalidProxy> {
        let invalid = || InvalidProxy(text.to_owned());
        let trimmed = text.trim();
        let Some((address, prefix)) = trimmed.split_once('/') else {
            return trimmed
                .parse::<IpAddr>()
                .map(Self::from)
                .map_err(|_| invalid());
        };
        let network = address
            .parse::<IpAddr>()
            .map_err(|_| invalid())?
            .to_canonical();
        let width = if network.is_ipv4() { 32 } else { 128 };
        let prefix = prefix
            .parse::<u8>()
            .ok()
            .filter(|p| *p <= width)
            .ok_or_else(invalid)?;
        Ok(Self { network, prefix })
    }
}

/// The address of the client of a request that arrived from `peer`: `peer` itself unless it is
/// one of `proxies`; then the right-most address the proxies report that is not itself a
/// trusted proxy (`Forwarded` when the request has one, else `X-Forwarded-For`). When the
/// proxies report nothing usable (no header, `unknown`, an obfuscated name), the last trusted
/// hop is the client as far as can be known.
pub(crate) fn client_address(
    peer: IpAddr,
    headers: &HeaderMap,
    proxies: &[TrustedProxy],
) -> IpAddr {
    let trusted = |ip: IpAddr| proxies.iter().any(|p| p.contains(ip));
    if proxies.is_empty() || !trusted(peer) {
        return peer;
    }
    let forwarded = headers.get_all("forwarded");
    let use_forwarded = forwarded.iter().next().is_some();
    let name = if use_forwarded {
        "forwarded"
    } else {
        "x-forwarded-for"
    };
    let mut client = peer;
    // Right to left: the last line first, and within a line the last element first.
    for line in headers.get_all(name).iter().rev() {
        for element in line.to_str().unwrap_or("").rsplit(',') {
            let hop = if use_forwarded {
                forwarded_for(element)
            } else {
                parse_node(element)
            };
            let Some(hop) = hop else {
                // Hidden or malformed: the proxy that reported it is as far as is known.
                return client;
            };
            client = hop;
            if !trusted(hop) {
                return hop;
            }
        }
    }
    client
}

/// The `for=` of one `Forwarded` element (`for=192.0.2.60;proto=http;by=...`).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("for")
            .then(|| parse_node(value))
            .flatten()
    })
}

/// An address as a proxy writes it: `192.0.2.60`, `192.0.2.60:4711`, `"[2001:db8::1]:4711"`,
/// `2001:db8::1`, quoted or not.
fn parse_node(text: &str) -> Option<IpAddr> {
    let text = text.trim().trim_matches('"').trim();
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, _) = rest.split_once(']')?;
        return inside.parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
    }
    let (host, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn proxies(list: &[&str]) -> Vec<TrustedProxy> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn proxies_parse_as_addresses_or_networks() {
        let net: TrustedProxy = "10.0.0.0/8".parse().unwrap();
        assert!(net.contains(ip("10.200.3.4")));
        assert!(!net.contains(ip("11.0.0.1")));
        assert!(net.contains(ip("::ffff:10.1.2.3")), "IPv4-mapped");
        let one: TrustedProxy = "192.0.2.7".parse().unwrap();
        assert!(one.contains(ip("192.0.2.7")) && !one.contains(ip("192.0.2.8")));
        let v6: TrustedProxy = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains(ip("2001:db8:ffff::1")) && !v6.contains(ip("2001:db9::1")));
        let all: TrustedProxy = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.1")) && !all.contains(ip("::1")));
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "example.com",
            "10.0.0.0/x",
            "10.0.0/8",
        ] {
            assert!(bad.parse::<TrustedProxy>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn headers_are_read_only_from_a_trusted_peer() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let spoofed = headers(&[
            ("x-forwarded-for", "203.0.113.9"),
            ("forwarded", "for=203.0.113.9"),
        ]);
        // An untrusted peer: its headers say nothing.
        assert_eq!(
            client_address(ip("198.51.100.1"), &spoofed, &trusted),
            ip("198.51.100.1")
        );
        // No proxies configured: never read.
        assert_eq!(
            client_address(ip("10.0.0.1"), &spoofed, &[]),
            ip("10.0.0.1")
        );
        // A trusted peer: believed.
        assert_eq!(
            client_address(ip("10.0.0.1"), &spoofed, &trusted),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn the_right_most_untrusted_address_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let at = |pairs: &[(&'static str, &str)]| {
            client_address(ip("10.0.0.1"), &headers(pairs), &trusted)
        };
        // What the client wrote itself (left) is not believed past the first untrusted hop.
        assert_eq!(
            at(&[("x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.2")]),
            ip("203.0.113.9")
        );
        assert_eq!(
            at(&[
                ("x-forwarded-for", "1.1.1.1"),
                ("x-forwarded-for", "203.0.113.9, 10.0.0.2")
            ]),
            ip("203.0.113.9")
        );
        // Every hop trusted: the left-most one.
        assert_eq!(
            at(&[("x-forwarded-for", "10.0.0.3, 10.0.0.2")]),
            ip("10.0.0.3")
        );
        // Nothing reported: the proxy itself.
        assert_eq!(at(&[]), ip("10.0.0.1"));
        // Forwarded wins over X-Forwarded-For, with ports, quotes and IPv6.
        assert_eq!(
            at(&[
                ("x-forwarded-for", "198.51.100.1"),
                (
                    "forwarded",
                    "for=1.1.1.1, for=\"[2001:db8:cafe::17]:4711\";proto=https, for=10.0.0.2:80;by=10.0.0.1"
                )
            ]),
            ip("2001:db8:cafe::17")
        );
        assert_eq!(
            at(&[("forwarded", "proto=http;For=192.0.2.60:8080")]),
            ip("192.0.2.60")
        );
        // A hidden client: the trusted hop that reported it.
        assert_eq!(
            at(&[("forwarded", "for=unknown, for=10.0.0.2")]),
            ip("10.0.0.2")
        );
        assert_eq!(at(&[("x-forwarded-for", "garbage")]), ip("10.0.0.1"));
    }
}
