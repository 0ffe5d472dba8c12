//! A real `pond mcp` driven over stdio by rmcp's client: what `supervisor_bench` and
//! `serve_mem_bench` share (`#[path]`-included by both).

use std::time::{Duration, Instant};

use pond_protocol::footprint;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// SQL of several shapes, a full-scan aggregate among them.
pub const SQL: &[&str] = &[
    "SELECT count(*) AS n FROM messages",
    "SELECT project, count(*) AS sessions FROM sessions GROUP BY project ORDER BY sessions DESC LIMIT 20",
    "SELECT role, count(*) AS n, sum(length(search_text)) AS chars FROM messages GROUP BY role",
    "SELECT tool_name, count(*) AS calls FROM parts WHERE part_type = 'tool_call' GROUP BY tool_name ORDER BY calls DESC LIMIT 20",
    "SELECT session_id, max(timestamp) AS last FROM messages GROUP BY session_id ORDER BY last DESC LIMIT 10",
    "SELECT id, title FROM sessions ORDER BY updated_at DESC LIMIT 10",
];

pub struct Front {
    pub client: RunningService<RoleClient, ()>,
    pub pid: u32,
    _child: tokio::process::Child,
}

impl Front {
    /// Spawn `cmd` (a `pond ... mcp` command) and complete the MCP handshake; `spawned` gets
    /// the pid before the handshake (to watch the process from its first moment).
    pub async fn start(cmd: tokio::process::Command, spawned: impl FnOnce(u32)) -> Front {
        let s = pond_benches::stdio::spawn(cmd).expect("start pond mcp");
        spawned(s.pid);
        let client = ().serve(s.io).await.expect("MCP handshake");
        Front {
            client,
            pid: s.pid,
            _child: s.child,
        }
    }

    /// Call a tool that must succeed: (milliseconds, its text).
    pub async fn call(&self, name: &str, args: Value) -> (f64, String) {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let t = Instant::now();
        let r = self
            .client
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await
            .expect("tool call");
        assert_eq!(r.is_error, Some(false), "{name}: {:?}", r.content);
        let text = r.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        (t.elapsed().as_secs_f64() * 1000.0, text)
    }

    /// The `pond://status` resource's text.
    pub async fn status(&self) -> String {
        let r = self
            .client
            .read_resource(ReadResourceRequestParams::new("pond://status"))
            .await
            .expect("status resource");
        match r.contents.first() {
            Some(ResourceContents::TextResourceContents { text, .. }) => text.clone(),
            _ => String::new(),
        }
    }

    /// `n` searchable messages' `id` and `session_id`, to get.
    pub async fn message_ids(&self, n: usize) -> Vec<Value> {
        let q = format!("SELECT id, session_id FROM messages WHERE searchable LIMIT {n}");
        let (_, ids) = self
            .call(
                "pond_sql",
                serde_json::json!({"query": q, "format": "json"}),
            )
            .await;
        serde_json::from_str(&ids[..ids.rfind(']').map_or(0, |i| i + 1)]).expect("ids as JSON")
    }

    /// Close stdin and wait (up to 30 s) until the front is gone.
    pub async fn close(self) {
        let pid = self.pid;
        self.client.cancel().await.expect("close");
        let gone = Instant::now() + Duration::from_secs(30);
        while footprint::running(pid) && Instant::now() < gone {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
