//! Units as people read them: times in ns, µs, ms or s, counts with k/M/G, bytes in KiB,
//! MiB and GiB, each to three significant digits.

use std::time::Duration;

use crate::metric::MetricFormat;

/// The unit a time of `ns` nanoseconds is shown in: its size in nanoseconds, and its name
/// (ns, µs, ms or s).
pub fn time_unit(ns: f64) -> (f64, &'static str) {
    match ns.abs() {
        t if t < 1e3 => (1.0, "ns"),
        t if t < 1e6 => (1e3, "µs"),
        t if t < 1e9 => (1e6, "ms"),
        _ => (1e9, "s"),
    }
}

/// Formats nanoseconds with three significant digits in ns, µs, ms or s.
pub fn format_ns(ns: f64) -> String {
    let (scale, unit) = time_unit(ns);
    format!("{} {unit}", three_digits(ns / scale))
}

fn three_digits(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn scaled(v: f64, step: f64, units: &[&str]) -> String {
    let mut value = v;
    let mut unit = 0;
    while value.abs() >= step && unit + 1 < units.len() {
        value /= step;
        unit += 1;
    }
    format!("{}{}", three_digits(value), units[unit])
}

/// Formats one metric value the way its descriptor says; an em dash for no value.
pub fn format_metric(value: Option<f64>, format: MetricFormat) -> String {
    let Some(v) = value.filter(|v| v.is_finite()) else {
        return "—".to_string();
    };
    match format {
        MetricFormat::Count => {
            if v == 0.0 {
                "0".to_string()
            } else if v.abs() >= 1e4 {
                scaled(v, 1000.0, &["", "k", "M", "G", "T"])
            } else if v.abs() >= 100.0 {
                format!("{v:.0}")
            } else if v.abs() >= 1.0 {
                format!("{v:.2}")
            } else {
                format!("{v:.3}")
            }
        }
        MetricFormat::Ratio => format!("{v:.3}"),
        MetricFormat::Percent => format!("{v:.1}%"),
        MetricFormat::BytesPerSecond => {
            scaled(v, 1024.0, &[" B/s", " KiB/s", " MiB/s", " GiB/s", " TiB/s"])
        }
        MetricFormat::PerSecond => scaled(v, 1000.0, &["/s", " K/s", " M/s", " G/s", " T/s"]),
    }
}

/// Bytes as a person reads them: `512 KiB`, `1.5 MiB`, `100 B`.
pub fn format_bytes(n: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A duration, or a bare number of seconds (criterion's spelling of `--profile-time`):
/// what the harness and `sparkles compare` both take for a time a pass runs.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds)
            .map_err(|_| format!("'{text}' is not a number of seconds")),
        Err(_) => parse_duration(text),
    }
}

/// A duration with its unit (`5ms`, `1.5s`, `2min`, `1h`: humantime's spellings); a bare
/// number is refused, naming the units.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("'{text}' needs a unit (ns, us, ms, s)"));
    }
    humantime::parse_duration(text).map_err(|e| format!("'{text}': {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units_scale() {
        assert_eq!(format_ns(0.42), "0.42 ns");
        assert_eq!(format_ns(12.345), "12.3 ns");
        assert_eq!(format_ns(1234.0), "1.23 µs");
        assert_eq!(format_ns(5_600_000.0), "5.60 ms");
        assert_eq!(format_ns(2.5e9), "2.50 s");
    }

    #[test]
    fn metric_formats() {
        assert_eq!(format_metric(None, MetricFormat::Count), "—");
        assert_eq!(format_metric(Some(0.0), MetricFormat::Count), "0");
        assert_eq!(format_metric(Some(0.0123), MetricFormat::Count), "0.012");
        assert_eq!(format_metric(Some(1024.4), MetricFormat::Count), "1024");
        assert_eq!(
            format_metric(Some(1_048_576.0), MetricFormat::Count),
            "1.05M"
        );
        assert_eq!(
            format_metric(
                Some(3.0 * 1024.0 * 1024.0 * 1024.0),
                MetricFormat::BytesPerSecond
            ),
            "3.00 GiB/s"
        );
        assert_eq!(
            format_metric(Some(2.5e6), MetricFormat::PerSecond),
            "2.50 M/s"
        );
        assert_eq!(format_metric(Some(12.34), MetricFormat::Percent), "12.3%");
    }

    #[test]
    fn durations_need_a_unit_and_times_take_bare_seconds() {
        assert_eq!(parse_duration("5ms"), Ok(Duration::from_millis(5)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("fast").is_err());
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_seconds("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_seconds("-1").is_err());
    }
}
