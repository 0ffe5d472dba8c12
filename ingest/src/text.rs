//! Small helpers shared by both parsers: timestamps, text extraction, harness detection.

use serde_json::Value;

/// RFC 3339 (or a bare `YYYY-MM-DDTHH:MM:SS` assumed UTC) to epoch milliseconds.
pub fn parse_ts(v: Option<&Value>) -> Option<i64> {
    let s = v?.as_str()?;
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_millis());
    }
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
}

pub fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Readable text of a tool result's `content`: a string, or an array of text blocks.
pub fn flatten_content(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let texts: Vec<&str> = items
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// A tool call's arguments as JSON text: an object as is; a string that holds JSON (how
/// OpenAI-style clients write arguments) as that JSON, any other string as a JSON string.
pub fn arguments_json(a: &Value) -> String {
    match a {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| a.to_string()),
        other => other.to_string(),
    }
}

/// Text the client injected into a user turn (environment blocks, instructions, command
/// echoes). It is stored but kept out of search text: it would drown real matches.
pub fn is_harness_text(s: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "<environment_context>",
        "<user_instructions>",
        "<permissions instructions>",
        "<INSTRUCTIONS>",
        "# AGENTS.md instructions",
        "<user_shell_command>",
        "<turn_aborted>",
        "<command-name>",
        "<command-message>",
        "<command-args>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<local-command-caveat>",
        "<system-reminder>",
        "<bash-input>",
        "<bash-stdout>",
        "<task-notification>",
        "Caveat: The messages below were generated",
    ];
    let t = s.trim_start();
    PREFIXES.iter().any(|p| t.starts_with(p))
}

/// Join non-empty conversational fragments into one search text.
pub fn join_search(fragments: Vec<String>) -> Option<String> {
    let kept: Vec<String> = fragments
        .into_iter()
        .filter(|s| !s.trim().is_empty())
        .collect();
    (!kept.is_empty()).then(|| kept.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps() {
        assert_eq!(
            parse_ts(Some(&json!("2026-03-01T10:00:00.000Z"))),
            Some(1_772_359_200_000)
        );
        assert_eq!(
            parse_ts(Some(&json!("2026-03-01T10:00:00"))),
            Some(1_772_359_200_000)
        );
        assert_eq!(parse_ts(Some(&json!("yesterday"))), None);
        assert_eq!(parse_ts(Some(&json!(5))), None);
    }

    #[test]
    fn harness() {
        assert!(is_harness_text("  <environment_context>\n<cwd>/x</cwd>"));
        assert!(!is_harness_text("why is the build red?"));
    }

    #[test]
    fn arguments_as_json() {
        assert_eq!(arguments_json(&json!("{\"a\":1}")), "{\"a\":1}");
        assert_eq!(arguments_json(&json!("not json")), "\"not json\"");
        assert_eq!(arguments_json(&json!({"b": 2})), "{\"b\":2}");
    }

    #[test]
    fn flatten() {
        assert_eq!(
            flatten_content(&json!([{"type":"text","text":"a"},{"type":"text","text":"b"}])),
            Some("a\nb".into())
        );
        assert_eq!(flatten_content(&json!("x")), Some("x".into()));
        assert_eq!(flatten_content(&json!([])), None);
    }
}
