//! kagent's token-usage extension: each response's usage, and a task's totals by kagent's
//! aggregation rules (per model, ordered by name).

use serde::{Deserialize, Serialize};

/// The kagent token-usage extension.
pub const USAGE_EXTENSION_URI: &str = "https://kagent.dev/extensions/usage/v1";
/// Per-response usage on an agent message's metadata.
pub const USAGE_KEY: &str = "kagent.dev/a2a/usage";

/// Token counts of one response, or summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    /// Generated tokens, reasoning excluded.
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    /// Provider-cached input, a subset of `input_tokens`.
    pub cached_input_tokens: u64,
    /// The provider's total, else input + output + reasoning.
    pub total_tokens: u64,
}

impl Usage {
    /// Builds one response's usage; a missing provider total is derived.
    pub fn of_response(
        input: u64,
        output: u64,
        reasoning: u64,
        cached: u64,
        total: Option<u64>,
    ) -> Self {
        Self {
            input_tokens: input,
            output_tokens: output,
            reasoning_tokens: reasoning,
            cached_input_tokens: cached,
            total_tokens: total
                .unwrap_or_else(|| input.saturating_add(output).saturating_add(reasoning)),
        }
    }

    /// Counts are summed saturating: a provider's or a stored count never overflows a total.
    fn add(&mut self, o: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(o.reasoning_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(o.cached_input_tokens);
        self.total_tokens = self.total_tokens.saturating_add(o.total_tokens);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    pub model: String,
    #[serde(flatten)]
    pub usage: Usage,
}

/// The usage extension payload: task-lifetime totals, and per model ordered by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    #[serde(flatten)]
    pub total: Usage,
    #[serde(default)]
    pub models: Vec<ModelUsage>,
}

impl UsageTotals {
    /// Counts one final response; calls without a model name count only in the totals.
    pub fn record(&mut self, model: Option<&str>, usage: &Usage) {
        self.total.add(usage);
        if let Some(m) = model.filter(|m| !m.is_empty()) {
            match self.models.binary_search_by(|x| x.model.as_str().cmp(m)) {
                Ok(i) => self.models[i].usage.add(usage),
                Err(i) => self.models.insert(
                    i,
                    ModelUsage {
                        model: m.to_string(),
                        usage: *usage,
                    },
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_provider_total_is_derived_per_call() {
        let u = Usage::of_response(100, 20, 5, 10, None);
        assert_eq!(u.total_tokens, 125);
        let u = Usage::of_response(100, 20, 5, 10, Some(130));
        assert_eq!(u.total_tokens, 130);
    }

    #[test]
    fn totals_add_up_per_model_sorted_by_name_and_unnamed_calls_only_in_the_total() {
        let mut t = UsageTotals::default();
        t.record(Some("zeta"), &Usage::of_response(10, 1, 0, 0, None));
        t.record(Some("alpha"), &Usage::of_response(20, 2, 1, 5, None));
        t.record(Some("zeta"), &Usage::of_response(30, 3, 0, 0, Some(40)));
        t.record(None, &Usage::of_response(1, 1, 0, 0, None));
        assert_eq!(t.total.input_tokens, 61);
        assert_eq!(t.total.total_tokens, 11 + 23 + 40 + 2);
        assert_eq!(
            t.models
                .iter()
                .map(|m| m.model.as_str())
                .collect::<Vec<_>>(),
            ["alpha", "zeta"]
        );
        assert_eq!(t.models[1].usage.input_tokens, 40);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["inputTokens"], 61);
        assert_eq!(v["models"][0]["model"], "alpha");
        assert_eq!(v["models"][0]["cachedInputTokens"], 5);
    }
}
