//! What the store's queries are asked (a time range, an agent, a project), and the calendar
//! they are answered in: days, weeks and months of a time zone (local, as ccusage, unless told).

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp};

/// Which runs and sessions a query is about. Times are unix ms, `until` exclusive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    /// The agent exactly (`claude`, `codex`, `opencode`, …).
    pub agent: Option<String>,
    /// Part of the project's path.
    pub project: Option<String>,
    /// The machine exactly (a team store's sessions each name one).
    pub machine: Option<String>,
}

/// Unix ms of the first moment of `date` in `tz`.
pub fn day_start(date: Date, tz: &TimeZone) -> Option<i64> {
    Some(date.to_zoned_datetime(tz.clone()).ok()?.start_of_day().ok()?.timestamp().as_millisecond())
}

/// The zone's name, for messages and JSON.
pub fn zone_name(tz: &TimeZone) -> String {
    tz.iana_name().map_or_else(|| "local time".to_owned(), str::to_owned)
}

/// The zone `--tz` names: an IANA name (`Europe/Paris`, `UTC`), or local time without one.
pub fn zone(name: Option<&str>) -> Result<TimeZone, String> {
    match name {
        None | Some("local") => Ok(TimeZone::system()),
        // The same zone, without the look through the whole zone database a lookup by name begins
        // with (a tenth of a repeated `report --tz UTC`, perf).
        Some("UTC") => Ok(TimeZone::UTC),
        Some(n) => TimeZone::get(n).map_err(|e| format!("unknown time zone {n:?}: {e}")),
    }
}

/// The calendar date `ms` falls on in `tz`.
pub fn date_in(ms: i64, tz: &TimeZone) -> Option<Date> {
    Some(Timestamp::from_millisecond(ms).ok()?.to_zoned_datetime(tz.clone()).date())
}

/// The Monday that starts the week of `date` (ccusage's weeks start on Monday).
pub fn week_of(date: Date) -> Date {
    let back = Weekday::Monday.until(date.weekday());
    date.checked_sub(Span::new().days(i64::from(back))).unwrap_or(date)
}

/// `2026-02-12T17:02:25.227+01:00`: a time in `tz`, as JSON and tables print it.
pub fn rfc3339(ms: i64, tz: &TimeZone) -> Option<String> {
    let z = Timestamp::from_millisecond(ms).ok()?.to_zoned_datetime(tz.clone());
    Some(z.timestamp().display_with_offset(z.offset()).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weeks_start_on_monday() {
        let thursday = Date::new(2026, 2, 12).unwrap();
        assert_eq!(week_of(thursday), Date::new(2026, 2, 9).unwrap());
        let monday = Date::new(2026, 2, 9).unwrap();
        assert_eq!(week_of(monday), monday);
        let sunday = Date::new(2026, 2, 15).unwrap();
        assert_eq!(week_of(sunday), monday);
    }
}
