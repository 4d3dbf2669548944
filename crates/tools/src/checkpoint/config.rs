//! How much a checkpoint keeps, and how many are kept.

use serde::{Deserialize, Serialize};

/// The `[checkpoints]` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Whether turns record checkpoints (default: yes).
    pub enabled: bool,
    /// Bytes of file content a scan holds, and so the most a checkpoint can keep
    /// (default 64 MiB). A changed file beyond it is named as not captured.
    pub max_bytes: u64,
    /// Checkpoints kept per session, the newest (default 50).
    pub keep_last: usize,
    /// Days a checkpoint is kept (default: no age limit). When a turn stores its
    /// checkpoint, the session's checkpoints older than this are dropped; the one just
    /// stored is always kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age_days: Option<u64>,
}

/// 64 MiB.
const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The longest `max_age_days` taken: ten years.
const MAX_AGE_DAYS: u64 = 3650;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_bytes: DEFAULT_MAX_BYTES,
            keep_last: 50,
            max_age_days: None,
        }
    }
}

impl CheckpointConfig {
    /// What is wrong with these settings, as the key (`max_bytes`, `keep_last`,
    /// `max_age_days`) and why; `None` when nothing is.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if self.max_bytes == 0 {
            return Some(("max_bytes", "expected at least 1, found 0".to_owned()));
        }
        if self.keep_last == 0 {
            return Some((
                "keep_last",
                "expected at least 1, found 0 (turn checkpoints off with enabled = false)"
                    .to_owned(),
            ));
        }
        match self.max_age_days {
            Some(days) if days == 0 || days > MAX_AGE_DAYS => Some((
                "max_age_days",
                format!("expected a number of days in [1, {MAX_AGE_DAYS}], found {days}"),
            )),
            _ => None,
        }
    }

    /// How many of a session's checkpoints to keep when one is stored at `now_ms`:
    /// `keep_last`, fewer when older ones are past `max_age_days`. `created_at_ms`
    /// are when the session's other checkpoints (not of the stored one's turn) were
    /// made.
    pub fn keep_count(&self, created_at_ms: &[i64], now_ms: i64) -> usize {
        let Some(days) = self.max_age_days else {
            return self.keep_last;
        };
        let age = i64::try_from(days)
            .unwrap_or(i64::MAX)
            .saturating_mul(DAY_MS);
        let cutoff = now_ms.saturating_sub(age);
        let young = created_at_ms.iter().filter(|&&at| at >= cutoff).count();
        // The stored one is always kept.
        young.saturating_add(1).min(self.keep_last.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_named() {
        let bad = |config: CheckpointConfig| config.problem().map(|(key, _)| key);
        assert_eq!(bad(CheckpointConfig::default()), None);
        let zero_bytes = CheckpointConfig {
            max_bytes: 0,
            ..CheckpointConfig::default()
        };
        assert_eq!(bad(zero_bytes), Some("max_bytes"));
        let zero_kept = CheckpointConfig {
            keep_last: 0,
            ..CheckpointConfig::default()
        };
        assert_eq!(bad(zero_kept), Some("keep_last"));
        for days in [0, MAX_AGE_DAYS + 1] {
            let aged = CheckpointConfig {
                max_age_days: Some(days),
                ..CheckpointConfig::default()
            };
            assert_eq!(bad(aged), Some("max_age_days"), "{days}");
        }
    }

    #[test]
    fn age_drops_old_checkpoints_but_never_the_new_one() {
        let now = 100 * DAY_MS;
        let config = CheckpointConfig {
            keep_last: 3,
            max_age_days: Some(2),
            ..CheckpointConfig::default()
        };
        // Two old ones, one young: the young one and the new one are kept.
        assert_eq!(config.keep_count(&[0, DAY_MS, now - DAY_MS], now), 2);
        // All old: only the new one.
        assert_eq!(config.keep_count(&[0, DAY_MS], now), 1);
        // All young: keep_last caps.
        let young = [now, now, now, now];
        assert_eq!(config.keep_count(&young, now), 3);
        let unaged = CheckpointConfig {
            keep_last: 7,
            ..CheckpointConfig::default()
        };
        assert_eq!(unaged.keep_count(&[0, 0], now), 7);
    }
}
