//! What the secret masker finds in real sessions, and how fast it reads.
//!
//! `cargo bench --workspace --bench mask_bench -- [--corpus DIR] [--show N]`
//! Reads every line of every file under DIR (default `../shared/corpus` beside the clone, the shared real
//! sessions) through `pond_mask::find`, and prints the spans masked per rule, the lines
//! that held one, and the masker's speed in MB/s. `--show N` prints up to N of each rule's
//! spans with their surroundings on stderr, for reviewing false positives by eye (never
//! for committing: they are the corpus's text).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pond_benches::report::{self, r2};
use serde_json::{json, Value};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.is_file() {
            out.push(p);
        }
    }
}

fn main() {
    pond_benches::work::accept(&["--corpus", "--show"], &[]);
    let corpus = PathBuf::from(
        pond_benches::work::arg("--corpus")
            .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus").into()),
    );
    let show = pond_benches::work::num("--show", 0) as usize;
    let mut paths = Vec::new();
    files(&corpus, &mut paths);
    assert!(!paths.is_empty(), "no files under {}", corpus.display());
    let mut per_rule: BTreeMap<&str, u64> = pond_mask::RULES.iter().map(|r| (r.name, 0)).collect();
    let mut shown: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut bytes, mut lines, mut lines_masked) = (0u64, 0u64, 0u64);
    let mut spent = Duration::ZERO;
    for path in &paths {
        let Ok(f) = std::fs::File::open(path) else {
            continue;
        };
        for line in std::io::BufReader::new(f)
            .split(b'\n')
            .map_while(Result::ok)
        {
            let line = String::from_utf8_lossy(&line);
            let t = Instant::now();
            let found = pond_mask::find(&line);
            spent += t.elapsed();
            bytes += line.len() as u64;
            lines += 1;
            lines_masked += u64::from(!found.is_empty());
            for f in found {
                *per_rule.entry(f.rule).or_default() += 1;
                let n = shown.entry(f.rule).or_default();
                if *n < show {
                    *n += 1;
                    let from = line.floor_char_boundary(f.start.saturating_sub(40));
                    let to = line.ceil_char_boundary((f.end + 20).min(line.len()));
                    eprintln!(
                        "{}: {:?} in {:?}",
                        f.rule,
                        &line[f.start..f.end],
                        &line[from..to]
                    );
                }
            }
        }
    }
    let mut figures = json!({
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "files": paths.len(),
        "lines": lines,
        "mib": r2(bytes as f64 / (1 << 20) as f64),
        "lines_with_a_secret": lines_masked,
        "spans": per_rule.values().sum::<u64>(),
        "mb_per_s": r2(bytes as f64 / 1e6 / spent.as_secs_f64()),
    });
    if let Value::Object(o) = &mut figures {
        for (rule, n) in per_rule {
            o.insert(format!("spans_{rule}"), json!(n));
        }
    }
    report::print("mask_bench", &figures);
}
