//! Client metrics: the throughput a case declares, computed against its timed median.

use crate::metric::{
    Availability, MetricClass, MetricDescriptor, MetricFormat, MetricValue, Source,
};

/// How much work one iteration of a case does, for a rate column (as JSON
/// `{"bytes": N}` or `{"elements": N}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Throughput {
    /// Bytes processed per iteration.
    Bytes(u64),
    /// Elements (records, items, keys) processed per iteration.
    Elements(u64),
}

impl Throughput {
    /// `n` times as much work (a thread sweep's iteration: each of `n` threads calls
    /// the body once).
    pub fn times(self, n: u64) -> Throughput {
        match self {
            Throughput::Bytes(b) => Throughput::Bytes(b.saturating_mul(n)),
            Throughput::Elements(e) => Throughput::Elements(e.saturating_mul(n)),
        }
    }
}

/// Id of the bytes-per-second metric.
pub const BYTES_PER_SEC: &str = "throughput.bytes_per_sec";
/// Id of the elements-per-second metric.
pub const ELEMENTS_PER_SEC: &str = "throughput.elements_per_sec";

/// The client metrics' catalog entries.
pub fn descriptors() -> Vec<MetricDescriptor> {
    vec![
        MetricDescriptor {
            id: BYTES_PER_SEC.into(),
            header: "B/s".into(),
            description: "bytes the case declared per iteration, over the timed median".into(),
            format: MetricFormat::BytesPerSecond,
            class: MetricClass::Quantitative,
            source: Source::Client,
            default_visible: true,
            availability: Availability::Available,
        },
        MetricDescriptor {
            id: ELEMENTS_PER_SEC.into(),
            header: "elem/s".into(),
            description: "elements the case declared per iteration, over the timed median".into(),
            format: MetricFormat::PerSecond,
            class: MetricClass::Quantitative,
            source: Source::Client,
            default_visible: true,
            availability: Availability::Available,
        },
    ]
}

/// The client metrics of one case from its declared throughput and its median in ns.
pub fn values(throughput: Option<Throughput>, median_ns: f64) -> Vec<MetricValue> {
    let rate = |per_iter: u64| {
        (median_ns > 0.0 && median_ns.is_finite()).then(|| per_iter as f64 * 1e9 / median_ns)
    };
    vec![
        (
            BYTES_PER_SEC.into(),
            match throughput {
                Some(Throughput::Bytes(n)) => rate(n),
                _ => None,
            },
        ),
        (
            ELEMENTS_PER_SEC.into(),
            match throughput {
                Some(Throughput::Elements(n)) => rate(n),
                _ => None,
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_work_over_the_median() {
        let v = values(Some(Throughput::Bytes(1000)), 500.0);
        assert_eq!(v[0], (BYTES_PER_SEC.into(), Some(2e9)));
        assert_eq!(v[1], (ELEMENTS_PER_SEC.into(), None));
        let v = values(Some(Throughput::Elements(10)), 1e9);
        assert_eq!(v[1], (ELEMENTS_PER_SEC.into(), Some(10.0)));
        assert!(values(None, 1.0).iter().all(|(_, v)| v.is_none()));
    }
}
