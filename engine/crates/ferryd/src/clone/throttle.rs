//! The recipient's throttle: a token bucket on the bytes received, whose rate can change while a clone runs
//! (`PATCH /v1/clone`). Unthrottled, it never waits. The bucket holds at most a quarter second of the rate (and
//! at least one chunk), so a rate change takes effect within that.

use std::time::Duration;

use tokio::time::Instant;

/// A token bucket: `rate` bytes per second (None: no limit).
#[derive(Debug)]
pub struct TokenBucket {
    rate: Option<u64>,
    tokens: f64,
    at: Instant,
    burst_min: u64,
}

impl TokenBucket {
    /// A bucket refilled at `rate`, holding at least `burst_min` bytes (a chunk) when full.
    pub fn new(rate: Option<u64>, burst_min: u64) -> Self {
        TokenBucket { rate, tokens: 0.0, at: Instant::now(), burst_min }
    }

    /// Changes the rate from now on.
    pub fn set_rate(&mut self, rate: Option<u64>) {
        self.refill();
        self.rate = rate;
        self.tokens = self.tokens.min(self.capacity());
    }

    fn capacity(&self) -> f64 {
        self.rate.map_or(f64::INFINITY, |r| (r / 4).max(self.burst_min) as f64)
    }

    fn refill(&mut self) {
        let now = Instant::now();
        if let Some(rate) = self.rate {
            let gained = now.duration_since(self.at).as_secs_f64() * rate as f64;
            self.tokens = (self.tokens + gained).min(self.capacity());
        }
        self.at = now;
    }

    /// Takes `bytes`: how long to wait before they may be taken (zero when at once). The bytes are taken either
    /// way (the bucket goes below zero), so the caller waits that long once.
    pub fn take(&mut self, bytes: u64) -> Duration {
        let Some(rate) = self.rate.filter(|r| *r > 0) else {
            return Duration::ZERO;
        };
        self.refill();
        self.tokens -= bytes as f64;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / rate as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_bucket_keeps_the_rate_and_follows_a_change() {
        let mut bucket = TokenBucket::new(Some(1000), 100);
        assert_eq!(bucket.take(500), Duration::from_millis(500));
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(bucket.take(100), Duration::from_millis(100));
        bucket.set_rate(None);
        assert_eq!(bucket.take(1 << 30), Duration::ZERO);
        bucket.set_rate(Some(10_000));
        tokio::time::advance(Duration::from_secs(10)).await;
        // Full after a long idle time: a quarter second of the rate, no more.
        assert_eq!(bucket.take(2500), Duration::ZERO);
        assert!(bucket.take(1000) > Duration::ZERO);
    }
}
