//! Which addresses count as "internal": a name that resolves to one is
//! refused unless that exact name was granted, so a wildcard grant or a
//! DNS answer cannot point a component at the user's own machine or LAN.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Loopback, private, link-local, carrier-grade NAT, unspecified,
/// broadcast, documentation and unique-local addresses (and IPv4 mapped
/// into IPv6).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_internal(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4_internal(v4),
            None => v6_internal(v6),
        },
    }
}

fn v4_internal(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
}

fn v6_internal(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    let first = seg[0];
    // IPv4 embedded by NAT64 (64:ff9b::/96), 6to4 (2002::/16) or the old
    // IPv4-compatible form (::a.b.c.d) reaches that IPv4 address.
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let nat64 = seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    let compat = seg[..6] == [0, 0, 0, 0, 0, 0];
    ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || ((nat64 || compat) && v4_internal(embedded(seg[6], seg[7])))
        || (first == 0x2002 && v4_internal(embedded(seg[1], seg[2])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:a00:1::1",
            "::10.0.0.1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["1.1.1.1", "8.8.8.8", "2606:4700::1111", "100.128.0.1"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }
}
