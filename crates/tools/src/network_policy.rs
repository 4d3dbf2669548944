//! What `web_fetch` may connect to.
//!
//! Only `http` and `https`. A host is resolved first and every address it
//! resolves to is checked; loopback, private, link-local, carrier-grade NAT,
//! unspecified, multicast, reserved and cloud-metadata addresses are refused
//! unless the host is allow-listed. The fetch then connects to the vetted
//! address itself, so a second DNS answer cannot swap it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};
use url::{Host, Url};

use crate::error::ToolError;

/// Host names of cloud metadata services, refused by name before any lookup.
const METADATA_HOSTS: &[&str] = &["metadata.google.internal", "metadata.goog", "metadata"];

/// Where `web_fetch` may go and how much it may take (`[tools.web_fetch]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkPolicy {
    /// Hosts (names or IP literals, as written in URLs) exempt from the address
    /// block, e.g. `["127.0.0.1"]`. Matching is by host, case-insensitive; an
    /// allow-listed `127.0.0.1` does not allow `localhost`.
    pub allow_hosts: Vec<String>,
    /// Bodies are read up to this many bytes, the rest dropped (default 2 MiB).
    pub max_body_bytes: usize,
    /// Redirects followed at most, each checked like the first URL (default 5).
    pub max_redirects: usize,
    /// Limit on a whole fetch, redirects included (default 30 s).
    pub timeout_secs: u64,
}

impl Default for NetworkPolicy {
    fn default() -> Self {
        Self {
            allow_hosts: Vec::new(),
            max_body_bytes: 2 * 1024 * 1024,
            max_redirects: 5,
            timeout_secs: 30,
        }
    }
}

/// A URL checked by [`NetworkPolicy::vet`], with the address to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VettedUrl {
    /// The URL.
    pub url: Url,
    /// The host name to pin to `addr`, when the URL names a domain (not an IP).
    pub domain: Option<String>,
    /// The checked address (port included) the request must use.
    pub addr: SocketAddr,
}

impl NetworkPolicy {
    /// Whether `host` (a URL host, IPv6 without brackets) is allow-listed.
    pub fn is_allowed_host(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.allow_hosts
            .iter()
            .any(|allowed| normalize_host(allowed) == host)
    }

    /// Check `url` and resolve its host to an address the policy permits.
    pub async fn vet(&self, url: &Url) -> Result<VettedUrl, ToolError> {
        let refuse = |reason: String| ToolError::NetworkRefused {
            url: url.to_string(),
            reason,
        };
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(refuse(format!(
                    "only http and https URLs can be fetched, not `{other}`"
                )));
            }
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| refuse("the URL has no port".to_owned()))?;
        let host = url
            .host()
            .ok_or_else(|| refuse("the URL has no host".to_owned()))?;
        let (host_text, literal) = match &host {
            Host::Domain(name) => ((*name).to_owned(), None),
            Host::Ipv4(ip) => (ip.to_string(), Some(IpAddr::V4(*ip))),
            Host::Ipv6(ip) => (ip.to_string(), Some(IpAddr::V6(*ip))),
        };
        let allowed = self.is_allowed_host(&host_text);
        if !allowed && METADATA_HOSTS.contains(&normalize_host(&host_text).as_str()) {
            return Err(refuse(format!("`{host_text}` is a cloud metadata service")));
        }
        let addrs: Vec<SocketAddr> = match literal {
            Some(ip) => vec![SocketAddr::new(ip, port)],
            None => tokio::net::lookup_host((host_text.as_str(), port))
                .await
                .map_err(|err| refuse(format!("cannot resolve `{host_text}`: {err}")))?
                .collect(),
        };
        let first = *addrs
            .first()
            .ok_or_else(|| refuse(format!("`{host_text}` resolves to no address")))?;
        if !allowed {
            for addr in &addrs {
                if let Some(why) = forbidden_reason(addr.ip()) {
                    return Err(refuse(format!(
                        "`{host_text}` resolves to {} ({why}); add the host to \
                         [tools.web_fetch] allow_hosts to permit it",
                        addr.ip()
                    )));
                }
            }
        }
        Ok(VettedUrl {
            url: url.clone(),
            domain: literal.is_none().then_some(host_text),
            addr: first,
        })
    }
}

fn normalize_host(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Why `ip` may not be fetched, or `None` when it is a public address.
pub fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, _, _] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        Some("a cloud metadata address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT address")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("a broadcast, multicast or reserved address")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("an IETF protocol address")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let [s0, s1, s2, s3, s4, s5, s6, s7] = segments;
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("a cloud metadata address");
    }
    // Addresses that embed an IPv4 address are judged by it.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if s0 == 0x64 && s1 == 0xff9b && s2 == 0 && s3 == 0 && s4 == 0 && s5 == 0 {
        // NAT64 64:ff9b::/96
        return forbidden_v4(embedded(s6, s7));
    }
    if s0 == 0x2002 {
        // 6to4 2002::/16
        return forbidden_v4(embedded(s1, s2));
    }
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if s0 & 0xfe00 == 0xfc00 {
        Some("a unique-local (private) address")
    } else if s0 & 0xffc0 == 0xfe80 || s0 & 0xffc0 == 0xfec0 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if s0 == 0 && s1 == 0 && s2 == 0 && s3 == 0 && s4 == 0 && s5 == 0 {
        // IPv4-compatible ::a.b.c.d (deprecated)
        forbidden_v4(embedded(s6, s7))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn forbidden_ranges() {
        for bad in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "::127.0.0.1",
            "ff02::1",
        ] {
            assert!(
                forbidden_reason(ip(bad)).is_some(),
                "{bad} should be refused"
            );
        }
        for good in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "93.184.216.34",
        ] {
            assert_eq!(forbidden_reason(ip(good)), None, "{good} should be allowed");
        }
        assert_eq!(
            forbidden_reason(ip("169.254.169.254")),
            Some("a cloud metadata address")
        );
        assert_eq!(
            forbidden_reason(ip("fd00:ec2::254")),
            Some("a cloud metadata address")
        );
    }

    #[test]
    fn allow_list_matches_hosts_loosely() {
        let policy = NetworkPolicy {
            allow_hosts: vec!["Example.COM".into(), "[::1]".into()],
            ..NetworkPolicy::default()
        };
        assert!(policy.is_allowed_host("example.com"));
        assert!(policy.is_allowed_host("example.com."));
        assert!(policy.is_allowed_host("::1"));
        assert!(!policy.is_allowed_host("other.com"));
    }

    async fn refused(policy: &NetworkPolicy, url: &str) -> String {
        let parsed = Url::parse(url).unwrap();
        match policy.vet(&parsed).await {
            Err(ToolError::NetworkRefused { reason, .. }) => reason,
            other => panic!("{url}: expected refusal, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn vet_refuses_schemes_and_private_hosts() {
        let policy = NetworkPolicy::default();
        assert!(
            refused(&policy, "ftp://example.com/x")
                .await
                .contains("`ftp`")
        );
        assert!(
            refused(&policy, "file:///etc/passwd")
                .await
                .contains("`file`")
        );
        assert!(
            refused(&policy, "http://127.0.0.1:1/")
                .await
                .contains("loopback")
        );
        assert!(
            refused(&policy, "http://localhost:1/")
                .await
                .contains("loopback")
        );
        assert!(
            refused(&policy, "http://0x7f000001/")
                .await
                .contains("loopback")
        );
        assert!(
            refused(&policy, "http://2130706433/")
                .await
                .contains("loopback")
        );
        assert!(
            refused(&policy, "http://0177.0.0.1/")
                .await
                .contains("loopback")
        );
        assert!(refused(&policy, "http://[::1]/").await.contains("loopback"));
        assert!(
            refused(&policy, "http://[::ffff:7f00:1]/")
                .await
                .contains("loopback")
        );
        assert!(
            refused(&policy, "http://10.0.0.1/")
                .await
                .contains("private")
        );
        assert!(
            refused(&policy, "http://169.254.169.254/latest/")
                .await
                .contains("metadata")
        );
        assert!(
            refused(&policy, "http://metadata.google.internal/")
                .await
                .contains("metadata")
        );
        assert!(
            refused(&policy, "http://[fd00:ec2::254]/")
                .await
                .contains("metadata")
        );
        assert!(
            refused(&policy, "http://0.0.0.0:80/")
                .await
                .contains("unspecified")
        );
    }

    #[tokio::test]
    async fn allow_listed_literal_is_vetted_and_pinned() {
        let policy = NetworkPolicy {
            allow_hosts: vec!["127.0.0.1".into()],
            ..NetworkPolicy::default()
        };
        let vetted = policy
            .vet(&Url::parse("http://127.0.0.1:8080/x").unwrap())
            .await
            .unwrap();
        assert_eq!(vetted.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(vetted.domain, None);
        // `localhost` is a different host: still refused.
        assert!(
            refused(&policy, "http://localhost:8080/")
                .await
                .contains("loopback")
        );
        let localhost = NetworkPolicy {
            allow_hosts: vec!["localhost".into()],
            ..NetworkPolicy::default()
        };
        let vetted = localhost
            .vet(&Url::parse("http://localhost:8080/").unwrap())
            .await
            .unwrap();
        assert_eq!(vetted.domain.as_deref(), Some("localhost"));
        assert!(vetted.addr.ip().is_loopback());
    }
}
