//! How a time is shown to people, decided in one place (`shown`): in the local time zone
//! with its offset (`2026-03-01 15:30:00 +05:30`), or in UTC (`2026-03-01 10:00:00 UTC`)
//! when the process was told so (`--utc`, `[display] utc = true`: the store's
//! [`pond_store::zone`] switch, which also says the zone of a typed day). An offset of
//! zero is always written `UTC`. Every text rendering of a time (CLI, MCP answers, Markdown
//! exports, status) goes through [`time`] or [`minute`]; JSON keeps the data's own UTC and
//! epoch values.
//!
//! The local zone is chrono's `Local`: the `TZ` variable, else `/etc/localtime`, of the
//! process that renders. A resident server (`pond serve`) renders MCP answers in the zone of
//! the environment it was started in, and with the `--utc` of the `pond mcp` that started it.

use chrono::{DateTime, FixedOffset, Local};

/// An instant (epoch ms) to the second: `2026-03-01 15:30:00 +05:30`; `-` if out of range.
pub fn time(ms: i64) -> String {
    at(ms, "%Y-%m-%d %H:%M:%S")
}

/// An instant (epoch ms) to the minute, as status lines show spans: `2026-03-01 15:30 +05:30`.
pub fn minute(ms: i64) -> String {
    at(ms, "%Y-%m-%d %H:%M")
}

/// An RFC 3339 time (as the store keeps a report's) shown as [`time`] shows it; a text that
/// is not one is shown as it is.
pub fn time_rfc3339(text: &str) -> String {
    DateTime::parse_from_rfc3339(text)
        .map(|t| time(t.timestamp_millis()))
        .unwrap_or_else(|_| text.to_owned())
}

fn at(ms: i64, layout: &str) -> String {
    let Some(t) = DateTime::from_timestamp_millis(ms) else {
        return "-".into();
    };
    let t = if pond_store::zone::is_utc() {
        t.fixed_offset()
    } else {
        t.with_timezone(&Local).fixed_offset()
    };
    shown(t, layout)
}

/// The one rendering of a time: `layout`, then the offset (`+05:30`, or `UTC` for zero).
fn shown(t: DateTime<FixedOffset>, layout: &str) -> String {
    let zone = match t.offset().local_minus_utc() {
        0 => "UTC".to_owned(),
        _ => t.format("%:z").to_string(),
    };
    format!("{} {zone}", t.format(layout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_zone(rfc3339: &str, offset_secs: i32) -> DateTime<FixedOffset> {
        let zone = FixedOffset::east_opt(offset_secs).unwrap();
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .with_timezone(&zone)
    }

    #[test]
    fn a_time_says_its_offset_and_zero_is_utc() {
        let layout = "%Y-%m-%d %H:%M:%S";
        let t = "2026-03-01T10:00:00Z";
        assert_eq!(
            shown(in_zone(t, 5 * 3600 + 1800), layout),
            "2026-03-01 15:30:00 +05:30"
        );
        assert_eq!(
            shown(in_zone(t, -5 * 3600), layout),
            "2026-03-01 05:00:00 -05:00"
        );
        assert_eq!(shown(in_zone(t, 0), layout), "2026-03-01 10:00:00 UTC");
        assert_eq!(
            shown(in_zone(t, 14 * 3600), "%Y-%m-%d %H:%M"),
            "2026-03-02 00:00 +14:00"
        );
    }

    #[test]
    fn what_is_not_a_time_is_shown_as_it_is() {
        assert_eq!(time(i64::MAX), "-");
        assert_eq!(time_rfc3339("yesterday"), "yesterday");
    }
}
