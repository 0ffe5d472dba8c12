//! A deterministic generator of realistic Claude Code, Codex, GitHub Copilot CLI, Cursor and
//! Gemini CLI session trees.
//!
//! Given a message count and a seed it writes, under one root, `claude/projects/<slug>/`
//! sessions (with subagent files), `codex/sessions/YYYY/MM/DD/` rollouts and, when asked for
//! ([`Spec::copilot_share`], [`Spec::cursor_share`], [`Spec::gemini_share`]),
//! `copilot/session-state/<id>/events.jsonl`,
//! `cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl`,
//! `gemini/tmp/<project id>/chats/session-*.jsonl`, ([`Spec::opencode_share`]) OpenCode's
//! database `opencode/opencode.db`, ([`Spec::cursor_ide_share`]) Cursor's IDE database
//! `cursor-ide/globalStorage/state.vscdb` and ([`Spec::vscode_copilot_share`]) VS Code's chat
//! logs `vscode-copilot/workspaceStorage/<hash>/chatSessions/<id>.jsonl`, in the clients' own formats: many projects over a year, sessions of lognormal length (mean ~150
//! messages), prompts and multi-line answers, thinking, tool calls and multi-line results,
//! bookkeeping rows, replayed uuids. "Messages" counts the rows pond stores as messages,
//! so a corpus of N messages syncs to N message rows.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::json;

use text::{answer, prompt, sentence, tool_input, tool_output, PROJECT_WORDS, TOOLS, WORDS};

mod text;

/// SplitMix64: small, fast, and the same stream everywhere for a seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// Skewed towards the front of `items` (common words are common).
    pub fn zipf<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let u = self.unit();
        &items[((u * u * u) * items.len() as f64) as usize]
    }

    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit().max(1e-12), self.unit());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    pub fn uuid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | (b >> 48) & 0x3fff,
            b & 0xffff_ffff_ffff
        )
    }
}
fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub messages: u64,
    pub seed: u64,
    /// Share of sessions written by Codex.
    pub codex_share: f64,
    /// Share of sessions written by GitHub Copilot CLI (0 by default: a corpus without it
    /// is the one earlier versions generated for the same seed).
    pub copilot_share: f64,
    /// Share of sessions written by Cursor's agent (0 by default, as for Copilot).
    pub cursor_share: f64,
    /// Share of sessions written by Gemini CLI (0 by default, as for Copilot).
    pub gemini_share: f64,
    /// Share of sessions written by OpenCode, all into one database (0 by default).
    pub opencode_share: f64,
    /// Share of sessions written by Cursor's IDE, all into one database (0 by default).
    pub cursor_ide_share: f64,
    /// Share of sessions written by VS Code's Copilot Chat (0 by default).
    pub vscode_copilot_share: f64,
    /// First possible session start, epoch ms.
    pub start_ms: i64,
    pub days: u64,
}

impl Spec {
    pub fn new(messages: u64, seed: u64) -> Spec {
        Spec {
            messages,
            seed,
            codex_share: 0.2,
            copilot_share: 0.0,
            cursor_share: 0.0,
            gemini_share: 0.0,
            opencode_share: 0.0,
            cursor_ide_share: 0.0,
            vscode_copilot_share: 0.0,
            start_ms: 1_764_547_200_000, // 2025-12-01
            days: 365,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub files: u64,
    pub sessions: u64,
    pub subagent_files: u64,
    pub messages: u64,
    pub searchable_messages: u64,
    pub lines: u64,
    pub bytes: u64,
}

struct Out {
    w: BufWriter<File>,
    stats_lines: u64,
    stats_bytes: u64,
}

impl Out {
    fn create(path: &Path) -> io::Result<Out> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        Ok(Out {
            w: BufWriter::with_capacity(256 * 1024, File::create(path)?),
            stats_lines: 0,
            stats_bytes: 0,
        })
    }

    fn line(&mut self, v: &serde_json::Value) -> io::Result<()> {
        let s = v.to_string();
        self.w.write_all(s.as_bytes())?;
        self.w.write_all(b"\n")?;
        self.stats_lines += 1;
        self.stats_bytes += s.len() as u64 + 1;
        Ok(())
    }

    fn finish(mut self, stats: &mut Stats) -> io::Result<()> {
        self.w.flush()?;
        stats.files += 1;
        stats.lines += self.stats_lines;
        stats.bytes += self.stats_bytes;
        Ok(())
    }
}

/// Write a corpus of about `spec.messages` messages (never fewer) under `root`.
pub fn generate(root: &Path, spec: &Spec) -> io::Result<Stats> {
    let mut r = Rng::new(spec.seed);
    let mut stats = Stats::default();
    let projects: Vec<String> = (0..60)
        .map(|i| {
            format!(
                "/home/dev/{}-{}{}",
                PROJECT_WORDS[i % PROJECT_WORDS.len()],
                WORDS[(i * 7) % 40],
                if i >= 40 { "/worktrees/feature" } else { "" }
            )
        })
        .collect();
    // OpenCode's sessions go into one database, written in one transaction.
    let mut opencode: Option<rusqlite::Connection> = None;
    let mut cursor_ide: Option<rusqlite::Connection> = None;
    while stats.messages < spec.messages {
        let left = spec.messages - stats.messages;
        let size = ((4.6 + 0.9 * r.normal()).exp() as u64)
            .clamp(4, 2000)
            .min(left.max(4));
        let project = r.zipf(&projects).clone();
        let start = spec.start_ms + (r.below(spec.days * 86_400) * 1000) as i64;
        if r.chance(spec.codex_share) {
            codex_session(root, &mut r, &mut stats, &project, start, size)?;
        } else if spec.copilot_share > 0.0
            && r.chance(spec.copilot_share / (1.0 - spec.codex_share))
        {
            copilot_session(root, &mut r, &mut stats, &project, start, size)?;
        } else if spec.cursor_share > 0.0
            && r.chance(spec.cursor_share / (1.0 - spec.codex_share - spec.copilot_share))
        {
            cursor_session(root, &mut r, &mut stats, &project, start, size)?;
        } else if spec.gemini_share > 0.0
            && r.chance(
                spec.gemini_share
                    / (1.0 - spec.codex_share - spec.copilot_share - spec.cursor_share),
            )
        {
            gemini_session(root, &mut r, &mut stats, &project, start, size)?;
        } else if spec.opencode_share > 0.0
            && r.chance(
                spec.opencode_share
                    / (1.0
                        - spec.codex_share
                        - spec.copilot_share
                        - spec.cursor_share
                        - spec.gemini_share),
            )
        {
            let db = match &mut opencode {
                Some(db) => db,
                None => opencode.insert(opencode_db(root)?),
            };
            opencode_session(db, &mut r, &mut stats, &project, start, size)
                .map_err(io::Error::other)?;
        } else if spec.cursor_ide_share > 0.0
            && r.chance(
                spec.cursor_ide_share
                    / (1.0
                        - spec.codex_share
                        - spec.copilot_share
                        - spec.cursor_share
                        - spec.gemini_share
                        - spec.opencode_share),
            )
        {
            let db = match &mut cursor_ide {
                Some(db) => db,
                None => cursor_ide.insert(cursor_ide_db(root)?),
            };
            cursor_ide_session(db, &mut r, &mut stats, &project, start, size)
                .map_err(io::Error::other)?;
        } else if spec.vscode_copilot_share > 0.0
            && r.chance(
                spec.vscode_copilot_share
                    / (1.0
                        - spec.codex_share
                        - spec.copilot_share
                        - spec.cursor_share
                        - spec.gemini_share
                        - spec.opencode_share
                        - spec.cursor_ide_share),
            )
        {
            vscode_copilot_session(root, &mut r, &mut stats, &project, start, size)?;
        } else {
            claude_session(root, &mut r, &mut stats, &project, start, size)?;
        }
        stats.sessions += 1;
    }
    for db in [opencode, cursor_ide].into_iter().flatten() {
        db.execute_batch("COMMIT").map_err(io::Error::other)?;
    }
    Ok(stats)
}

/// `opencode/opencode.db` under `root`, with OpenCode's tables (the schema of pond's
/// fixtures), a transaction open.
fn opencode_db(root: &Path) -> io::Result<rusqlite::Connection> {
    let dir = root.join("opencode");
    std::fs::create_dir_all(&dir)?;
    let db = rusqlite::Connection::open(dir.join("opencode.db")).map_err(io::Error::other)?;
    db.execute_batch(include_str!("../../../tests/clients/opencode/schema.sql"))
        .and_then(|()| db.execute_batch("BEGIN"))
        .map_err(io::Error::other)?;
    Ok(db)
}

/// One OpenCode session: prompts, and answers with reasoning, tool calls (a tenth of them
/// failing) and text, as OpenCode's `session`, `message` and `part` rows.
fn opencode_session(
    db: &rusqlite::Connection,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> rusqlite::Result<()> {
    let id = format!(
        "ses_{:024x}",
        r.next_u64() as u128 * 31 + stats.sessions as u128
    );
    let mut t = start;
    let mut message = db.prepare_cached("INSERT INTO message VALUES (?1, ?2, ?3, ?4, ?5)")?;
    let mut part = db.prepare_cached("INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
    let mut bytes = 0u64;
    let mut n = 0u64;
    let mut put_part = |mid: &str, t: i64, data: serde_json::Value| {
        n += 1;
        let data = data.to_string();
        bytes += data.len() as u64;
        part.execute(rusqlite::params![
            format!("prt_{mid}_{n:05}"),
            mid,
            id,
            t,
            t,
            data
        ])
    };
    let mut written = 0u64;
    let mut rows = Vec::new();
    while written < size {
        t += r.range(5, 600) as i64 * 1000;
        let mid = format!("msg_{:016x}", r.next_u64());
        rows.push((mid.clone(), t, t, json!({"role": "user", "time": {"created": t}, "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}})));
        put_part(&mid, t, json!({"type": "text", "text": prompt(r)}))?;
        written += 1;
        stats.searchable_messages += 1;
        if written >= size {
            break;
        }
        let begun = t + 1000;
        let aid = format!("msg_{:016x}", r.next_u64());
        put_part(&aid, begun, json!({"type": "step-start"}))?;
        if r.chance(0.5) {
            let mut thought = String::new();
            sentence(r, &mut thought, 8, 30);
            put_part(&aid, begun, json!({"type": "reasoning", "text": thought}))?;
        }
        t = begun;
        for _ in 0..r.range(0, 4) {
            t += r.range(1, 20) as i64 * 1000;
            let tool = *r.pick(TOOLS);
            let state = if r.chance(0.1) {
                json!({"status": "error", "input": tool_input(r, tool), "error": "command failed", "time": {"start": t, "end": t + 500}})
            } else {
                json!({"status": "completed", "input": tool_input(r, tool), "output": tool_output(r), "title": tool, "metadata": {}, "time": {"start": t, "end": t + 500}})
            };
            put_part(
                &aid,
                t,
                json!({"type": "tool", "callID": format!("call_{:016x}", r.next_u64()), "tool": tool.to_lowercase(), "state": state}),
            )?;
        }
        t += r.range(2, 60) as i64 * 1000;
        put_part(&aid, t, json!({"type": "text", "text": answer(r)}))?;
        put_part(
            &aid,
            t,
            json!({"type": "step-finish", "reason": "stop", "cost": 0, "tokens": {"input": 1000, "output": 200, "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
        )?;
        rows.push((aid, begun, t, json!({"role": "assistant", "time": {"created": begun, "completed": t}, "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "path": {"cwd": project, "root": project}, "cost": 0, "tokens": {"input": 1000, "output": 200, "reasoning": 0, "cache": {"read": 0, "write": 0}}})));
        written += 1;
        stats.searchable_messages += 1;
    }
    for (mid, created, updated, data) in rows {
        let data = data.to_string();
        bytes += data.len() as u64;
        message.execute(rusqlite::params![mid, id, created, updated, data])?;
    }
    db.prepare_cached("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?1, 'global', ?2, ?3, ?4, '1.14.2', ?5, ?6)")?
        .execute(rusqlite::params![id, &id[4..12], project, format!("Session in {project}"), start, t])?;
    // pond stores one line per session row and per message.
    stats.files += 1;
    stats.messages += written;
    stats.lines += 1 + written;
    stats.bytes += bytes;
    Ok(())
}

/// `cursor-ide/globalStorage/state.vscdb` under `root`, with Cursor's two key-value tables, a
/// transaction open.
fn cursor_ide_db(root: &Path) -> io::Result<rusqlite::Connection> {
    let dir = root.join("cursor-ide/globalStorage");
    std::fs::create_dir_all(&dir)?;
    let db = rusqlite::Connection::open(dir.join("state.vscdb")).map_err(io::Error::other)?;
    db.execute_batch(
        "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
         CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
         BEGIN",
    )
    .map_err(io::Error::other)?;
    Ok(db)
}

/// One conversation of Cursor's IDE: a composer row, and a bubble row per message (prompts;
/// answers with thinking; tool calls, a tenth of them failing, each a bubble of its own).
fn cursor_ide_session(
    db: &rusqlite::Connection,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> rusqlite::Result<()> {
    let id = r.uuid();
    let mut put = db.prepare_cached("INSERT INTO cursorDiskKV VALUES (?1, ?2)")?;
    let mut headers = Vec::new();
    let mut bytes = 0u64;
    let mut t = start;
    let mut bubble = |r: &mut Rng,
                      headers: &mut Vec<serde_json::Value>,
                      mut b: serde_json::Value,
                      ty: u8,
                      t: i64| {
        let bid = r.uuid();
        b["_v"] = json!(3);
        b["type"] = json!(ty);
        b["bubbleId"] = json!(bid);
        b["createdAt"] = json!(iso(t));
        let value = b.to_string();
        bytes += value.len() as u64;
        headers.push(json!({"bubbleId": bid, "type": ty}));
        put.execute(rusqlite::params![format!("bubbleId:{id}:{bid}"), value])
    };
    let mut written = 0u64;
    while written < size {
        t += r.range(5, 600) as i64 * 1000;
        let text = prompt(r);
        let uri = format!("file://{project}");
        bubble(
            r,
            &mut headers,
            json!({"text": text, "richText": "", "modelInfo": {"modelName": "claude-4.5-sonnet"}, "workspaceUris": [uri]}),
            1,
            t,
        )?;
        written += 1;
        stats.searchable_messages += 1;
        for _ in 0..r.range(0, 4) {
            if written >= size {
                break;
            }
            t += r.range(1, 20) as i64 * 1000;
            let tool = *r.pick(TOOLS);
            let failed = r.chance(0.1);
            let result = if failed {
                json!({"error": "command failed"})
            } else {
                json!({"output": tool_output(r)})
            };
            let input = tool_input(r, tool).to_string();
            let call = format!("toolu_{:016x}", r.next_u64());
            bubble(
                r,
                &mut headers,
                json!({"text": "", "toolFormerData": {"name": tool.to_lowercase(), "toolCallId": call, "status": if failed { "error" } else { "completed" }, "rawArgs": input, "result": result.to_string()}}),
                2,
                t,
            )?;
            written += 1;
        }
        if written >= size {
            break;
        }
        t += r.range(2, 60) as i64 * 1000;
        let mut b = json!({"text": answer(r), "codeBlocks": [], "tokenCount": {"inputTokens": 1000, "outputTokens": 200}});
        if r.chance(0.5) {
            let mut thought = String::new();
            sentence(r, &mut thought, 8, 30);
            b["thinking"] = json!({"text": thought});
        }
        bubble(r, &mut headers, b, 2, t)?;
        written += 1;
        stats.searchable_messages += 1;
    }
    let composer = json!({"_v": 10, "composerId": id, "name": format!("Session in {project}"), "text": "", "richText": "", "createdAt": start, "lastUpdatedAt": t, "status": "completed", "unifiedMode": "agent", "modelConfig": {"modelName": "claude-4.5-sonnet"}, "fullConversationHeadersOnly": headers}).to_string();
    bytes += composer.len() as u64;
    put.execute(rusqlite::params![format!("composerData:{id}"), composer])?;
    // pond stores one line per composer row and per bubble.
    stats.files += 1;
    stats.messages += written;
    stats.lines += 1 + written;
    stats.bytes += bytes;
    Ok(())
}

fn slug(project: &str) -> String {
    project
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Claude session `id` in `dir`; returns the messages written.
#[allow(clippy::too_many_arguments)]
fn claude_file(
    path: &Path,
    r: &mut Rng,
    stats: &mut Stats,
    session_id: &str,
    agent_id: Option<&str>,
    project: &str,
    mut t: i64,
    size: u64,
) -> io::Result<i64> {
    let mut out = Out::create(path)?;
    let mut parent: Option<String> = None;
    let mut written = 0u64;
    let mut replay: Option<serde_json::Value> = None;
    let base = |r: &mut Rng, parent: &Option<String>, t: i64| {
        let uuid = r.uuid();
        let mut v = json!({
            "parentUuid": parent, "isSidechain": agent_id.is_some(), "userType": "external",
            "cwd": project, "sessionId": session_id, "version": "2.1.90", "gitBranch": "main",
            "uuid": uuid, "timestamp": iso(t),
        });
        if let Some(a) = agent_id {
            v["agentId"] = json!(a);
        }
        (uuid, v)
    };
    let mut turn = 0;
    while written < size {
        turn += 1;
        if agent_id.is_none() && r.chance(0.5) {
            out.line(&json!({"type": "file-history-snapshot", "messageId": r.uuid(), "snapshot": {"trackedFileBackups": {}, "timestamp": iso(t)}, "isSnapshotUpdate": false}))?;
        }
        t += r.range(5, 600) as i64 * 1000;
        let (uuid, mut v) = base(r, &parent, t);
        v["type"] = json!("user");
        v["message"] = json!({"role": "user", "content": prompt(r)});
        out.line(&v)?;
        parent = Some(uuid);
        written += 1;
        stats.searchable_messages += 1;
        let steps = r.range(0, 4);
        let request = format!("req_{:016x}", r.next_u64());
        for _ in 0..steps {
            if written >= size {
                break;
            }
            if r.chance(0.3) {
                t += r.range(1, 8) as i64 * 1000;
                let (uuid, mut v) = base(r, &parent, t);
                let mut thought = String::new();
                sentence(r, &mut thought, 10, 50);
                v["type"] = json!("assistant");
                v["requestId"] = json!(request);
                v["message"] = json!({"id": format!("msg_{turn}"), "role": "assistant", "model": "claude-sonnet-4-6", "content": [{"type": "thinking", "thinking": thought, "signature": "sig"}], "usage": {"input_tokens": 100, "output_tokens": 20}});
                out.line(&v)?;
                parent = Some(uuid);
                written += 1;
            }
            t += r.range(1, 20) as i64 * 1000;
            let tool = *r.pick(TOOLS);
            let call = format!("toolu_{:016x}", r.next_u64());
            let (uuid, mut v) = base(r, &parent, t);
            v["type"] = json!("assistant");
            v["requestId"] = json!(request);
            v["message"] = json!({"id": format!("msg_{turn}"), "role": "assistant", "model": "claude-sonnet-4-6", "content": [{"type": "tool_use", "id": call, "name": tool, "input": tool_input(r, tool)}], "usage": {"input_tokens": 100, "output_tokens": 40}});
            out.line(&v)?;
            parent = Some(uuid);
            t += r.range(1, 30) as i64 * 1000;
            let output = tool_output(r);
            let is_error = r.chance(0.1);
            let (uuid, mut v) = base(r, &parent, t);
            v["type"] = json!("user");
            v["message"] = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": output, "is_error": is_error}]});
            v["toolUseResult"] = json!({"stdout": output, "stderr": "", "interrupted": false});
            out.line(&v)?;
            parent = Some(uuid);
            written += 2;
        }
        if written < size {
            t += r.range(2, 60) as i64 * 1000;
            let (uuid, mut v) = base(r, &parent, t);
            v["type"] = json!("assistant");
            v["requestId"] = json!(request);
            v["message"] = json!({"id": format!("msg_{turn}_t"), "role": "assistant", "model": "claude-sonnet-4-6", "content": [{"type": "text", "text": answer(r)}], "usage": {"input_tokens": 100, "output_tokens": 300}});
            out.line(&v)?;
            if replay.is_none() && r.chance(0.02) {
                replay = Some(v.clone());
            }
            parent = Some(uuid);
            written += 1;
            stats.searchable_messages += 1;
        }
        if agent_id.is_none() && written < size && r.chance(0.3) {
            let (uuid, mut v) = base(r, &parent, t);
            v["type"] = json!("system");
            v["subtype"] = json!("turn_duration");
            v["content"] = json!(format!("Turn took {}s", r.range(2, 400)));
            out.line(&v)?;
            parent = Some(uuid);
            written += 1;
        }
    }
    // A replayed line (same uuid) as Claude writes after a resume: stored once.
    if let Some(v) = replay {
        out.line(&v)?;
    }
    if agent_id.is_none() {
        let mut title = String::new();
        sentence(r, &mut title, 3, 6);
        out.line(&json!({"type": "ai-title", "sessionId": session_id, "aiTitle": title}))?;
        out.line(&json!({"type": "last-prompt", "sessionId": session_id}))?;
    }
    out.finish(stats)?;
    stats.messages += written;
    Ok(t)
}

fn claude_session(
    root: &Path,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> io::Result<()> {
    let id = r.uuid();
    let dir = root.join("claude/projects").join(slug(project));
    let subagents = if size > 30 && r.chance(0.15) {
        r.range(1, 3)
    } else {
        0
    };
    let sub_size = |r: &mut Rng| r.range(6, 40);
    let mut main = size;
    let sizes: Vec<u64> = (0..subagents)
        .map(|_| {
            let s = sub_size(r).min(main.saturating_sub(4));
            main -= s;
            s
        })
        .filter(|&s| s > 0)
        .collect();
    let end = claude_file(
        &dir.join(format!("{id}.jsonl")),
        r,
        stats,
        &id,
        None,
        project,
        start,
        main,
    )?;
    for s in sizes {
        let agent = format!("{:017x}", r.next_u64() >> 4);
        let path = dir
            .join(&id)
            .join("subagents")
            .join(format!("agent-a{agent}.jsonl"));
        claude_file(
            &path,
            r,
            stats,
            &id,
            Some(&format!("a{agent}")),
            project,
            start + (end - start) / 2,
            s,
        )?;
        stats.subagent_files += 1;
    }
    Ok(())
}

fn codex_session(
    root: &Path,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> io::Result<()> {
    let id = r.uuid();
    let day = chrono::DateTime::from_timestamp_millis(start).unwrap_or_default();
    let path = root
        .join("codex/sessions")
        .join(day.format("%Y/%m/%d").to_string())
        .join(format!(
            "rollout-{}-{id}.jsonl",
            day.format("%Y-%m-%dT%H-%M-%S")
        ));
    let mut out = Out::create(&path)?;
    let mut t = start;
    let env = |k: &str, p: serde_json::Value, t: i64| json!({"timestamp": iso(t), "type": k, "payload": p});
    out.line(&env("session_meta", json!({"id": id, "timestamp": iso(t), "cwd": project, "originator": "codex_cli_rs", "cli_version": "0.118.0", "model_provider": "openai", "git": {"branch": "main"}}), t))?;
    out.line(&env("turn_context", json!({"cwd": project, "model": "gpt-5-codex", "approval_policy": "on-request", "sandbox_policy": {"mode": "workspace-write"}}), t))?;
    out.line(&env("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("<environment_context>\n  <cwd>{project}</cwd>\n</environment_context>")}]}), t))?;
    let mut written = 1u64;
    while written < size {
        t += r.range(5, 600) as i64 * 1000;
        let p = prompt(r);
        out.line(&env("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": p}]}), t))?;
        out.line(&env(
            "event_msg",
            json!({"type": "user_message", "message": p, "images": []}),
            t,
        ))?;
        written += 1;
        stats.searchable_messages += 1;
        if written < size && r.chance(0.5) {
            let mut thought = String::new();
            sentence(r, &mut thought, 6, 20);
            out.line(&env("response_item", json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": thought}], "encrypted_content": "gAAAA"}), t))?;
            written += 1;
        }
        for _ in 0..r.range(0, 4) {
            if written + 2 > size {
                break;
            }
            t += r.range(1, 20) as i64 * 1000;
            let call = format!("call_{:016x}", r.next_u64());
            let args = json!({"command": ["bash", "-lc", format!("rg {} src", r.zipf(WORDS))]})
                .to_string();
            out.line(&env("response_item", json!({"type": "function_call", "name": "shell", "arguments": args, "call_id": call}), t))?;
            t += r.range(1, 30) as i64 * 1000;
            let output = json!({"output": tool_output(r), "metadata": {"exit_code": if r.chance(0.1) { 1 } else { 0 }, "duration_seconds": 0.4}}).to_string();
            out.line(&env(
                "response_item",
                json!({"type": "function_call_output", "call_id": call, "output": output}),
                t,
            ))?;
            written += 2;
        }
        if written < size {
            t += r.range(2, 60) as i64 * 1000;
            let a = answer(r);
            out.line(&env("response_item", json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": a}]}), t))?;
            out.line(&env(
                "event_msg",
                json!({"type": "agent_message", "message": a}),
                t,
            ))?;
            written += 1;
            stats.searchable_messages += 1;
        }
        out.line(&env("event_msg", json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": 1000, "output_tokens": 200}}}), t))?;
    }
    out.finish(stats)?;
    stats.messages += written;
    Ok(())
}

/// A Copilot CLI session: `session.start`, then turns of `user.message`, an
/// `assistant.message` requesting tool calls (with reasoning half the time), each call's
/// `tool.execution_start` and `tool.execution_complete`, and the answer.
fn copilot_session(
    root: &Path,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> io::Result<()> {
    let id = r.uuid();
    let path = root.join(format!("copilot/session-state/{id}/events.jsonl"));
    let mut out = Out::create(&path)?;
    let mut t = start;
    let mut parent = serde_json::Value::Null;
    let mut event = |out: &mut Out, r: &mut Rng, ty: &str, data: serde_json::Value, t: i64| {
        let eid = r.uuid();
        let line =
            json!({"type": ty, "data": data, "id": eid, "timestamp": iso(t), "parentId": parent});
        parent = json!(eid);
        out.line(&line)
    };
    event(
        &mut out,
        r,
        "session.start",
        json!({"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.76", "startTime": iso(t), "selectedModel": "claude-sonnet-4.6", "context": {"cwd": project, "branch": "main"}}),
        t,
    )?;
    let mut written = 0u64;
    let mut turn = 0;
    while written < size {
        t += r.range(5, 600) as i64 * 1000;
        let p = prompt(r);
        event(
            &mut out,
            r,
            "user.message",
            json!({"content": p, "transformedContent": format!("<current_datetime>{}</current_datetime>\n\n{p}", iso(t)), "attachments": []}),
            t,
        )?;
        written += 1;
        stats.searchable_messages += 1;
        event(
            &mut out,
            r,
            "assistant.turn_start",
            json!({"turnId": turn.to_string()}),
            t,
        )?;
        let calls: Vec<String> = (0..r.range(0, 4))
            .take_while(|i| written + 2 * (i + 1) < size)
            .map(|_| format!("toolu_{:016x}", r.next_u64()))
            .collect();
        if !calls.is_empty() {
            t += r.range(1, 20) as i64 * 1000;
            let requests: Vec<serde_json::Value> = calls
                .iter()
                .map(|c| json!({"toolCallId": c, "name": "bash", "arguments": {"command": format!("rg {} src", r.zipf(WORDS))}, "type": "function"}))
                .collect();
            let mut data = json!({"messageId": r.uuid(), "model": "claude-sonnet-4.6", "content": "", "toolRequests": requests, "outputTokens": r.range(20, 400)});
            if r.chance(0.5) {
                let mut thought = String::new();
                sentence(r, &mut thought, 6, 20);
                data["reasoningText"] = json!(thought);
            }
            event(&mut out, r, "assistant.message", data, t)?;
            written += 1;
            for c in &calls {
                event(
                    &mut out,
                    r,
                    "tool.execution_start",
                    json!({"toolCallId": c, "toolName": "bash", "arguments": {}}),
                    t,
                )?;
                t += r.range(1, 30) as i64 * 1000;
                let output = tool_output(r);
                let data = json!({"toolCallId": c, "success": !r.chance(0.1), "result": {"content": output, "detailedContent": output}});
                event(&mut out, r, "tool.execution_complete", data, t)?;
                written += 1;
            }
        }
        if written < size {
            t += r.range(2, 60) as i64 * 1000;
            let data = json!({"messageId": r.uuid(), "model": "claude-sonnet-4.6", "content": answer(r), "toolRequests": [], "outputTokens": r.range(20, 400)});
            event(&mut out, r, "assistant.message", data, t)?;
            written += 1;
            stats.searchable_messages += 1;
        }
        event(
            &mut out,
            r,
            "assistant.turn_end",
            json!({"turnId": turn.to_string()}),
            t,
        )?;
        turn += 1;
    }
    event(
        &mut out,
        r,
        "session.shutdown",
        json!({"shutdownType": "routine", "modelMetrics": {"claude-sonnet-4.6": {"usage": {"inputTokens": 1000, "outputTokens": 200}}}}),
        t,
    )?;
    out.finish(stats)?;
    stats.messages += written;
    Ok(())
}

/// A Cursor agent transcript (`projects/<slug>/agent-transcripts/<id>/<id>.jsonl`): user
/// turns with the context blocks and `<timestamp>` Cursor adds, assistant lines of text and
/// `tool_use` blocks (Cursor writes no tool results), `turn_ended` after each turn.
fn cursor_session(
    root: &Path,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> io::Result<()> {
    let id = r.uuid();
    let slug = slug(project.trim_start_matches('/'));
    let path = root.join(format!(
        "cursor/projects/{slug}/agent-transcripts/{id}/{id}.jsonl"
    ));
    let mut out = Out::create(&path)?;
    let mut t = start;
    let mut written = 0u64;
    while written < size {
        t += r.range(5, 600) as i64 * 1000;
        let when = chrono::DateTime::from_timestamp_millis(t).unwrap_or_default();
        let text = format!(
            "<timestamp>{}</timestamp>\n<user_info>\nOS Version: linux 6.8\nWorkspace Path: {project}\n</user_info>\n<user_query>\n{}\n</user_query>",
            when.format("%A, %b %d, %Y, %-I:%M %p (UTC)"),
            prompt(r)
        );
        out.line(
            &json!({"role": "user", "message": {"content": [{"type": "text", "text": text}]}}),
        )?;
        written += 1;
        stats.searchable_messages += 1;
        for _ in 0..r.range(0, 4) {
            if written + 1 >= size {
                break;
            }
            let mut note = String::new();
            sentence(r, &mut note, 4, 12);
            let call = json!({"type": "tool_use", "id": format!("toolu_{:016x}", r.next_u64()), "name": "Shell", "input": {"command": format!("rg {} src", r.zipf(WORDS))}});
            out.line(&json!({"role": "assistant", "message": {"content": [{"type": "text", "text": note}, call]}}))?;
            written += 1;
            stats.searchable_messages += 1;
        }
        if written < size {
            let a = answer(r);
            out.line(&json!({"role": "assistant", "message": {"content": [{"type": "text", "text": a}]}}))?;
            written += 1;
            stats.searchable_messages += 1;
        }
        out.line(&json!({"type": "turn_ended", "status": "success"}))?;
    }
    out.finish(stats)?;
    stats.messages += written;
    Ok(())
}

/// A Gemini CLI chat (`tmp/<project id>/chats/session-<time>-<id>.jsonl`, the project's
/// `.project_root` beside): a metadata line, then per turn the user's message, an answer
/// that calls tools written twice under one id (while the calls run, then whole with their
/// results: the second copy replaces the first), the final answer, and a `$set` of the
/// session's last update.
fn gemini_session(
    root: &Path,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> io::Result<()> {
    let id = r.uuid();
    let hash = format!("{:016x}", r.next_u64());
    let day = chrono::DateTime::from_timestamp_millis(start).unwrap_or_default();
    let dir = root.join(format!("gemini/tmp/{hash}"));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(".project_root"), project)?;
    let path = dir.join(format!(
        "chats/session-{}-{}.jsonl",
        day.format("%Y-%m-%dT%H-%M"),
        &id[..8]
    ));
    let mut out = Out::create(&path)?;
    let mut t = start;
    out.line(&json!({"sessionId": id, "projectHash": hash, "startTime": iso(t), "lastUpdated": iso(t), "kind": "main"}))?;
    let mut written = 0u64;
    while written < size {
        t += r.range(5, 600) as i64 * 1000;
        out.line(&json!({"id": r.uuid(), "timestamp": iso(t), "type": "user", "content": [{"text": prompt(r)}]}))?;
        written += 1;
        stats.searchable_messages += 1;
        let calls = r.range(0, 4);
        if calls > 0 && written + 1 < size {
            t += r.range(1, 20) as i64 * 1000;
            let mid = r.uuid();
            let mut note = String::new();
            sentence(r, &mut note, 4, 12);
            let running: Vec<serde_json::Value> = (0..calls)
                .map(|_| json!({"id": format!("call_{:016x}", r.next_u64()), "name": "run_shell_command", "args": {"command": format!("rg {} src", r.zipf(WORDS))}, "status": "executing", "timestamp": iso(t)}))
                .collect();
            out.line(&json!({"id": mid, "timestamp": iso(t), "type": "gemini", "content": note, "model": "gemini-2.5-pro", "toolCalls": running}))?;
            let done: Vec<serde_json::Value> = running
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    c["status"] = json!(if r.chance(0.1) { "error" } else { "success" });
                    c["result"] = json!([{"functionResponse": {"id": c["id"], "name": "run_shell_command", "response": {"output": tool_output(r)}}}]);
                    c
                })
                .collect();
            t += r.range(1, 30) as i64 * 1000;
            out.line(&json!({"id": mid, "timestamp": iso(t), "type": "gemini", "content": note, "model": "gemini-2.5-pro", "toolCalls": done, "tokens": {"input": 1000, "output": 200, "cached": 0, "thoughts": 0, "tool": 0, "total": 1200}}))?;
            written += 1;
            stats.searchable_messages += 1;
        }
        if written < size {
            t += r.range(2, 60) as i64 * 1000;
            out.line(&json!({"id": r.uuid(), "timestamp": iso(t), "type": "gemini", "content": answer(r), "model": "gemini-2.5-pro"}))?;
            written += 1;
            stats.searchable_messages += 1;
        }
        out.line(&json!({"$set": {"lastUpdated": iso(t)}}))?;
    }
    out.finish(stats)?;
    stats.messages += written;
    Ok(())
}

/// One VS Code Copilot Chat session: a change log in the chat folder of the window opened on
/// `project` (`vscode-copilot/workspaceStorage/<hash>/`, its `workspace.json` naming the
/// folder): the document, then per turn the request pushed, its answer pushed in two pieces
/// (markdown, tool invocations with their results, more markdown) and its `result` set (a
/// last prompt without an answer: cancelled).
fn vscode_copilot_session(
    root: &Path,
    r: &mut Rng,
    stats: &mut Stats,
    project: &str,
    start: i64,
    size: u64,
) -> io::Result<()> {
    let id = r.uuid();
    // One storage folder per project, as VS Code keeps one per window folder.
    let fnv = |h: u64, b: u8| (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    let hash = format!("{:016x}", project.bytes().fold(0xcbf2_9ce4_8422_2325, fnv));
    let dir = root.join(format!("vscode-copilot/workspaceStorage/{hash}"));
    std::fs::create_dir_all(&dir)?;
    let manifest = dir.join("workspace.json");
    if !manifest.exists() {
        std::fs::write(
            &manifest,
            json!({"folder": format!("file://{}", project.replace(' ', "%20"))}).to_string(),
        )?;
    }
    let mut out = Out::create(&dir.join(format!("chatSessions/{id}.jsonl")))?;
    let mut t = start;
    out.line(&json!({"kind": 0, "v": {"version": 3, "sessionId": id, "creationDate": t, "requesterUsername": "dev", "responderUsername": "GitHub Copilot", "initialLocation": "panel", "requests": []}}))?;
    let mut written = 0u64;
    let mut turn = 0u64;
    while written < size {
        t += r.range(5, 600) as i64 * 1000;
        let request = format!("request_{:016x}", r.next_u64());
        out.line(&json!({"kind": 2, "k": ["requests"], "v": [{"requestId": request, "timestamp": t, "message": {"text": prompt(r), "parts": []}, "variableData": {"variables": []}, "response": [], "modelId": "copilot/gpt-4.1"}]}))?;
        written += 1;
        stats.searchable_messages += 1;
        if written < size {
            let mut first = String::new();
            sentence(r, &mut first, 4, 12);
            let calls: Vec<serde_json::Value> = (0..r.range(0, 4))
                .map(|_| {
                    let command = format!("rg {} src", r.zipf(WORDS));
                    json!({"kind": "toolInvocationSerialized", "toolId": "run_in_terminal", "toolCallId": format!("call_{:016x}", r.next_u64()), "invocationMessage": "Running a command", "isConfirmed": true, "isComplete": true, "toolSpecificData": {"kind": "terminal", "language": "sh", "commandLine": {"original": command}, "terminalCommandOutput": {"text": tool_output(r)}}})
                })
                .collect();
            let mut items =
                vec![json!({"value": first, "supportThemeIcons": false, "supportHtml": false})];
            items.extend(calls);
            out.line(&json!({"kind": 2, "k": ["requests", turn, "response"], "v": items}))?;
            out.line(&json!({"kind": 2, "k": ["requests", turn, "response"], "v": [{"value": answer(r), "supportThemeIcons": false, "supportHtml": false}]}))?;
            let elapsed = r.range(2, 60) as i64 * 1000;
            out.line(&json!({"kind": 1, "k": ["requests", turn, "result"], "v": {"timings": {"firstProgress": 800, "totalElapsed": elapsed}}}))?;
            t += elapsed;
            written += 1;
            stats.searchable_messages += 1;
        } else {
            // A last prompt left unanswered: the user stopped it.
            out.line(&json!({"kind": 1, "k": ["requests", turn, "isCanceled"], "v": true}))?;
        }
        out.line(&json!({"kind": 1, "k": ["lastMessageDate"], "v": t}))?;
        turn += 1;
    }
    out.finish(stats)?;
    stats.messages += written;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_reaches_the_count() {
        let a = tempfile_dir();
        let b = tempfile_dir();
        let sa = generate(&a, &Spec::new(3000, 7)).unwrap();
        let sb = generate(&b, &Spec::new(3000, 7)).unwrap();
        assert_eq!(sa, sb);
        assert!(sa.messages >= 3000 && sa.messages < 3000 + 2000);
        assert!(sa.sessions > 5);
        let file = |d: &Path| {
            let mut v: Vec<_> = walk(d);
            v.sort();
            v.into_iter()
                .map(|p| std::fs::read(p).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(file(&a), file(&b));
        std::fs::remove_dir_all(a).unwrap();
        std::fs::remove_dir_all(b).unwrap();
    }

    #[test]
    fn the_other_clients_sessions_are_written_when_asked_for() {
        let d = tempfile_dir();
        let spec = Spec {
            copilot_share: 0.2,
            cursor_share: 0.2,
            gemini_share: 0.2,
            vscode_copilot_share: 0.1,
            ..Spec::new(3000, 7)
        };
        let s = generate(&d, &spec).unwrap();
        let files = walk(&d);
        assert!(files.iter().any(|p| p.ends_with("events.jsonl")));
        assert!(files
            .iter()
            .any(|p| p.to_string_lossy().contains("/agent-transcripts/")));
        assert!(files
            .iter()
            .any(|p| p.to_string_lossy().contains("/chats/session-")));
        assert!(files
            .iter()
            .any(|p| p.to_string_lossy().contains("/chatSessions/")));
        // The same seed without Copilot writes what earlier versions wrote.
        let plain = tempfile_dir();
        let s0 = generate(&plain, &Spec::new(3000, 7)).unwrap();
        assert!(!walk(&plain).iter().any(|p| p.ends_with("events.jsonl")));
        assert!(s.messages >= 3000 && s0.messages >= 3000);
        std::fs::remove_dir_all(d).unwrap();
        std::fs::remove_dir_all(plain).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "pond-gen-{}",
            Rng::new(
                std::process::id() as u64
                    ^ std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_nanos() as u64
            )
            .uuid()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn walk(d: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                out.extend(walk(&e.path()));
            } else {
                out.push(e.path());
            }
        }
        out
    }
}
