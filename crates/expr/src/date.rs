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
                if chars.peek() == Some(&'\'') {
                    chars.next();
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
                'y' | 'Y' if n == 2 => num(&mut out, i64::from(t.year().rem_euclid(100)), 2),
                'y' => num(&mut out, i64::from(t.year()), n),
                'Y' => num(&mut out, i64::from(t.iso_week().year()), n),
                'M' | 'L' if n >= 4 => out.push_str(MONTHS[t.month0() as usize]),
                'M' | 'L' if n == 3 => out.push_str(&MONTHS[t.month0() as usize][..3]),
                'M' | 'L' => num(&mut out, i64::from(t.month()), n),
                'd' => num(&mut out, i64::from(t.day()), n),
                'D' => num(&mut out, i64::from(t.ordinal()), n),
                'E' if n >= 4 => out.push_str(DAYS[t.weekday().num_days_from_monday() as usize]),
                'E' => out.push_str(&DAYS[t.weekday().num_days_from_monday() as usize][..3]),
                'u' => num(&mut out, i64::from(t.weekday().number_from_monday()), n),
                'w' => num(&mut out, i64::from(t.iso_week().week()), n),
                'W' => num(
                    &mut out,
                    i64::from((t.day() + 6 - t.weekday().num_days_from_monday()) / 7 + 1),
                    n,
                ),
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
        assert_eq!(
            at("yyyy-MM-dd'T'HH:mm:ss.SSSXXX"),
            "2026-03-07T14:05:09.042+05:30"
        );
        assert_eq!(at("yyyyMMddHHmmss"), "20260307140509");
        assert_eq!(at("dd/MMM/yy h:mm a"), "07/Mar/26 2:05 PM");
        assert_eq!(at("EEEE, MMMM d, yyyy"), "Saturday, March 7, 2026");
        assert_eq!(at("EEE D u"), "Sat 66 6");
        assert_eq!(at("Z z X XX"), "+0530 GMT+05:30 +05 +0530");
        assert_eq!(at("'it''s' hh 'o''clock'"), "it's 02 o'clock");
        assert_eq!(at("S SS SSSS"), "42 42 0042");
        assert_eq!(at("k K G"), "14 2 AD");
        assert_eq!(
            DateFormat::java_default()
                .format(&chrono::Utc.with_ymd_and_hms(2026, 3, 7, 0, 5, 9).unwrap()),
            "3/7/26, 12:05 AM"
        );
        let utc = chrono::Utc.with_ymd_and_hms(2026, 3, 7, 0, 5, 9).unwrap();
        assert_eq!(DateFormat::parse("XXX z").unwrap().format(&utc), "Z UTC");
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(DateFormat::parse("yyyy-MM-ddTHH")
            .unwrap_err()
            .contains("'T'"));
        assert!(DateFormat::parse("yyyy 'open")
            .unwrap_err()
            .contains("unterminated"));
        assert!(DateFormat::parse("yyyy-MM-dd 'T' ''").is_ok());
    }
}
