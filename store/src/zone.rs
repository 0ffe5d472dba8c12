//! The time zone a person's days are in: the local zone (chrono's `Local`: `TZ`, else
//! `/etc/localtime`), or UTC when the process was told so (`--utc`, `[display] utc = true`).
//! One switch for the whole process, so a day typed (`--from 2026-03-01`, `after:yesterday`)
//! and a time shown (the front's `render::clock`) are in the same zone.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Local, NaiveDate, NaiveDateTime, TimeZone, Utc};

static UTC: AtomicBool = AtomicBool::new(false);

/// Read and show times in UTC (`true`) or in the local zone (`false`, the default) from now
/// on; set once at start.
pub fn set_utc(utc: bool) {
    UTC.store(utc, Ordering::Relaxed);
}

/// Whether times are read and shown in UTC.
pub fn is_utc() -> bool {
    UTC.load(Ordering::Relaxed)
}

/// The instant (epoch ms) a day starts in the zone. A midnight the local zone skips (a
/// daylight-saving change at 00:00) is the day's first existing instant.
pub fn day_start(day: NaiveDate) -> i64 {
    let midnight = day.and_hms_opt(0, 0, 0).expect("midnight");
    if is_utc() {
        return midnight.and_utc().timestamp_millis();
    }
    local(midnight)
}

fn local(t: NaiveDateTime) -> i64 {
    match Local.from_local_datetime(&t) {
        chrono::LocalResult::Single(t) => t.timestamp_millis(),
        chrono::LocalResult::Ambiguous(first, _) => first.timestamp_millis(),
        // Skipped: an hour later exists.
        chrono::LocalResult::None => local(t + chrono::Duration::hours(1)),
    }
}

/// Today's date in the zone.
pub fn today() -> NaiveDate {
    if is_utc() {
        Utc::now().date_naive()
    } else {
        Local::now().date_naive()
    }
}
