//! The admin token: read from `--admin-token-file`, compared in constant time.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

/// The shared secret for mutating admin calls and privileged protocol connections.
#[derive(Clone)]
pub struct AdminToken(Arc<String>);

impl AdminToken {
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading --admin-token-file {}", path.display()))?;
        let token = text.trim().to_string();
        if token.len() < 16 {
            anyhow::bail!("the admin token in {} is shorter than 16 characters", path.display());
        }
        Ok(AdminToken(Arc::new(token)))
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
