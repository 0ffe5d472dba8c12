//! `pond usage`: tokens and cost summed over the store's `usage` dataset, in the sql worker.

use serde::{Deserialize, Serialize};

/// What one row of a usage summary is: a day, a week, a month, a session, a model, a
/// project or a client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UsageGroup {
    #[default]
    Daily,
    /// Weeks from Monday, named by their Monday.
    Weekly,
    Monthly,
    Session,
    Model,
    Project,
    Client,
}

impl crate::Choice for UsageGroup {
    const NAMES: &'static [(&'static str, UsageGroup)] = &[
        ("daily", UsageGroup::Daily),
        ("weekly", UsageGroup::Weekly),
        ("monthly", UsageGroup::Monthly),
        ("session", UsageGroup::Session),
        ("model", UsageGroup::Model),
        ("project", UsageGroup::Project),
        ("client", UsageGroup::Client),
    ];
    const SCHEMA_NAME: &'static str = "UsageGroup";
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRequest {
    pub group: UsageGroup,
    /// Inclusive lower bound, epoch ms.
    pub since_ms: Option<i64>,
    /// Exclusive upper bound, epoch ms.
    pub until_ms: Option<i64>,
    /// A client's name (its subagents too) or a variant's, as search's filter reads it.
    pub client: Option<String>,
    /// Substring of the project path, in any case.
    pub project: Option<String>,
    /// Substring of the model name.
    pub model: Option<String>,
    /// Days, weeks and months in UTC instead of the local zone.
    pub utc: bool,
    /// A price table (the embedded table's JSON format) whose models replace or add to the
    /// embedded ones (`--prices FILE`).
    pub prices: Option<String>,
}

/// Token counts of a set of model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input not read from a cache.
    pub input: u64,
    /// Output, reasoning included.
    pub output: u64,
    pub cache_write: u64,
    pub cache_read: u64,
    pub reasoning: u64,
}

impl Tokens {
    /// Adds `o`'s counts, each stopping at `u64::MAX` rather than overflowing.
    pub fn add(&mut self, o: &Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.reasoning = self.reasoning.saturating_add(o.reasoning);
    }

    /// Every token counted once (reasoning is inside output), stopping at `u64::MAX`.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_write)
            .saturating_add(self.cache_read)
    }
}

/// One group and model of a usage summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageLine {
    /// The day (`2026-03-01`), week (its Monday), month (`2026-03`), session id, model,
    /// project or client.
    pub group: String,
    pub model: Option<String>,
    pub tokens: Tokens,
    /// Model calls counted.
    pub calls: u64,
    /// USD the clients recorded themselves.
    pub cost_recorded: f64,
    /// USD computed from the price table.
    pub cost_computed: f64,
    /// Calls with a recorded or computed cost.
    pub priced_calls: u64,
    /// Calls with tokens whose model has no price (and no recorded cost): not in the cost.
    pub unpriced_calls: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    pub group: UsageGroup,
    /// By group, then model.
    pub lines: Vec<UsageLine>,
    /// Whether the store's usage covers every line it holds (false: an older store whose
    /// lines have not been read for usage yet; a sync or `pond rebuild --usage` does it).
    pub complete: bool,
    /// The price table's date, as its file says.
    pub prices_date: String,
    pub elapsed_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::Tokens;

    #[test]
    fn sums_stop_at_the_largest_count_instead_of_overflowing() {
        let big = Tokens {
            input: u64::MAX,
            output: 1,
            cache_write: 2,
            cache_read: 3,
            reasoning: u64::MAX,
        };
        assert_eq!(big.total(), u64::MAX);
        let mut t = big;
        t.add(&big);
        assert_eq!(t.input, u64::MAX);
        assert_eq!(t.output, 2);
        assert_eq!(t.reasoning, u64::MAX);
    }
}
