//! ARCHITECTURE.md checked against the tree (no binary needed; here to keep one test binary): every repository path it names exists, and the
//! clients it lists are the registry's (`pond_ingest::sources::SOURCES`), so the map cannot
//! rot silently when a file moves or a client is added.

use std::path::Path;

/// The line of ARCHITECTURE.md that lists the clients; the backticked names after it are
/// compared with the registry.
const CLIENTS_LINE: &str = "The clients, by their registry names:";

fn architecture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The backticked spans of `text` outside fenced code blocks (in a diagram a backtick is
/// just a character), with the line each is on.
fn code_spans(text: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push((n + 1, span));
        }
    }
    spans
}

/// The repository path a code span names, if it looks like one: a relative path (it has a
/// `/`, or ends in a source or document extension) of plain path characters, after an
/// `::item` suffix and trailing punctuation are taken off. Absolute paths, `~`, `$VAR` and
/// `<placeholder>` paths name places outside the repository and are not paths here.
fn repo_path(span: &str) -> Option<&str> {
    let path = span.split("::").next()?;
    let path = path.trim_end_matches(['.', ',', ';', ':', ')']);
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    let looks = path.contains('/')
        || [".rs", ".md", ".toml", ".py", ".sh"]
            .iter()
            .any(|ext| path.ends_with(ext));
    (looks && !path.starts_with('/') && path.chars().all(plain)).then_some(path)
}

#[test]
fn every_path_architecture_names_exists() {
    let text = architecture();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths: Vec<(usize, &str)> = code_spans(&text)
        .into_iter()
        .filter_map(|(n, span)| Some((n, repo_path(span)?)))
        .collect();
    // The map names dozens of files; finding few means the parsing above broke.
    assert!(
        paths.len() >= 20,
        "only {} paths found in ARCHITECTURE.md",
        paths.len()
    );
    let missing: Vec<String> = paths
        .iter()
        .filter(|(_, p)| !root.join(p).exists())
        .map(|(n, p)| format!("line {n}: {p}"))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist (fix the names, or the map, after a move):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_clients_architecture_lists_are_the_registrys() {
    let text = architecture();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(CLIENTS_LINE))
        .collect();
    let [line] = lines[..] else {
        panic!(
            "ARCHITECTURE.md should have one line starting {CLIENTS_LINE:?}, found {}",
            lines.len()
        );
    };
    let listed: Vec<&str> = code_spans(&line[CLIENTS_LINE.len()..])
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    let registry: Vec<&str> = pond_ingest::sources::SOURCES
        .iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        listed, registry,
        "ARCHITECTURE.md's client line should name the registry's clients in its order \
         (ingest/src/sources.rs): update the line"
    );
}

#[test]
fn repo_paths_are_told_from_other_code() {
    assert_eq!(
        repo_path("store/src/owners.rs::Claim"),
        Some("store/src/owners.rs")
    );
    assert_eq!(repo_path("front/src/render/"), Some("front/src/render/"));
    assert_eq!(repo_path("Cargo.toml,"), Some("Cargo.toml"));
    assert_eq!(repo_path("/dev/null"), None);
    assert_eq!(repo_path("$XDG_DATA_HOME/pond"), None);
    assert_eq!(repo_path("<store>/messages.rmm"), None);
    assert_eq!(repo_path("pond sync --source a/b"), None);
    assert_eq!(repo_path("Front"), None);
    assert_eq!(
        code_spans("a `x` b `y/z`\n```\n`not`\n```\n`w`"),
        vec![(1, "x"), (1, "y/z"), (5, "w")]
    );
}
