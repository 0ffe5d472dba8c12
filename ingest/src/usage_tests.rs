//! Token counts read from each client's lines (synthetic lines written for these tests).

use std::path::PathBuf;

use crate::reader::read_file;
use crate::sources::{SourceKind, CLAUDE_CODE, CODEX, GEMINI};
use crate::{FileCursor, SourceFile, UsageRow};

fn file(dir: &tempfile::TempDir, name: &str, kind: SourceKind, text: &str) -> SourceFile {
    let path: PathBuf = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    SourceFile {
        path,
        kind: Some(kind),
        parent_session: None,
        is_subagent: false,
    }
}

fn counts(u: &UsageRow) -> [u64; 5] {
    [u.input, u.output, u.cache_write, u.cache_read, u.reasoning]
}

const CLAUDE: &str = r#"{"type":"user","uuid":"u1","sessionId":"S","timestamp":"2026-03-01T10:00:00Z","cwd":"/w","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"u2","sessionId":"S","requestId":"r1","timestamp":"2026-03-01T10:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"t"}],"usage":{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":100,"cache_read_input_tokens":200}}}
{"type":"assistant","uuid":"u3","sessionId":"S","requestId":"r1","timestamp":"2026-03-01T10:00:02Z","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":3,"output_tokens":50,"cache_creation_input_tokens":100,"cache_read_input_tokens":200}}}
{"type":"assistant","uuid":"u4","sessionId":"S","timestamp":"2026-03-01T10:00:03Z","costUSD":0.25,"message":{"role":"assistant","model":"claude-x","content":"old","usage":{"input_tokens":7,"output_tokens":8}}}
{"type":"assistant","uuid":"u5","sessionId":"S","requestId":"r2","message":{"id":"m2","role":"assistant","content":"no time","usage":{"input_tokens":1,"output_tokens":1}}}
{"type":"assistant","uuid":"u6","sessionId":"S","requestId":"r3","timestamp":"2026-03-01T10:00:04Z","message":{"id":"m3","role":"assistant","content":"no counts","usage":{"input_tokens":1}}}
"#;

/// Every line of a response carries a usage; all share the response's key (the store
/// counts the first), lines without a timestamp or an output count are not read, and a
/// line's own cost is kept.
#[test]
fn claude_usage_per_line_keyed_by_response() {
    let d = tempfile::tempdir().unwrap();
    let f = file(&d, "S.jsonl", CLAUDE_CODE, CLAUDE);
    let u = read_file(&f, None).batch.usage;
    assert_eq!(u.len(), 3, "{u:#?}");
    assert_eq!((u[0].key.as_str(), u[1].key.as_str()), ("m1:r1", "m1:r1"));
    assert_eq!(counts(&u[0]), [3, 1, 100, 200, 0]);
    assert_eq!(u[0].model.as_deref(), Some("claude-x"));
    assert_eq!(u[0].request_id.as_deref(), Some("r1"));
    assert_eq!(u[0].message_id.as_deref(), Some("u2"));
    assert_eq!(u[0].project.as_deref(), Some("/w"));
    assert_eq!((u[0].session_id.as_str(), u[0].source_line), ("S", 2));
    assert_eq!(u[2].key, "u4", "no request id: the line's uuid");
    assert_eq!(u[2].cost_usd, Some(0.25));
    assert_eq!(u[0].cost_usd, None);
}

/// A subagent's tokens count for its parent session.
#[test]
fn claude_subagent_usage_counts_for_its_session() {
    let d = tempfile::tempdir().unwrap();
    let mut f = file(&d, "agent-a.jsonl", CLAUDE_CODE, CLAUDE);
    f.is_subagent = true;
    f.parent_session = Some("S".into());
    let u = read_file(&f, None).batch.usage;
    assert!(u.iter().all(|u| u.session_id == "S"), "{u:#?}");
    assert!(u.iter().all(|u| u.source_agent == "claude-code/subagent"));
}

const CODEX_LINES: &str = r#"{"timestamp":"2026-03-01T10:00:00Z","type":"session_meta","payload":{"id":"T","timestamp":"2026-03-01T10:00:00Z","cwd":"/w"}}
{"timestamp":"2026-03-01T10:00:01Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-x"}}
{"timestamp":"2026-03-01T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":null}}
{"timestamp":"2026-03-01T10:00:03Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110}}}}
{"timestamp":"2026-03-01T10:00:04Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110}}}}
{"timestamp":"2026-03-01T10:00:05Z","type":"event_msg","payload":{"type":"token_count","info":{"prompt":5,"completion":6}}}
"#;

const CODEX_MORE: &str = r#"{"timestamp":"2026-03-01T10:00:06Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110}}}}
{"timestamp":"2026-03-01T10:00:07Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-y"}}
{"timestamp":"2026-03-01T10:00:08Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":300,"cached_input_tokens":140,"output_tokens":30,"reasoning_output_tokens":4,"total_tokens":330},"last_token_usage":{"input_tokens":200,"cached_input_tokens":100,"output_tokens":20,"reasoning_output_tokens":0,"total_tokens":220}}}}
"#;

/// Codex: a turn's `last_token_usage`, never the cumulative total; a count repeated with
/// the same total is the same turn (also across two reads of a growing file); the model
/// comes from the last `turn_context`; older `{prompt, completion}` infos are not counted.
#[test]
fn codex_usage_per_turn_never_the_cumulative_total() {
    let d = tempfile::tempdir().unwrap();
    let f = file(&d, "rollout-x.jsonl", CODEX, CODEX_LINES);
    let first = read_file(&f, None);
    let u = &first.batch.usage;
    assert_eq!(u.len(), 1, "{u:#?}");
    assert_eq!(counts(&u[0]), [60, 10, 0, 40, 4]);
    assert_eq!(u[0].model.as_deref(), Some("gpt-x"));
    assert_eq!(u[0].key, "T:4");
    std::fs::write(&f.path, format!("{CODEX_LINES}{CODEX_MORE}")).unwrap();
    let cursor: FileCursor = first.cursor;
    let u = read_file(&f, Some(&cursor)).batch.usage;
    assert_eq!(u.len(), 1, "{u:#?}");
    assert_eq!(counts(&u[0]), [100, 20, 0, 100, 0]);
    assert_eq!(u[0].model.as_deref(), Some("gpt-y"));
}

const GEMINI_LINES: &str = r#"{"sessionId":"G","projectHash":"h","startTime":"2026-03-01T10:00:00Z","kind":"main"}
{"id":"a1","timestamp":"2026-03-01T10:00:01Z","type":"gemini","content":"first","model":"gemini-x","tokens":{"input":50,"output":5,"cached":20,"thoughts":3,"tool":2,"total":60}}
{"id":"a1","timestamp":"2026-03-01T10:00:02Z","type":"gemini","content":"replaced","model":"gemini-x","tokens":{"input":70,"output":9,"cached":20,"thoughts":3,"tool":0,"total":82}}
{"id":"a2","timestamp":"2026-03-01T10:00:03Z","type":"user","content":"hi","tokens":{"input":1}}
"#;

/// Gemini: an answer's tokens, cached input taken out of input and thoughts added to
/// output; a record replacing an earlier one of the same id replaces its tokens too.
#[test]
fn gemini_usage_per_answer_replaced_with_its_message() {
    let d = tempfile::tempdir().unwrap();
    let f = file(&d, "session-2026-03-01T10-00-G.jsonl", GEMINI, GEMINI_LINES);
    let u = read_file(&f, None).batch.usage;
    assert_eq!(u.len(), 1, "{u:#?}");
    assert_eq!(counts(&u[0]), [50, 12, 0, 20, 3]);
    assert_eq!(u[0].key, "G:a1");
}

/// A count over the per-call bound (one past `u64` included, as Gemini's input plus tool
/// tokens or output plus thoughts would overflow) is not kept: the call is noted as a
/// skip, its line kept, and the calls around it read.
#[test]
fn a_count_over_the_bound_is_skipped_not_kept() {
    let lines = r#"{"sessionId":"G","projectHash":"h","startTime":"2026-03-01T10:00:00Z","kind":"main"}
{"id":"a1","timestamp":"2026-03-01T10:00:01Z","type":"gemini","content":"x","tokens":{"input":18446744073709551615,"tool":5,"output":1}}
{"id":"a2","timestamp":"2026-03-01T10:00:02Z","type":"gemini","content":"y","tokens":{"input":1,"output":18446744073709551615,"thoughts":9}}
{"id":"a3","timestamp":"2026-03-01T10:00:03Z","type":"gemini","content":"z","tokens":{"input":1,"output":1,"cached":1e30}}
{"id":"a4","timestamp":"2026-03-01T10:00:04Z","type":"gemini","content":"ok","tokens":{"input":4,"output":2}}
"#;
    let d = tempfile::tempdir().unwrap();
    let f = file(&d, "session-2026-03-01T10-00-G.jsonl", GEMINI, lines);
    let b = read_file(&f, None).batch;
    assert_eq!(b.usage.len(), 1, "{:#?}", b.usage);
    assert_eq!(counts(&b.usage[0]), [4, 2, 0, 0, 0]);
    assert_eq!(b.skipped.get("usage ignored"), Some(&3), "{:?}", b.skips);
    assert_eq!(b.skips[0].line, 2);
    assert!(b.skips[0].reason.contains("input of 18446744073709551615"));
    assert_eq!(b.records.len(), 5);
}
