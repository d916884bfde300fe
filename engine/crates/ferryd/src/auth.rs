//! The node's credentials: the admin token (`--admin-token-file`) and the change consumers' token
//! (`--consumer-token-file`), each read from its file and compared in constant time, and the role a protocol
//! connection gets from the one it presents.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

/// Shortest token accepted from a file.
const TOKEN_CHARS_MIN: usize = 16;

/// A shared secret read from a file.
#[derive(Clone)]
pub struct Token(Arc<String>);

/// The shared secret for mutating admin calls and privileged protocol connections (replicas, the control plane).
pub type AdminToken = Token;

impl Token {
    /// Reads the admin token from `--admin-token-file`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        Self::read(path, "--admin-token-file", "admin token")
    }

    /// Reads a token from `path`, named in errors by its `flag` and what it is.
    pub fn read(path: &Path, flag: &str, what: &str) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {flag} {}", path.display()))?;
        let token = text.trim().to_string();
        if token.len() < TOKEN_CHARS_MIN {
            anyhow::bail!("the {what} in {} is shorter than {TOKEN_CHARS_MIN} characters", path.display());
        }
        Ok(Token(Arc::new(token)))
    }

    /// The token itself, for authenticating to other nodes (replication).
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison, so response timing does not leak the token.
    pub fn matches(&self, offered: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), offered.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// What a protocol connection may do, by the token it presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token: transactions, reads, waits.
    Anonymous,
    /// The consumer token: reads and change subscriptions only — no writes, no binlog dumps, no GTID overrides,
    /// never a replica, never counted for semi-sync.
    Consumer,
    /// The admin token: everything, binlog dumps (replicas) and explicit GTIDs included.
    Admin,
}

/// The node's tokens.
#[derive(Clone, Default)]
pub struct Credentials {
    pub admin: Option<AdminToken>,
    /// The change consumers' token; none: no consumer can subscribe (the admin token still can).
    pub consumer: Option<Token>,
}

impl Credentials {
    /// Reads both files; the consumer token must differ from the admin token, so that it never grants more
    /// than a consumer's role.
    pub fn load(admin: Option<&Path>, consumer: Option<&Path>) -> anyhow::Result<Self> {
        let admin = admin.map(Token::from_file).transpose()?;
        let consumer = consumer.map(|p| Token::read(p, "--consumer-token-file", "consumer token")).transpose()?;
        if let (Some(a), Some(c)) = (&admin, &consumer) {
            if a.matches(c.secret()) {
                anyhow::bail!(
                    "--consumer-token-file holds the admin token: a change consumer's credential must be its own, \
                     or it would grant everything the admin token does"
                );
            }
        }
        Ok(Credentials { admin, consumer })
    }

    /// The role `offered` grants, or why it grants none.
    pub fn authenticate(&self, offered: &str) -> Result<Access, &'static str> {
        if self.admin.as_ref().is_some_and(|t| t.matches(offered)) {
            return Ok(Access::Admin);
        }
        if self.consumer.as_ref().is_some_and(|t| t.matches(offered)) {
            return Ok(Access::Consumer);
        }
        Err(match (&self.admin, &self.consumer) {
            (None, None) => {
                "this node has no admin token (--admin-token-file) and no consumer token (--consumer-token-file)"
            }
            (Some(_), None) => "wrong admin token",
            (None, Some(_)) => "wrong consumer token (this node has no admin token: --admin-token-file)",
            (Some(_), Some(_)) => "wrong token: neither the admin token nor the consumer token",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn each_token_grants_its_own_role_and_nothing_else_passes() {
        let (admin, consumer) = (file("admin-token-0123456789"), file("consumer-token-0123456789\n"));
        let creds = Credentials::load(Some(admin.path()), Some(consumer.path())).unwrap();
        assert_eq!(creds.authenticate("admin-token-0123456789"), Ok(Access::Admin));
        assert_eq!(creds.authenticate("consumer-token-0123456789"), Ok(Access::Consumer));
        assert!(creds.authenticate("consumer-token-012345678").unwrap_err().contains("neither"));
        assert!(creds.authenticate("").is_err());
    }

    #[test]
    fn a_node_without_a_consumer_token_grants_no_consumer_role() {
        let admin = file("admin-token-0123456789");
        let creds = Credentials::load(Some(admin.path()), None).unwrap();
        assert_eq!(creds.authenticate("consumer-token-0123456789"), Err("wrong admin token"));
        let none = Credentials::default();
        assert!(none.authenticate("anything-at-all-here").unwrap_err().contains("--consumer-token-file"));
    }

    #[test]
    fn the_consumer_token_may_not_be_the_admin_token_nor_short() {
        let (a, b) = (file("same-token-0123456789"), file(" same-token-0123456789 "));
        let e = Credentials::load(Some(a.path()), Some(b.path())).err().unwrap().to_string();
        assert!(e.contains("--consumer-token-file holds the admin token"), "{e}");
        let short = file("short");
        let e = Credentials::load(None, Some(short.path())).err().unwrap().to_string();
        assert!(e.contains("consumer token") && e.contains("shorter than 16"), "{e}");
    }
}
