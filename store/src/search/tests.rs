use super::*;

#[test]
fn snippet_centres_on_the_match() {
    let text = format!(
        "{} the parser fails on CRLF input {}",
        "a ".repeat(300),
        "b ".repeat(300)
    );
    let s = snippet(&text, &["crlf".into()], 80);
    assert!(s.contains("CRLF"), "{s}");
    assert!(s.starts_with('…') && s.ends_with('…'));
    assert!(s.len() < 100);
}

#[test]
fn snippet_never_cuts_inside_a_character() {
    // A no-break space and an ideographic space (2 and 3 bytes) right where the window
    // starts used to leave it inside a character.
    for ws in ['\u{a0}', '\u{3000}', '\u{2003}', ' '] {
        for pad in 0..12 {
            let text = format!(
                "{}{ws}{}match here{ws}tail",
                "x".repeat(80 + pad),
                "é".repeat(pad)
            );
            let s = snippet(&text, &["match".into()], 60);
            assert!(s.contains("match"), "{s}");
        }
    }
}

proptest::proptest! {
    #[test]
    fn a_snippet_is_a_window_of_whole_characters(
        text in "[a-z \u{a0}\u{3000}\u{2003}é日本語\n\t]{0,400}",
        term in "[a-zé日本]{1,6}",
        width in 1usize..300,
    ) {
        let s = snippet(&text, &[term], width);
        // Built from slices of `text` at char boundaries (a panic otherwise), at most
        // `width` bytes of it plus the two ellipses.
        proptest::prop_assert!(s.len() <= width + 2 * '…'.len_utf8());
    }
}

#[test]
fn snippet_handles_unicode_and_short_text() {
    assert_eq!(
        snippet("héllo wörld", &["wörld".into()], 240),
        "héllo wörld"
    );
    let s = snippet(&"日本語のテキスト".repeat(50), &["テキスト".into()], 30);
    assert!(!s.is_empty());
}

#[test]
fn filters_escape_and_validate() {
    let f = SearchFilters {
        project: Some("o'neil_50%".into()),
        role: Some("user".into()),
        from: Some(0),
        ..Default::default()
    };
    let sql = f.to_sql().unwrap().unwrap();
    assert!(sql.contains("'%o''neil\\_50\\%%'"), "{sql}");
    assert!(sql.contains("TIMESTAMP '1970-01-01 00:00:00.000'"));
    let bad = SearchFilters {
        role: Some("robot".into()),
        ..Default::default()
    };
    assert!(bad.to_sql().is_err());
    // Roles nothing is searchable in are refused, not searched for nothing.
    for role in ["system", "tool"] {
        let f = SearchFilters {
            role: Some(role.into()),
            ..Default::default()
        };
        assert!(f.to_sql().is_err(), "{role}");
    }
}

#[test]
fn fusion_rewards_agreement_and_scales_each_arm() {
    let text = [(1u64, 9.0), (2, 5.0), (3, 1.0)];
    let near = [(3u64, 0.9), (1, 0.8), (4, 0.7)];
    let rrf = fuse(Fusion::Rrf, &[&text, &near]);
    assert_eq!(rrf.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 3, 2, 4]);
    assert!((rrf[0].1 - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-6);
    // Min-max, averaged over two arms: 1 = (1.0 + 0.5) / 2; 3 = (0 + 1.0) / 2;
    // 2 = (0.5 + missing) / 2; 4 = (missing + 0) / 2.
    let mm = fuse(Fusion::MinMax, &[&text, &near]);
    assert_eq!(mm.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 3, 2, 4]);
    assert!((mm[0].1 - 0.75).abs() < 1e-6 && (mm[1].1 - 0.5).abs() < 1e-6);
    assert_eq!(mm[3].1, 0.0);
    // One hit, or equal scores: each counts fully.
    assert_eq!(fuse(Fusion::MinMax, &[&[(7u64, 3.0)][..]]), [(7, 1.0)]);
    assert!(fuse::<u64>(Fusion::Rrf, &[&[], &[]]).is_empty());
}

#[test]
fn folding() {
    assert_eq!(fold_accents("Décimal naïve façade"), "Decimal naive facade");
    assert_eq!(fold_accents("日本語"), "日本語");
}

#[test]
fn dates() {
    assert_eq!(parse_date("1970-01-02").unwrap(), 86_400_000);
    assert!(parse_date("tomorrow").is_err());
    // A day as an upper bound is its end; a time is itself.
    assert_eq!(parse_end_date("1970-01-01").unwrap(), 86_400_000);
    assert_eq!(parse_end_date("1970-01-01T00:00:01Z").unwrap(), 1000);
    let reversed = SearchFilters {
        from: Some(parse_date("1970-01-03").unwrap()),
        to: Some(parse_end_date("1970-01-02").unwrap()),
        ..Default::default()
    };
    assert!(reversed.check_range().is_err());
    let one_day = SearchFilters {
        from: Some(parse_date("1970-01-02").unwrap()),
        to: Some(parse_end_date("1970-01-02").unwrap()),
        ..Default::default()
    };
    assert!(one_day.check_range().is_ok());
}
