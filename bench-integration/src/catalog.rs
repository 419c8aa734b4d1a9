//! The metric catalog: the one seam every counting tier feeds and every renderer reads.
//!
//! A tier contributes [`MetricDescriptor`]s (what it can measure, and whether it can on
//! this machine) and, per case, values keyed by the same ids. Table rendering, `--metrics`
//! selection, `--list-metrics` and the JSON rows are written against descriptors alone, so
//! a new tier plugs in by adding descriptors and a [`Source`], never by touching them.

use std::fmt;

use crate::error::Error;

/// Whether a metric is safe to headline or only explains one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricClass {
    /// Near-zero perturbation: safe to headline.
    Quantitative,
    /// Perturbs what it measures: explains a result, never headlines it.
    Diagnostic,
}

impl MetricClass {
    /// The class as listed.
    pub fn label(self) -> &'static str {
        match self {
            MetricClass::Quantitative => "quantitative",
            MetricClass::Diagnostic => "diagnostic",
        }
    }
}

/// How a metric's value is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricFormat {
    /// A count per iteration.
    Count,
    /// A dimensionless ratio.
    Ratio,
    /// A percentage, 0–100.
    Percent,
    /// Bytes per second.
    BytesPerSecond,
    /// Elements per second.
    PerSecond,
}

/// Where a metric's value comes from: which tier must be open to produce it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Computed from what the case declared (throughput) against the timed median.
    Client,
    /// getrusage(2) and /proc/self/io: always available, no privilege.
    Tier0,
    /// The `--profile` pass: samples and losses of the case's capture.
    Profile,
}

impl Source {
    /// The source as listed.
    pub fn label(self) -> &'static str {
        match self {
            Source::Client => "client",
            Source::Tier0 => "tier0",
            Source::Profile => "profile",
        }
    }

    /// Whether the source is a counting tier that needs the second (counting) pass.
    pub fn needs_counting_pass(self) -> bool {
        matches!(self, Source::Tier0)
    }
}

/// Whether a metric can be produced on this run, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// The metric is produced.
    Available,
    /// The metric is absent; the reason says what a user can do about it.
    Unavailable(String),
}

/// One catalog entry.
#[derive(Debug, Clone)]
pub struct MetricDescriptor {
    /// Stable id: the JSON key and what `--metrics` globs match.
    pub id: &'static str,
    /// Column label.
    pub header: &'static str,
    /// One line saying what it counts.
    pub description: &'static str,
    /// How the value is printed.
    pub format: MetricFormat,
    /// Quantitative or diagnostic.
    pub class: MetricClass,
    /// Which tier produces it.
    pub source: Source,
    /// Shown without a `--metrics` filter.
    pub default_visible: bool,
    /// Producible on this run.
    pub availability: Availability,
}

/// One rendered value: a metric id and its value, `None` where the tier could not produce
/// it for this case (rendered as an em dash, serialized as null).
pub type MetricValue = (&'static str, Option<f64>);

/// The whole catalog on this machine, in column order.
#[derive(Debug, Clone)]
pub struct Catalog {
    descriptors: Vec<MetricDescriptor>,
}

impl Catalog {
    /// Builds the catalog from every tier's descriptors.
    pub fn probe() -> Catalog {
        let mut descriptors = crate::throughput::descriptors();
        descriptors.extend(crate::tier0::descriptors());
        descriptors.extend(crate::profile::descriptors());
        Catalog { descriptors }
    }

    /// Every descriptor, in column order.
    pub fn descriptors(&self) -> &[MetricDescriptor] {
        &self.descriptors
    }

    /// The metrics a run selects: the default-visible ones, or those matching any of
    /// `globs` (`--metrics`). A glob that matches nothing is an error naming it.
    pub fn select(&self, globs: Option<&[String]>) -> Result<Selection, Error> {
        self.select_with(globs, false)
    }

    /// [`Catalog::select`], the profile columns among the defaults when `profiling`.
    pub fn select_with(
        &self,
        globs: Option<&[String]>,
        profiling: bool,
    ) -> Result<Selection, Error> {
        let chosen: Vec<MetricDescriptor> = match globs {
            None => self
                .descriptors
                .iter()
                .filter(|d| match d.source {
                    Source::Profile => profiling,
                    Source::Client => true,
                    _ => d.default_visible,
                })
                .cloned()
                .collect(),
            Some(globs) => {
                let mut patterns = Vec::with_capacity(globs.len());
                for g in globs {
                    let pattern = glob::Pattern::new(g).map_err(|e| Error::Usage {
                        flag: "--metrics",
                        message: format!("'{g}' is not a valid glob: {e}"),
                    })?;
                    if !self.descriptors.iter().any(|d| pattern.matches(d.id)) {
                        return Err(Error::Usage {
                            flag: "--metrics",
                            message: format!("'{g}' matches no metric (--list-metrics lists them)"),
                        });
                    }
                    patterns.push(pattern);
                }
                self.descriptors
                    .iter()
                    .filter(|d| patterns.iter().any(|p| p.matches(d.id)))
                    .cloned()
                    .collect()
            }
        };
        Ok(Selection {
            metrics: chosen,
            filtered: globs.is_some(),
        })
    }
}

/// The metrics one run reports, and so the tiers it opens.
#[derive(Debug, Clone)]
pub struct Selection {
    metrics: Vec<MetricDescriptor>,
    filtered: bool,
}

impl Selection {
    /// The selected metrics, in column order.
    pub fn metrics(&self) -> &[MetricDescriptor] {
        &self.metrics
    }

    /// Whether the selection came from `--metrics` rather than the defaults.
    pub fn is_filtered(&self) -> bool {
        self.filtered
    }

    /// Whether any selected, available metric comes from `source`: the tier is opened
    /// only then.
    pub fn needs(&self, source: Source) -> bool {
        self.metrics
            .iter()
            .any(|m| m.source == source && m.availability == Availability::Available)
    }

    /// Whether the run needs a counting pass at all.
    pub fn needs_counting_pass(&self) -> bool {
        self.metrics
            .iter()
            .any(|m| m.source.needs_counting_pass() && m.availability == Availability::Available)
    }
}

impl fmt::Display for Catalog {
    /// The `--list-metrics` listing: id, header, class, source, default, availability.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id_width = self
            .descriptors
            .iter()
            .map(|d| d.id.len())
            .max()
            .unwrap_or(2);
        let header_width = self
            .descriptors
            .iter()
            .map(|d| d.header.chars().count())
            .max()
            .unwrap_or(6);
        writeln!(
            f,
            "{:<id_width$}  {:<header_width$}  {:<12}  {:<6}  {:<7}  availability",
            "id", "header", "class", "source", "default"
        )?;
        for d in &self.descriptors {
            let availability = match &d.availability {
                Availability::Available => "available".to_string(),
                Availability::Unavailable(why) => format!("unavailable: {why}"),
            };
            writeln!(
                f,
                "{:<id_width$}  {:<header_width$}  {:<12}  {:<6}  {:<7}  {}",
                d.id,
                d.header,
                d.class.label(),
                d.source.label(),
                if d.default_visible { "yes" } else { "no" },
                availability
            )?;
            writeln!(f, "{:<id_width$}  {}", "", d.description)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_selection_includes_throughput_and_tier0_defaults() {
        let catalog = Catalog::probe();
        let sel = catalog.select(None).unwrap();
        let ids: Vec<_> = sel.metrics().iter().map(|m| m.id).collect();
        assert!(ids.contains(&"throughput.bytes_per_sec"));
        assert!(ids.contains(&"rusage.minor_faults"));
        assert!(!sel.is_filtered());
        assert!(sel.needs(Source::Tier0));
    }

    #[test]
    fn globs_select_columns_and_tiers() {
        let catalog = Catalog::probe();
        let sel = catalog.select(Some(&["throughput.*".to_string()])).unwrap();
        assert!(sel.metrics().iter().all(|m| m.source == Source::Client));
        assert!(!sel.needs(Source::Tier0));
        assert!(!sel.needs_counting_pass());
        let sel = catalog.select(Some(&["rusage.*".to_string()])).unwrap();
        assert_eq!(sel.metrics().len(), 4);
        assert!(sel.needs_counting_pass());
    }

    #[test]
    fn a_glob_matching_nothing_is_an_error_naming_it() {
        let err = Catalog::probe()
            .select(Some(&["nosuch*".to_string()]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--metrics") && err.contains("nosuch*"),
            "{err}"
        );
    }

    #[test]
    fn listing_names_every_metric_with_its_class_and_source() {
        let text = Catalog::probe().to_string();
        for line in [
            "rusage.minor_faults",
            "io.rchar",
            "quantitative",
            "tier0",
            "client",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
