use super::*;

/// row id, timestamp, message id, session, project, agent, role, text
type Row = (
    u64,
    i64,
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
);

fn sample(n: usize) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let text = match i % 5 {
                0 => None,
                1 => Some(String::new()),
                2 => Some(format!("héllo wörld {i} 兼容 ✓")),
                _ => Some("x".repeat(i % 700)),
            };
            (
                (i as u64) * 3 + 1,
                1_700_000_000_000 + ((i * 7919) % 1000) as i64,
                match i % 3 {
                    // Lowercase UUIDs are packed; uppercase ones and others stay text.
                    0 => format!(
                        "{i:08x}-{:04x}-4{:03x}-8abc-{:012x}",
                        i % 65536,
                        i % 4096,
                        i * 7
                    ),
                    1 => format!("{i:08X}-AAAA-4BBB-8CCC-{:012X}", i),
                    _ => format!("msg-{i}"),
                },
                format!("session-{}", i % 13),
                (i % 4 != 0).then(|| format!("/home/dev/p{}", i % 3)),
                if i % 2 == 0 { "claude-code" } else { "codex" }.to_owned(),
                ["user", "assistant", "tool"][i % 3].to_owned(),
                text,
            )
        })
        .collect()
}

const COVERAGE: Coverage = Coverage {
    last_fragment_id: 7,
    deleted_rows: 0,
};

/// The source line, origin and replayed flag of sample row `i`.
fn extras(i: usize) -> (u64, Origin, bool) {
    (i as u64 * 2 + 1, Origin::ALL[i % 3], i % 7 == 3)
}

fn write(path: &Path, rows: &[Row]) -> RowMapStats {
    let mut w = RowMapWriter::create(path, 42, COVERAGE).unwrap();
    for (i, r) in rows.iter().enumerate() {
        let (source_line, origin, replayed) = extras(i);
        w.push(RowInput {
            row_id: r.0,
            timestamp: r.1,
            message_id: &r.2,
            session_id: &r.3,
            project: r.4.as_deref(),
            source_agent: &r.5,
            role: &r.6,
            text: r.7.as_deref(),
            source_line,
            origin,
            replayed,
        })
        .unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn round_trip_reads_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("messages.rmm");
    let rows = sample(1000);
    let stats = write(&path, &rows);
    assert_eq!((stats.rows, stats.sessions, stats.blocks), (1000, 13, 4));
    let map = RowMap::open(&path).unwrap();
    assert_eq!(map.source_version(), 42);
    for (i, r) in rows.iter().enumerate() {
        let v = map.row(i).unwrap();
        assert_eq!(
            (
                v.row_id,
                v.timestamp,
                v.message_id.as_ref(),
                v.session_id,
                v.project,
                v.source_agent,
                v.role
            ),
            (
                r.0,
                r.1,
                r.2.as_str(),
                r.3.as_str(),
                r.4.as_deref(),
                r.5.as_str(),
                r.6.as_str()
            )
        );
        assert_eq!(v.searchable, r.7.is_some());
        assert_eq!((v.source_line, v.origin, v.replayed), extras(i));
        assert_eq!(map.text(i).unwrap(), r.7, "row {i}");
        assert_eq!(map.position_of_row_id(r.0).unwrap(), Some(i));
        assert_eq!(map.positions_of_message(&r.2).unwrap(), vec![i]);
        let owner = (!v.replayed).then_some(i);
        assert_eq!(map.position_of_message(&r.2).unwrap(), owner);
    }
    assert_eq!(map.position_of_row_id(2).unwrap(), None);
    assert_eq!(map.position_of_message("nope").unwrap(), None);
    let s = map.session("session-5").unwrap().unwrap();
    let positions = map.session_rows(s).unwrap();
    assert_eq!(
        positions.len(),
        rows.iter().filter(|r| r.3 == "session-5").count()
    );
    assert_eq!(s.rows as usize, positions.len());
    let times: Vec<i64> = positions
        .iter()
        .map(|&p| map.row(p).unwrap().timestamp)
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
    assert_eq!(s.newest, *times.last().unwrap());
    assert!(map.session("session-99").unwrap().is_none());
    // No temp files are left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("messages.rmm")]);
}

#[test]
fn only_canonical_lowercase_uuids_are_packed() {
    let id = "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2f";
    let packed = uuid_bytes(id).unwrap();
    assert_eq!(uuid_text(&packed), id);
    for other in [
        "0B8C2F9E-1D2A-4C3B-9E8F-7A6B5C4D3E2F",
        "0b8c2f9e1d2a4c3b9e8f7a6b5c4d3e2f",
        "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2",
        "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2g",
        "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2f0",
        "session:12",
        "",
    ] {
        assert!(uuid_bytes(other).is_none(), "{other}");
    }
}

#[test]
fn an_empty_map_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.rmm");
    write(&path, &[]);
    let map = RowMap::open(&path).unwrap();
    assert_eq!((map.rows(), map.sessions()), (0, 0));
    assert_eq!(map.position_of_message("x").unwrap(), None);
    assert!(map.row(0).is_err());
}

#[test]
fn rows_out_of_order_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RowMapWriter::create(&dir.path().join("m.rmm"), 1, COVERAGE).unwrap();
    let row = |row_id| RowInput {
        row_id,
        timestamp: 0,
        message_id: "m",
        session_id: "s",
        project: None,
        source_agent: "codex",
        role: "user",
        text: None,
        source_line: 1,
        origin: Origin::Own,
        replayed: false,
    };
    w.push(row(5)).unwrap();
    let e = w.push(row(5)).unwrap_err();
    assert!(e.to_string().contains("increasing row id"), "{e}");
    assert!(w.push(row(4)).is_err());
    drop(w);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "an abandoned build leaves nothing"
    );
}

#[test]
fn corrupt_and_truncated_files_are_errors_not_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.rmm");
    write(&path, &sample(600));
    let good = read_all(&path);
    let open = |bytes: Vec<u8>| RowMap::from_bytes(Bytes::Owned(bytes), Body::Hash);
    for cut in [
        0,
        10,
        HEADER_LEN - 1,
        HEADER_LEN,
        good.len() / 2,
        good.len() - 1,
    ] {
        assert!(open(good[..cut].to_vec()).is_err(), "cut at {cut}");
    }
    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(open(bad).unwrap_err().to_string().contains("magic"));
    let mut bad = good.clone();
    bad[20] ^= 1;
    assert!(open(bad).unwrap_err().to_string().contains("checksum"));
    // Damage past the header: opening may succeed, but every read is checked.
    let mut rng = 12345u64;
    for _ in 0..200 {
        let mut bad = good.clone();
        for _ in 0..8 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = HEADER_LEN + (rng >> 33) as usize % (good.len() - HEADER_LEN);
            bad[at] = (rng >> 17) as u8;
        }
        if let Ok(map) = open(bad) {
            for i in 0..map.rows() {
                let _ = map.row(i);
                let _ = map.text(i);
            }
            let _ = map.position_of_message("msg-7");
            if let Ok(Some(s)) = map.session("session-1") {
                let _ = map.session_rows(s);
            }
        }
    }
}

/// `bytes` with the body checksum and the header checksum made valid again: damage
/// that a checksum would not catch (a crafted file) must still never panic a reader.
fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let mut h = Header::decode(&bytes).unwrap();
    h.body_hash = xxh3_64(&bytes[HEADER_LEN..]);
    bytes[..HEADER_LEN].copy_from_slice(&h.encode());
    bytes
}

fn read_everything(map: &RowMap) {
    for i in 0..map.rows() {
        let _ = map.row(i);
        let _ = map.text(i);
    }
    let _ = map.position_of_message("msg-7");
    let _ = map.positions_of_message("session-1");
    for code in 0..20 {
        if let Ok(Some(s)) = map.session(&format!("session-{code}")) {
            let _ = map.session_rows(s);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    #[test]
    fn a_damaged_map_is_an_error_or_a_map_never_a_panic(
        edits in proptest::collection::vec((0usize..1_000_000, proptest::prelude::any::<u8>()), 1..12),
        reseal in proptest::prelude::any::<bool>(),
    ) {
        static GOOD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let good = GOOD.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.rmm");
            write(&path, &sample(600));
            read_all(&path)
        });
        let mut bad = good.clone();
        for (at, byte) in edits {
            let at = at % bad.len();
            bad[at] = byte;
        }
        let bad = if reseal && Header::decode(&bad).is_ok() { resealed(bad) } else { bad };
        if let Ok(map) = RowMap::from_bytes(Bytes::Owned(bad), Body::Hash) {
            read_everything(&map);
        }
    }
}

#[test]
fn a_torn_page_is_caught_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.rmm");
    write(&path, &sample(2000));
    let mut bad = read_all(&path);
    // A 4 KiB page of the row headers zeroed, as a torn write leaves it.
    let page = HEADER_LEN + 4096 * 3;
    bad[page..page + 4096].fill(0);
    let e = RowMap::from_bytes(Bytes::Owned(bad), Body::Hash).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
}

#[test]
fn stale_temps_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.rmm");
    std::fs::write(dir.path().join(".m.rmm.999.tmp"), b"x").unwrap();
    std::fs::write(dir.path().join(".m.rmm.999.ids.tmp"), b"x").unwrap();
    std::fs::write(dir.path().join("keep.tmp"), b"x").unwrap();
    assert_eq!(sweep_temps(&path), 2);
    assert!(dir.path().join("keep.tmp").exists());
}

/// A sync reads a map's body once per file: a file it checked before (same inode, length
/// and mtime) is trusted on its header, while a front checks every file it opens; a file
/// changed in place is checked again.
#[test]
fn a_sync_checks_a_map_body_once_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("messages.rmm");
    assert!(Checked::open(&path).unwrap().is_none(), "no map");
    write(&path, &sample(600));
    // Written by the writer alone, never checked: the first sync reads its body.
    let mut bytes = read_all(&path);
    let at = bytes.len() - 100;
    bytes[at] ^= 0x5a;
    let damage_in_place = |bytes: &[u8], keep_mtime: bool| {
        let f = File::options().write(true).open(&path).unwrap();
        let mtime = f.metadata().unwrap().modified().unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, bytes, 0).unwrap();
        if keep_mtime {
            f.set_modified(mtime).unwrap();
        } else {
            f.set_modified(mtime + std::time::Duration::from_secs(1))
                .unwrap();
        }
    };
    let good = read_all(&path);
    damage_in_place(&bytes, true);
    let e = Checked::open(&path).err().expect("unchecked body damage");
    assert!(e.to_string().contains("checksum"), "{e}");
    // Whole again, checked and noted: later opens read the header alone.
    damage_in_place(&good, true);
    let map = Checked::open(&path).unwrap().unwrap().map().unwrap();
    assert_eq!(map.rows(), 600);
    damage_in_place(&bytes, true);
    let trusted = Checked::open(&path).unwrap().unwrap();
    assert_eq!(trusted.header.rows, 600, "the header is all a sync read");
    assert!(RowMap::open(&path).is_err(), "the front checks the body");
    // Changed in place (its mtime moved): checked again.
    damage_in_place(&bytes, false);
    assert!(Checked::open(&path).is_err());
    // Truncated: its length no longer matches the header, whatever the note says.
    damage_in_place(&good, true);
    Checked::open(&path).unwrap().unwrap();
    let f = File::options().write(true).open(&path).unwrap();
    f.set_len(good.len() as u64 - 8).unwrap();
    let e = Checked::open(&path).err().expect("truncated");
    assert!(e.to_string().contains("truncated"), "{e}");
}

/// A build notes the file it wrote: the next sync trusts it without reading its body.
#[test]
fn a_built_map_is_noted_as_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("messages.rmm");
    write(&path, &sample(10));
    assert!(!checked::note_path(&path).exists());
    checked::note_whole(&path);
    let note = std::fs::read_to_string(checked::note_path(&path)).unwrap();
    Checked::open(&path).unwrap().unwrap();
    assert_eq!(
        std::fs::read_to_string(checked::note_path(&path)).unwrap(),
        note
    );
}
