//! The private-network guard: a page the agent was sent to must not turn it against the user's
//! own network (a router's admin page, a database on localhost, a cloud metadata endpoint). Unless
//! `allowPrivateNetwork` is set, every address a fetch would connect to must be a public one:
//!
//! - a URL whose host is an IP literal is checked before each request — the first and every
//!   redirect hop, HTTP or meta refresh ([`check_host`]);
//! - a host name is checked where it is resolved: the HTTP client resolves through
//!   [`GuardedResolver`], which drops private addresses and fails when none is left. The client
//!   connects to exactly the addresses the resolver returned, so a name cannot resolve to a public
//!   address for the check and a private one for the connection.
//!
//! The client is built without proxies (a proxy would resolve names itself, out of the guard's
//! sight).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::error::{ErrorCode, FetchError, Phase};

/// Which addresses a fetch may connect to.
#[derive(Debug, Clone)]
pub struct AddressPolicy {
    /// `allowPrivateNetwork`: every address is allowed.
    pub allow_private: bool,
    /// How a refusal tells the user to allow the address
    /// ([`super::config::WebConfig::private_network_remedy`]).
    pub remedy: String,
    /// Addresses treated as public although they are not: a test stands a loopback server in
    /// for "the internet" to show that a redirect from it to the private network is refused.
    #[cfg(test)]
    pub public_for_tests: Vec<IpAddr>,
}

impl AddressPolicy {
    pub fn new(allow_private: bool) -> Self {
        AddressPolicy {
            allow_private,
            remedy: super::config::WebConfig::default().private_network_remedy(),
            #[cfg(test)]
            public_for_tests: Vec::new(),
        }
    }

    /// Whether connecting to `ip` is refused.
    pub fn refuses(&self, ip: IpAddr) -> bool {
        #[cfg(test)]
        if self.public_for_tests.contains(&ip) {
            return false;
        }
        !self.allow_private && !is_public(ip)
    }
}

/// Refuses a URL whose host is an IP literal the policy refuses (host names are checked by the
/// resolver, when they are resolved).
pub(crate) fn check_host(
    policy: &AddressPolicy,
    asked: &str,
    url: &Url,
    phase: Phase,
) -> Result<(), FetchError> {
    // The URL parser has normalised IPv4 literals (`0x7f.1`, `2130706433`) to dotted form and
    // keeps IPv6 ones in brackets.
    let host = url.host_str().unwrap_or_default();
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    let Ok(ip) = literal.parse::<IpAddr>() else {
        return Ok(());
    };
    if policy.refuses(ip) {
        return Err(blocked(
            policy,
            asked,
            url.as_str(),
            phase,
            &format!("{ip}"),
        ));
    }
    Ok(())
}

/// The refusal, worded so the user knows the switch (or the file that keeps it off).
pub(crate) fn blocked(
    policy: &AddressPolicy,
    asked: &str,
    current: &str,
    phase: Phase,
    what: &str,
) -> FetchError {
    FetchError::new(
        ErrorCode::BlockedAddress,
        phase,
        false,
        asked,
        format!(
            "refused to fetch {current}: {what} is a private, loopback or otherwise non-public \
             address ({})",
            policy.remedy
        ),
    )
    .at(current)
}

/// The error the resolver fails with: found again in the HTTP client's error chain to tell a
/// refused address from a network failure.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves only to non-public addresses ({addresses})")]
pub(crate) struct BlockedResolution {
    pub host: String,
    pub addresses: String,
}

/// Resolves names with the system resolver and keeps only the addresses the policy allows.
pub(crate) struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    pub(crate) fn new(policy: Arc<AddressPolicy>) -> Self {
        GuardedResolver { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = found
                .into_iter()
                .partition(|addr| !policy.refuses(addr.ip()));
            if allowed.is_empty() && !refused.is_empty() {
                let addresses = refused
                    .iter()
                    .map(|addr| addr.ip().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(Box::new(BlockedResolution { host, addresses }) as _);
            }
            if !refused.is_empty() {
                tracing::debug!("web: {host}: dropped non-public addresses {refused:?}");
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The blocked resolution somewhere in `error`'s source chain, if that is why it failed.
pub(crate) fn find_blocked<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a BlockedResolution> {
    let mut current = Some(error);
    while let Some(err) = current {
        if let Some(blocked) = err.downcast_ref::<BlockedResolution>() {
            return Some(blocked);
        }
        current = err.source();
    }
    None
}

/// Whether `ip` is a globally reachable unicast address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => is_public_v6(ip),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || a == 0 // "this network"
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier-grade NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || ip.is_documentation()
        || ip.is_multicast()
        || a >= 240) // reserved, broadcast included
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated, still routed privately)
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)) // documentation
}

/// The IPv4 address inside an IPv6 one that carries it: mapped (`::ffff:a.b.c.d`), compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let tail = || Ipv4Addr::from(((u32::from(s[6])) << 16) | u32::from(s[7]));
    if s[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return Some(tail());
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return Some(tail());
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::from((u32::from(s[1]) << 16) | u32::from(s[2])));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_globally_reachable_addresses_are_public() {
        let private = [
            "127.0.0.1",
            "127.8.9.10",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.8",
            "198.18.0.1",
            "192.0.2.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:0101::1",
        ];
        let public = [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "2002:0808:0808::1",
        ];
        for (texts, want) in [(&private[..], false), (&public[..], true)] {
            for text in texts {
                let ip: IpAddr = text.parse().unwrap();
                assert_eq!(is_public(ip), want, "{text}: public?");
            }
        }
    }

    #[test]
    fn literal_hosts_are_checked_and_names_left_to_the_resolver() {
        let policy = AddressPolicy::new(false);
        let check =
            |url: &str| check_host(&policy, url, &Url::parse(url).unwrap(), Phase::Validation);
        for url in [
            "http://127.0.0.1:8080/",
            "http://[::1]/",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://169.254.169.254/latest/meta-data/",
        ] {
            let error = check(url).unwrap_err();
            assert_eq!(error.code, ErrorCode::BlockedAddress, "{url}");
            assert!(!error.retryable);
            assert!(
                error.message.contains("allowPrivateNetwork"),
                "{}",
                error.message
            );
        }
        assert!(check("http://8.8.8.8/").is_ok());
        assert!(
            check("http://localhost:1/").is_ok(),
            "a name: the resolver's job"
        );
        let open = AddressPolicy::new(true);
        assert!(
            check_host(
                &open,
                "",
                &Url::parse("http://127.0.0.1/").unwrap(),
                Phase::Validation
            )
            .is_ok()
        );
    }

    #[tokio::test]
    async fn the_resolver_refuses_a_name_with_only_private_addresses() {
        let resolver = GuardedResolver::new(Arc::new(AddressPolicy::new(false)));
        let name: Name = "localhost".parse().unwrap();
        let error = match resolver.resolve(name).await {
            Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
            Err(error) => error,
        };
        let blocked = find_blocked(error.as_ref()).unwrap();
        assert_eq!(blocked.host, "localhost");
        assert!(blocked.addresses.contains("127.0.0.1") || blocked.addresses.contains("::1"));

        let open = GuardedResolver::new(Arc::new(AddressPolicy::new(true)));
        let found: Vec<SocketAddr> = open
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(
            found.iter().all(|addr| addr.ip().is_loopback()),
            "{found:?}"
        );
        assert!(!found.is_empty());
    }
}
