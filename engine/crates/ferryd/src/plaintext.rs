//! The admin token travels in plain text: in admin API calls (HTTP) and in the `Auth` frame a replica sends its
//! master (the binary protocol has no TLS). Ferry's deployment requirement is a private network or a tunnel
//! (docs/security.md "ferryd limits"); this module says so in the log, once, where the token may leave the
//! machine: at start-up when the node has a token and listens (protocol or admin) on an address other than
//! loopback, and on the first replication connection to a master other than loopback. A node on loopback only
//! (development, tests) logs nothing.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the replication warning has been logged.
static REPLICATION_WARNED: AtomicBool = AtomicBool::new(false);

fn loopback(addr: &SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// The listening addresses, named by their flags, on which a token would cross the network.
fn exposed(has_token: bool, listen: SocketAddr, admin: SocketAddr) -> Vec<String> {
    if !has_token {
        return Vec::new();
    }
    [("--listen", listen), ("--admin", admin)]
        .into_iter()
        .filter(|(_, addr)| !loopback(addr))
        .map(|(flag, addr)| format!("{flag} {addr}"))
        .collect()
}

/// At start-up, with the bound addresses.
pub fn warn_at_start(has_token: bool, listen: SocketAddr, admin: SocketAddr) {
    let exposed = exposed(has_token, listen, admin);
    if !exposed.is_empty() {
        tracing::warn!(
            addresses = %exposed.join(", "),
            "the admin token crosses these addresses in plain text (admin API calls, replicas' Auth frames): \
             keep them on a private network or behind a tunnel such as WireGuard or stunnel (docs/security.md)"
        );
    }
}

/// When a replication connection has reached its master (it is about to send the token).
pub fn warn_replication_to(master: SocketAddr) {
    if !loopback(&master) && !REPLICATION_WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            %master,
            "replication sends the admin token to its master in plain text: keep the nodes on a private network \
             or behind a tunnel such as WireGuard or stunnel (docs/security.md); logged once"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn loopback_addresses_expose_nothing() {
        for a in ["127.0.0.1:7301", "[::1]:7301", "[::ffff:127.0.0.1]:7301"] {
            assert!(exposed(true, addr(a), addr("127.0.0.1:7401")).is_empty(), "{a}");
        }
    }

    #[test]
    fn any_other_address_with_a_token_is_named_by_its_flag() {
        assert_eq!(exposed(true, addr("0.0.0.0:7301"), addr("127.0.0.1:7401")), ["--listen 0.0.0.0:7301"]);
        assert_eq!(
            exposed(true, addr("10.0.0.5:7301"), addr("[::]:7401")),
            ["--listen 10.0.0.5:7301", "--admin [::]:7401"]
        );
    }

    #[test]
    fn without_a_token_there_is_nothing_to_expose() {
        assert!(exposed(false, addr("0.0.0.0:7301"), addr("0.0.0.0:7401")).is_empty());
    }
}
