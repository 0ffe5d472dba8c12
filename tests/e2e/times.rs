//! Times in the local zone with its offset (the `TZ` the command runs with), or in UTC with
//! `--utc` or `[display] utc = true`: in search hits, session and message pages, Markdown
//! exports, the status and MCP answers (also a resident server's); JSON stays UTC.

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::common::{wait_for, Env};
use crate::mcp::{runtime, tokio_cmd};

/// The instant of the message `Env::sync_one_more_message` adds (`2026-03-03T00:00:00Z`), as
/// each zone shows it.
const KOLKATA: &str = "2026-03-03 05:30:00 +05:30";
const NEW_YORK: &str = "2026-03-02 19:00:00 -05:00";
const UTC: &str = "2026-03-03 00:00:00 UTC";

fn in_zone(tz: &str) -> [(&str, &str); 1] {
    [("TZ", tz)]
}

/// Every text rendering of the message's time under `args` + `tz`: search, session page,
/// message page, Markdown export.
fn texts(env: &Env, args: &[&str], tz: &str) -> Vec<String> {
    let each: [&[&str]; 4] = [
        &["search", "quokka"],
        &["get-session", "s9"],
        &["get-message", "zz"],
        &["export", "s9", "--format", "markdown"],
    ];
    each.iter()
        .map(|command| {
            let all: Vec<&str> = args.iter().chain(command.iter()).copied().collect();
            env.ok_with(&all, &in_zone(tz))
        })
        .collect()
}

fn assert_shown(texts: &[String], shown: &str) {
    for t in texts {
        assert!(t.contains(shown), "{shown} not in:\n{t}");
    }
}

#[test]
fn times_are_shown_in_the_local_zone_with_its_offset() {
    let env = Env::new();
    env.sync_one_more_message();

    let kolkata = texts(&env, &[], "Asia/Kolkata");
    assert_shown(&kolkata, KOLKATA);
    // The session page shows the span and the message; the export's header says no "(UTC)".
    assert_eq!(kolkata[1].matches(KOLKATA).count(), 3, "{}", kolkata[1]);
    let export = &kolkata[3];
    assert!(
        export.contains(&format!("- from {KOLKATA} to {KOLKATA}\n"))
            && export.contains(&format!("## User · {KOLKATA}")),
        "{export}"
    );
    // A zone behind UTC moves the day back; a POSIX TZ string works as a zone name does.
    assert_shown(&texts(&env, &[], "America/New_York"), NEW_YORK);
    assert_shown(&texts(&env, &[], "IST-5:30"), KOLKATA);
    assert_shown(&texts(&env, &[], "UTC"), UTC);

    // The last sync's time too, in the status.
    let status = env.ok_with(&["status"], &in_zone("Asia/Kolkata"));
    let line = status
        .lines()
        .find(|l| l.starts_with("last sync: "))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(line.contains(" +05:30: "), "{line}");
}

#[test]
fn utc_by_flag_or_config_file_and_json_unchanged() {
    let env = Env::new();
    env.sync_one_more_message();
    assert_shown(&texts(&env, &["--utc"], "Asia/Kolkata"), UTC);

    let config = env.dir.path().join(".config/pond/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[display]\nutc = true\n").unwrap();
    assert_shown(&texts(&env, &[], "Asia/Kolkata"), UTC);
    let shown = env.json(&["config", "show", "--json"]);
    assert_eq!(shown["display.utc"]["value"], "true", "{shown}");
    assert_eq!(shown["display.utc"]["from"], "file", "{shown}");
    std::fs::write(&config, "[display]\nutc = false\n").unwrap();
    assert_shown(&texts(&env, &[], "Asia/Kolkata"), KOLKATA);
    std::fs::remove_file(&config).unwrap();

    // JSON is the data's own: the same in every zone and with --utc.
    for command in [
        &["get-session", "s9", "--json"][..],
        &["search", "quokka", "--json"],
        &["get-message", "zz", "--json"],
    ] {
        let utc = env.json_with(command, &in_zone("UTC"));
        let kolkata = env.json_with(command, &in_zone("Asia/Kolkata"));
        let mut flagged = vec!["--utc"];
        flagged.extend(command);
        let forced = env.json_with(&flagged, &in_zone("Asia/Kolkata"));
        assert_eq!(utc, kolkata, "{command:?}");
        assert_eq!(utc, forced, "{command:?}");
    }
    let page = env.json(&["get-session", "s9", "--json"]);
    assert_eq!(
        page["messages"][0]["timestamp"], 1_772_496_000_000i64,
        "{page}"
    );
}

/// `pond mcp` (with `extra` flags, in zone `tz`): its `pond_search` answer for the quokka.
/// Standalone, or with `runtime_dir` through the resident server it starts there (which
/// exits once idle for a second).
async fn mcp_search(env: &Env, extra: &[&str], tz: &str, runtime_dir: Option<&str>) -> String {
    let mut cmd = tokio_cmd(env, &in_zone(tz));
    if let Some(dir) = runtime_dir {
        cmd.env_remove("POND_STANDALONE")
            .env("XDG_RUNTIME_DIR", dir)
            .env("POND_IDLE_EXIT_SECS", "1");
    }
    cmd.args(extra).arg("mcp");
    let s = pond_benches::stdio::spawn(cmd).expect("start pond mcp");
    let service = ().serve(s.io).await.expect("MCP handshake");
    let Value::Object(args) = json!({"query": "quokka"}) else {
        unreachable!()
    };
    let r = service
        .call_tool(CallToolRequestParams::new("pond_search").with_arguments(args))
        .await
        .expect("pond_search");
    service.cancel().await.unwrap();
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn mcp_answers_say_the_offset_and_a_started_server_follows_utc() {
    let env = Env::new();
    env.sync_one_more_message();
    let run = tempfile::tempdir().unwrap();
    let runtime_dir = run.path().to_str().unwrap();
    runtime().block_on(async {
        let answer = mcp_search(&env, &[], "Asia/Kolkata", None).await;
        assert!(answer.contains(KOLKATA), "{answer}");
        let answer = mcp_search(&env, &["--utc"], "Asia/Kolkata", None).await;
        assert!(answer.contains(UTC), "{answer}");
        // Through the resident server `pond mcp --utc` starts (in Kolkata's zone): it
        // renders in UTC as the command that started it asked.
        let answer = mcp_search(&env, &["--utc"], "Asia/Kolkata", Some(runtime_dir)).await;
        assert!(answer.contains(UTC), "{answer}");
    });
    let sockets = run.path().join("pond");
    assert!(
        wait_for(15.0, || std::fs::read_dir(&sockets)
            .map(|d| d.count() == 0)
            .unwrap_or(true)),
        "the idle server did not exit"
    );
}
