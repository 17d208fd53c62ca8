//! `get-property('SYSTEM_DATE', FORMAT)`: the current local time in a Java `SimpleDateFormat`
//! pattern, compiled at load (a letter Java does not know is an error there, as Java's constructor
//! throws).

use chrono::{DateTime, Datelike, Local, Offset, TimeZone, Timelike};

/// A compiled `SimpleDateFormat` pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DateFormat(Vec<Piece>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// A pattern letter and how many times it is repeated.
    Field(char, usize),
}

/// The letters Sluice formats (week-based fields `w W F Y` and `k`/`K` variants included).
const LETTERS: &str = "GyYMLdDEuaHkKhmsSzZXwWF";

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

impl DateFormat {
    /// Java's `new SimpleDateFormat()` in the US English locale (Java 9 and later).
    pub(crate) fn java_default() -> DateFormat {
        DateFormat::parse("M/d/yy, h:mm a").expect("a constant pattern")
    }

    pub(crate) fn parse(pattern: &str) -> Result<DateFormat, String> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                // '' is a quote; 'text' is literal text (a '' inside it a quote too).
                if chars.next_if_eq(&'\'').is_some() {
                    text.push('\'');
                    continue;
                }
                loop {
                    match chars.next() {
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            text.push('\'');
                        }
                        Some('\'') => break,
                        Some(q) => text.push(q),
                        None => {
                            return Err(format!("unterminated quote in date format '{pattern}'"))
                        }
                    }
                }
            } else if c.is_ascii_alphabetic() {
                if !LETTERS.contains(c) {
                    return Err(format!(
                        "illegal pattern character '{c}' in date format '{pattern}'"
                    ));
                }
                let mut n = 1;
                while chars.peek() == Some(&c) {
                    chars.next();
                    n += 1;
                }
                if c == 'X' && n > 3 {
                    return Err(format!(
                        "invalid ISO 8601 zone 'XXXX…' in date format '{pattern}'"
                    ));
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Field(c, n));
            } else {
                text.push(c);
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(DateFormat(pieces))
    }

    /// The current local time.
    pub(crate) fn now(&self) -> String {
        self.format(&Local::now())
    }

    pub(crate) fn format<Tz: TimeZone>(&self, t: &DateTime<Tz>) -> String {
        let mut out = String::new();
        let num = |out: &mut String, v: i64, width: usize| {
            let s = v.unsigned_abs().to_string();
            if v < 0 {
                out.push('-');
            }
            for _ in s.len()..width {
                out.push('0');
            }
            out.push_str(&s);
        };
        let offset = t.offset().fix().local_minus_utc() / 60;
        for p in &self.0 {
            let (c, n) = match p {
                Piece::Text(s) => {
                    out.push_str(s);
                    continue;
                }
                Piece::Field(c, n) => (*c, *n),
            };
            match c {
                'G' => out.push_str(if t.year() > 0 { "AD" } else { "BC" }),
                'y' if n == 2 => num(&mut out, i64::from(t.year().rem_euclid(100)), 2),
                'Y' if n == 2 => num(&mut out, i64::from(us_week(t).0.rem_euclid(100)), 2),
                'y' => num(&mut out, i64::from(t.year()), n),
                'Y' => num(&mut out, i64::from(us_week(t).0), n),
                'M' | 'L' if n >= 4 => out.push_str(MONTHS[t.month0() as usize]),
                'M' | 'L' if n == 3 => out.push_str(&MONTHS[t.month0() as usize][..3]),
                'M' | 'L' => num(&mut out, i64::from(t.month()), n),
                'd' => num(&mut out, i64::from(t.day()), n),
                'D' => num(&mut out, i64::from(t.ordinal()), n),
                'E' if n >= 4 => out.push_str(DAYS[t.weekday().num_days_from_monday() as usize]),
                'E' => out.push_str(&DAYS[t.weekday().num_days_from_monday() as usize][..3]),
                'u' => num(&mut out, i64::from(t.weekday().number_from_monday()), n),
                'w' => num(&mut out, i64::from(us_week(t).1), n),
                'W' => {
                    // Weeks from Sunday; the first holds the 1st of the month.
                    let first = (t.weekday().num_days_from_sunday() + 35 - (t.day() - 1)) % 7;
                    num(&mut out, i64::from((t.day() - 1 + first) / 7 + 1), n)
                }
                'F' => num(&mut out, i64::from((t.day() - 1) / 7 + 1), n),
                'a' => out.push_str(if t.hour() < 12 { "AM" } else { "PM" }),
                'H' => num(&mut out, i64::from(t.hour()), n),
                'k' => num(
                    &mut out,
                    i64::from(if t.hour() == 0 { 24 } else { t.hour() }),
                    n,
                ),
                'K' => num(&mut out, i64::from(t.hour() % 12), n),
                'h' => num(
                    &mut out,
                    i64::from(if t.hour().is_multiple_of(12) {
                        12
                    } else {
                        t.hour() % 12
                    }),
                    n,
                ),
                'm' => num(&mut out, i64::from(t.minute()), n),
                's' => num(&mut out, i64::from(t.second()), n),
                'S' => num(&mut out, i64::from(t.timestamp_subsec_millis().min(999)), n),
                'z' if offset == 0 => out.push_str("UTC"),
                'z' => {
                    out.push_str("GMT");
                    zone(&mut out, offset, true);
                }
                'Z' => zone(&mut out, offset, false),
                'X' if offset == 0 => out.push('Z'),
                'X' if n == 1 => {
                    out.push(if offset < 0 { '-' } else { '+' });
                    num(&mut out, i64::from(offset.abs() / 60), 2);
                }
                'X' => zone(&mut out, offset, n >= 3),
                _ => {}
            }
        }
        out
    }
}

/// The week year and week of the year as Java counts them in the US locale: weeks start on Sunday,
/// and week 1 is the week that holds January 1 (so the last days of December may be week 1 of the
/// next year).
fn us_week<Tz: TimeZone>(t: &DateTime<Tz>) -> (i32, u32) {
    let wd = t.weekday().num_days_from_sunday();
    let doy = t.ordinal(); // 1-based
    let days_in_year =
        if chrono::NaiveDate::from_ymd_opt(t.year(), 12, 31).is_some_and(|d| d.ordinal() == 366) {
            366
        } else {
            365
        };
    // The Sunday that starts this date's week, as a day of this year (may be before day 1).
    let week_start = i64::from(doy) - i64::from(wd);
    // January 1 of next year falls in this week.
    if week_start + 6 > i64::from(days_in_year) {
        return (t.year() + 1, 1);
    }
    let jan1_wd = (wd + 371 - (doy - 1)) % 7;
    (t.year(), (doy - 1 + jan1_wd) / 7 + 1)
}

/// `+hhmm`, or `+hh:mm` with `colon`.
fn zone(out: &mut String, minutes: i32, colon: bool) {
    out.push(if minutes < 0 { '-' } else { '+' });
    let m = minutes.abs();
    out.push_str(&format!("{:02}", m / 60));
    if colon {
        out.push(':');
    }
    out.push_str(&format!("{:02}", m % 60));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::mutation_rounds;
    use chrono::FixedOffset;

    fn at(pattern: &str) -> String {
        let t = FixedOffset::east_opt(5 * 3600 + 1800)
            .unwrap()
            .with_ymd_and_hms(2026, 3, 7, 14, 5, 9)
            .unwrap()
            + chrono::Duration::milliseconds(42);
        DateFormat::parse(pattern).unwrap().format(&t)
    }

    #[test]
    fn java_patterns() {
        for (pattern, want) in [
            (
                "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
                "2026-03-07T14:05:09.042+05:30",
            ),
            ("yyyyMMddHHmmss", "20260307140509"),
            ("dd/MMM/yy h:mm a", "07/Mar/26 2:05 PM"),
            ("EEEE, MMMM d, yyyy", "Saturday, March 7, 2026"),
            ("EEE D u", "Sat 66 6"),
            ("Z z X XX", "+0530 GMT+05:30 +05 +0530"),
            ("'it''s' hh 'o''clock'", "it's 02 o'clock"),
            ("S SS SSSS", "42 42 0042"),
            ("k K G", "14 2 AD"),
        ] {
            assert_eq!(at(pattern), want, "{pattern}");
        }
        assert_eq!(
            DateFormat::java_default()
                .format(&chrono::Utc.with_ymd_and_hms(2026, 3, 7, 0, 5, 9).unwrap()),
            "3/7/26, 12:05 AM"
        );
        let utc = chrono::Utc.with_ymd_and_hms(2026, 3, 7, 0, 5, 9).unwrap();
        assert_eq!(DateFormat::parse("XXX z").unwrap().format(&utc), "Z UTC");
    }

    #[test]
    fn weeks_as_java_counts_them_in_the_us() {
        let d = |y, m, day| {
            let t = chrono::Utc.with_ymd_and_hms(y, m, day, 12, 0, 0).unwrap();
            DateFormat::parse("YYYY w W F").unwrap().format(&t)
        };
        // 2026-03-07 is a Saturday; the 1st was a Sunday.
        assert_eq!(d(2026, 3, 7), "2026 10 1 1");
        // Sunday 2026-03-08 starts week 11 and the month's second week.
        assert_eq!(d(2026, 3, 8), "2026 11 2 2");
        // 2026-12-28 (Monday) is in the week that holds 2027-01-01: week 1 of 2027.
        assert_eq!(d(2026, 12, 28), "2027 1 5 4");
        assert_eq!(d(2026, 12, 26), "2026 52 4 4");
        // 2026-06-01 is a Monday: week 1 of June.
        assert_eq!(d(2026, 6, 1), "2026 23 1 1");
        assert_eq!(d(2027, 1, 1), "2027 1 1 1");
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(DateFormat::parse("XXXX").is_err());
        assert!(DateFormat::parse("yyyy-MM-ddTHH")
            .unwrap_err()
            .contains("'T'"));
        assert!(DateFormat::parse("yyyy 'open")
            .unwrap_err()
            .contains("unterminated"));
        assert!(DateFormat::parse("yyyy-MM-dd 'T' ''").is_ok());
    }

    /// Deterministic mutation fuzzing of the pattern compiler: Java patterns with characters
    /// replaced, deleted, inserted (quotes, letters Java knows and does not, multi-byte ones),
    /// spans duplicated and tails cut must compile or be refused, never panic; a compiled one
    /// formats times at both ends of the zone range and of the year without panicking, and any
    /// text without quotes, quoted, compiles and formats as itself.
    #[test]
    fn mutated_patterns_never_panic() {
        let seeds = [
            "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
            "yyyyMMddHHmmss",
            "dd/MMM/yy h:mm a",
            "EEEE, MMMM d, yyyy G",
            "EEE D u k K",
            "Z z X XX",
            "'it''s' hh 'o''clock'",
            "YYYY 'week' w W F",
            "M/d/yy, h:mm a",
            "''",
        ];
        let times = [
            FixedOffset::east_opt(5 * 3600 + 1800)
                .unwrap()
                .with_ymd_and_hms(2026, 3, 7, 14, 5, 9)
                .unwrap(),
            FixedOffset::west_opt(12 * 3600)
                .unwrap()
                .with_ymd_and_hms(2026, 12, 31, 23, 59, 59)
                .unwrap(),
            FixedOffset::east_opt(14 * 3600)
                .unwrap()
                .with_ymd_and_hms(2028, 1, 1, 0, 0, 0)
                .unwrap(),
            FixedOffset::east_opt(0)
                .unwrap()
                .with_ymd_and_hms(-44, 2, 29, 12, 0, 0)
                .unwrap(),
        ];
        let specials = "'yMdHhmsSEaZXzwWFYGuDkKLTqb -:/.,é\u{1F600}";
        let (compiled, rounds) = mutation_rounds(&seeds, specials, 0x3c6e_f372_fe94_f82b, |text| {
            let ok = DateFormat::parse(text).map(|f| {
                for t in &times {
                    let _ = f.format(t);
                }
            });
            // (Only text without quotes: Java reads `''` as a quote even where a quoted run
            // ends, so text with quotes has no quoting that always gives it back.)
            let plain: String = text.chars().filter(|&c| c != '\'').collect();
            if !plain.is_empty() {
                let quoted = format!("'{plain}'");
                let f = DateFormat::parse(&quoted).unwrap_or_else(|e| panic!("{quoted}: {e}"));
                assert_eq!(f.format(&times[0]), plain, "{quoted}");
            }
            ok.is_ok()
        });
        assert!(compiled * 5 > rounds, "{compiled} of {rounds} compiled");
    }
}
