//! FLUSH BINARY LOGS DELETE_DOMAIN_ID: which domains may leave the binlog state. As in MariaDB, a domain may
//! go only when no binlog file still present holds a transaction of it: its entries in the binlog state must be
//! exactly those of the oldest file's GTID list (nothing of it was written since that file began). Otherwise the
//! files that hold it must be purged first.

use crate::gtid::{BinlogState, DomainId};

/// Why a domain cannot be deleted from the binlog state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot delete domain {domain} from the binlog state: binlog files from {oldest_file} on may hold its \
     transactions (its state is {state}, {oldest_file} began at {began}); purge those files first"
)]
pub struct DomainInBinlog {
    pub domain: DomainId,
    pub oldest_file: String,
    /// The domain's entries in the binlog state now, and in the oldest file's GTID list.
    pub state: String,
    pub began: String,
}

/// What a DELETE_DOMAIN_ID request comes to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainDeletion {
    /// Domains that leave the state.
    pub deleted: Vec<DomainId>,
    /// Domains the state does not have (MariaDB warns and goes on).
    pub not_present: Vec<DomainId>,
}

/// Checks `domains` against the binlog state now and the oldest file's GTID list; every domain must pass or
/// nothing is deleted.
pub fn check_deletion(
    state: &BinlogState,
    oldest_list: &BinlogState,
    oldest_file: &str,
    domains: &[DomainId],
) -> Result<DomainDeletion, DomainInBinlog> {
    let mut deletion = DomainDeletion::default();
    let mut wanted = domains.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    for domain in wanted {
        let now = state.domain_entries(domain);
        if now.is_empty() {
            deletion.not_present.push(domain);
            continue;
        }
        let began = oldest_list.domain_entries(domain);
        if now != began {
            let list = |g: &[crate::gtid::Gtid]| {
                if g.is_empty() {
                    "empty".to_string()
                } else {
                    g.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(",")
                }
            };
            return Err(DomainInBinlog {
                domain,
                oldest_file: oldest_file.to_string(),
                state: list(&now),
                began: list(&began),
            });
        }
        deletion.deleted.push(domain);
    }
    Ok(deletion)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtid::Gtid;

    fn state(text: &[(u32, u32, u64)]) -> BinlogState {
        BinlogState::from_gtids(text.iter().map(|&(d, s, n)| Gtid::new(d, s, n)))
    }

    #[test]
    fn a_domain_written_since_the_oldest_file_began_is_refused_naming_it() {
        let now = state(&[(0, 1, 9), (1, 1, 5)]);
        let oldest = state(&[(0, 1, 3), (1, 1, 5)]);
        let err = check_deletion(&now, &oldest, "ferry-bin.000002", &[1, 0]).unwrap_err();
        assert_eq!(err.domain, 0);
        let text = err.to_string();
        assert!(text.contains("domain 0") && text.contains("ferry-bin.000002") && text.contains("purge"), "{text}");
        // A domain that appeared after the oldest file began is in it too.
        let err = check_deletion(&now, &state(&[(0, 1, 9)]), "f", &[1]).unwrap_err();
        assert_eq!((err.domain, err.began.as_str()), (1, "empty"));
    }

    #[test]
    fn a_domain_untouched_since_the_oldest_file_began_goes_and_unknown_ones_are_reported() {
        let now = state(&[(0, 1, 9), (1, 1, 5), (1, 2, 4)]);
        let oldest = state(&[(0, 1, 3), (1, 1, 5), (1, 2, 4)]);
        let deletion = check_deletion(&now, &oldest, "f", &[7, 1, 1]).unwrap();
        assert_eq!(deletion, DomainDeletion { deleted: vec![1], not_present: vec![7] });
        let mut after = now.clone();
        after.remove_domain(1);
        assert_eq!(after.to_string(), "0-1-9");
        assert_eq!(after.position().to_string(), "0-1-9");
    }
}
