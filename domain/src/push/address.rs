//! The address policy: which addresses the webhook sender may connect to (no internal
//! networks unless allowlisted).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Which addresses the webhook sender may connect to. Loopback, private, link-local,
/// unique-local, CGNAT, cloud metadata and other special-purpose addresses are refused unless a
/// network on the allowlist contains them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    allow: Vec<ipnet::IpNet>,
}

impl AddressPolicy {
    /// Nothing special-purpose allowed (production).
    pub fn strict() -> Self {
        Self::default()
    }

    /// Loopback allowed (the local server's development mode).
    pub fn allow_loopback() -> Self {
        Self::parse_allowlist("127.0.0.0/8,::1/128").unwrap_or_default()
    }

    /// A comma-separated list of networks (`10.1.0.0/16,::1/128`; a bare address is one host).
    pub fn parse_allowlist(list: &str) -> Result<Self, String> {
        Ok(Self {
            allow: parse_networks(list)?,
        })
    }

    pub fn allowlist(&self) -> &[ipnet::IpNet] {
        &self.allow
    }

    /// `Ok` when the sender may connect to `ip`; otherwise why not.
    pub fn permits(&self, ip: IpAddr) -> Result<(), String> {
        let ip = canonical(ip);
        let Some(class) = special_purpose(ip) else {
            return Ok(());
        };
        if self.allow.iter().any(|n| n.contains(&ip)) {
            return Ok(());
        }
        Err(format!(
            "address {ip} is {class} and is not on the push allowlist"
        ))
    }
}

/// A comma-separated list of networks in CIDR notation, a bare address being one host
/// (`10.1.0.0/16, ::1/128, 192.168.1.7`); empty items are skipped.
pub fn parse_networks(list: &str) -> Result<Vec<ipnet::IpNet>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            item.parse::<ipnet::IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("{item:?} is not an address or network (CIDR)"))
        })
        .collect()
}

/// An IPv6 address that carries an IPv4 address is judged as that IPv4 address: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated but still routed by some
/// stacks), IPv4-translated (SIIT, `::ffff:0:a.b.c.d`), NAT64 with the well-known prefix
/// (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::/48`).
fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else {
        return ip;
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let s = v6.segments();
    let last = || {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    };
    // ::a.b.c.d (not :: or ::1, which are IPv6's own unspecified and loopback)
    if s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1) {
        return last();
    }
    // ::ffff:0:a.b.c.d (SIIT, RFC 6052 / 7915)
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return last();
    }
    // 64:ff9b::/96 (NAT64 well-known prefix)
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return last();
    }
    // 2002::/16 (6to4): the IPv4 address is the next 32 bits
    if s[0] == 0x2002 {
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        return IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    }
    ip
}

/// The kind of special-purpose address `ip` is, or `None` for a public one.
fn special_purpose(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4 == Ipv4Addr::new(169, 254, 169, 254) {
                Some("the cloud metadata service")
            } else if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
                Some("carrier-grade NAT (shared)")
            } else if o[0] == 0 || v4.is_broadcast() {
                Some("unspecified or broadcast")
            } else if v4.is_multicast() || o[0] >= 240 {
                Some("multicast or reserved")
            } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
                Some("IETF protocol assignment")
            } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
                Some("benchmarking")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                Some("the cloud metadata service")
            } else if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if (s[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if (s[0] & 0xfe00) == 0xfc00 {
                Some("unique-local")
            } else if (s[0] & 0xff00) == 0xff00 {
                Some("multicast")
            } else if s[0] == 0x2001 && s[1] == 0x0db8 {
                Some("documentation")
            } else if s[..3] == [0x64, 0xff9b, 0x0001] {
                // 64:ff9b:1::/48: a network's own NAT64 prefixes, which embed IPv4 addresses
                // at positions the prefix length decides.
                Some("NAT64 local-use (an embedded IPv4 address)")
            } else if s[0] == 0x2001 && s[1] == 0 {
                // 2001::/32: Teredo tunnels to an IPv4 address.
                Some("Teredo (an embedded IPv4 address)")
            } else if s[..4] == [0x0100, 0, 0, 0] {
                Some("discard-only")
            } else {
                None
            }
        }
    }
}
