//! Domain filters of a connection (CHANGE MASTER `DO_DOMAIN_IDS` / `IGNORE_DOMAIN_IDS`): which domains' transactions
//! the SQL side applies. A filtered transaction is passed over, and its GTID still advances gtid_slave_pos, as in
//! MariaDB, so a reconnect does not fetch it again.

use std::collections::BTreeSet;

use ferry_core::gtid::DomainId;
use serde::{Deserialize, Serialize};

/// Most domain ids one filter may list (MariaDB's lists are bounded too).
pub const DOMAIN_IDS_MAX: usize = 1024;

/// At most one of the two lists is non-empty; both empty admits every domain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainFilter {
    /// Only these domains are applied.
    #[serde(default)]
    pub do_domain_ids: BTreeSet<DomainId>,
    /// These domains are not applied.
    #[serde(default)]
    pub ignore_domain_ids: BTreeSet<DomainId>,
}

impl DomainFilter {
    /// A filter from CHANGE MASTER's lists; refuses both lists at once and over-long lists.
    pub fn new(do_ids: &[DomainId], ignore_ids: &[DomainId]) -> Result<Self, String> {
        if !do_ids.is_empty() && !ignore_ids.is_empty() {
            return Err("do_domain_ids and ignore_domain_ids cannot both be set: give one list or neither".into());
        }
        if do_ids.len().max(ignore_ids.len()) > DOMAIN_IDS_MAX {
            return Err(format!("a domain filter lists at most {DOMAIN_IDS_MAX} domain ids"));
        }
        Ok(DomainFilter {
            do_domain_ids: do_ids.iter().copied().collect(),
            ignore_domain_ids: ignore_ids.iter().copied().collect(),
        })
    }

    /// Whether transactions of `domain` are applied.
    pub fn admits(&self, domain: DomainId) -> bool {
        if !self.do_domain_ids.is_empty() {
            return self.do_domain_ids.contains(&domain);
        }
        !self.ignore_domain_ids.contains(&domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_filter_admits_everything() {
        let f = DomainFilter::new(&[], &[]).unwrap();
        assert!(f.admits(0) && f.admits(7));
    }

    #[test]
    fn do_admits_only_its_domains_and_ignore_all_but_its_own() {
        let f = DomainFilter::new(&[1, 3], &[]).unwrap();
        assert!(f.admits(1) && f.admits(3) && !f.admits(0) && !f.admits(2));
        let f = DomainFilter::new(&[], &[2]).unwrap();
        assert!(f.admits(0) && f.admits(1) && !f.admits(2));
    }

    #[test]
    fn both_lists_at_once_are_refused_naming_both() {
        let err = DomainFilter::new(&[1], &[2]).unwrap_err();
        assert!(err.contains("do_domain_ids") && err.contains("ignore_domain_ids"), "{err}");
        let long: Vec<u32> = (0..=DOMAIN_IDS_MAX as u32).collect();
        assert!(DomainFilter::new(&long, &[]).unwrap_err().contains("at most"));
    }
}
