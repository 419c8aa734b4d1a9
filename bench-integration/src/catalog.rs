//! The metric catalog: the one seam every counting tier feeds and every renderer reads.
//!
//! A tier contributes [`MetricDescriptor`]s (what it can measure, and whether it can on
//! this machine) and, per case, values keyed by the same ids. Table rendering, `--metrics`
//! selection, `--list-metrics` and the JSON rows are written against descriptors alone, so
//! a new tier plugs in by adding descriptors and a [`Source`], never by touching them.

use std::fmt;

use std::sync::Arc;

use crate::tiers::perf::{self, CountingOptions, Plans};
use sparkles_results::error::Error;

pub use sparkles_results::metric::{
    Availability, MetricClass, MetricDescriptor, MetricFormat, MetricValue, Source,
};

/// The whole catalog on this machine, in column order.
#[derive(Debug, Clone)]
pub struct Catalog {
    descriptors: Vec<MetricDescriptor>,
    /// What the perf_event tiers open when their metrics are selected.
    plans: Plans,
}

impl Catalog {
    /// Builds the catalog from every tier's descriptors, the perf_event tiers with their
    /// default events.
    pub fn probe() -> Catalog {
        Catalog::probe_with(&CountingOptions::default()).expect("the default events always resolve")
    }

    /// Builds the catalog with the perf_event tiers counting what `options` says; an
    /// event or syscall that does not resolve is an error naming its flag.
    pub fn probe_with(options: &CountingOptions) -> Result<Catalog, Error> {
        let system = sparkles_sampler::system::System::probe();
        let resolver = sparkles_sampler::EventResolver::live()
            .unwrap_or_else(|_| sparkles_sampler::EventResolver::empty("/"));
        let mut descriptors = sparkles_results::throughput::descriptors();
        descriptors.extend(crate::tiers::tier0::descriptors());
        let (perf, perf_plan) = perf::perf_tier(options, &resolver, &system)?;
        descriptors.extend(perf);
        let (syscalls, syscall_plan) = perf::syscall_tier(options, &resolver, &system)?;
        descriptors.extend(syscalls);
        descriptors.extend(sparkles_results::profile::descriptors(
            sparkles_sampler::UNAVAILABLE,
        ));
        descriptors.extend(crate::tiers::alloc::descriptors());
        descriptors.extend(crate::tiers::valgrind::descriptors(options.valgrind));
        Ok(Catalog {
            descriptors,
            plans: Plans {
                perf: Some(Arc::new(perf_plan)),
                syscalls: Some(Arc::new(syscall_plan)),
            },
        })
    }

    /// What the perf_event tiers open.
    pub fn plans(&self) -> &Plans {
        &self.plans
    }

    /// Why metric `id` is not produced on this machine, where it is not.
    pub fn unavailable_reason(&self, id: &str) -> Option<String> {
        self.descriptors()
            .iter()
            .find(|m| m.id == id)
            .and_then(|m| match &m.availability {
                Availability::Unavailable(why) => Some(why.clone()),
                Availability::Available => None,
            })
    }

    /// Every descriptor, in column order.
    pub fn descriptors(&self) -> &[MetricDescriptor] {
        &self.descriptors
    }

    /// The metrics a run selects: the default-visible ones, or those matching any of
    /// `globs` (`--metrics`). A glob that matches nothing is an error naming it.
    pub fn select(&self, globs: Option<&[String]>) -> Result<Selection, Error> {
        self.select_with(globs, &[])
    }

    /// [`Catalog::select`], every metric of the `sources` a flag asked for (`--profile`,
    /// `--perf`, `--syscalls`) added to the defaults or the `--metrics` choice.
    pub fn select_with(
        &self,
        globs: Option<&[String]>,
        sources: &[Source],
    ) -> Result<Selection, Error> {
        let asked = |d: &MetricDescriptor| sources.contains(&d.source);
        let chosen: Vec<MetricDescriptor> = match globs {
            None => self
                .descriptors
                .iter()
                .filter(|d| match d.source {
                    _ if asked(d) => true,
                    Source::Profile | Source::Perf | Source::Syscalls | Source::Valgrind => false,
                    Source::Client => true,
                    Source::Tier0 => d.default_visible,
                    // Where the allocator is installed: not a column of dashes where not.
                    Source::Alloc => d.default_visible && d.availability == Availability::Available,
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
                    if !self.descriptors.iter().any(|d| pattern.matches(&d.id)) {
                        return Err(Error::Usage {
                            flag: "--metrics",
                            message: format!("'{g}' matches no metric (--list-metrics lists them)"),
                        });
                    }
                    patterns.push(pattern);
                }
                self.descriptors
                    .iter()
                    .filter(|d| asked(d) || patterns.iter().any(|p| p.matches(&d.id)))
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

/// One line per reason a metric of `metrics` is unavailable, naming every metric it
/// keeps out (so a machine without a PMU says why once, not once per hardware metric);
/// only metrics `shown` accepts (those a user asked for) are mentioned.
pub fn unavailable_notes(
    metrics: &[MetricDescriptor],
    shown: impl Fn(&MetricDescriptor) -> bool,
) -> Vec<String> {
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for m in metrics.iter().filter(|m| shown(m)) {
        let Availability::Unavailable(why) = &m.availability else {
            continue;
        };
        match by_reason.iter_mut().find(|(w, _)| w == why) {
            Some((_, ids)) => ids.push(&m.id),
            None => by_reason.push((why, vec![&m.id])),
        }
    }
    by_reason
        .into_iter()
        .map(|(why, ids)| {
            let what = if ids.len() == 1 { "metric" } else { "metrics" };
            format!("{what} {} unavailable: {why}", ids.join(", "))
        })
        .collect()
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
        let ids: Vec<&str> = sel.metrics().iter().map(|m| m.id.as_ref()).collect();
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
    fn perf_and_syscall_metrics_are_selected_by_their_perf_names() {
        let catalog = Catalog::probe();
        let ids = |sel: &Selection| -> Vec<String> {
            sel.metrics().iter().map(|m| m.id.to_string()).collect()
        };
        // Off by default: the counting pass opens no perf_event tier unasked.
        let sel = catalog.select(None).unwrap();
        assert!(!sel
            .metrics()
            .iter()
            .any(|m| matches!(m.source, Source::Perf | Source::Syscalls)));
        let sel = catalog.select(Some(&["task-clock".to_string()])).unwrap();
        assert_eq!(ids(&sel), ["task-clock"]);
        assert!(
            sel.needs_counting_pass() || sel.metrics()[0].availability != Availability::Available
        );
        let sel = catalog.select(Some(&["syscalls:*".to_string()])).unwrap();
        let got = ids(&sel);
        assert_eq!(got[0], "syscalls:total");
        assert!(got.contains(&"syscalls:read".to_string()), "{got:?}");
        assert!(sel.metrics().iter().all(|m| m.source == Source::Syscalls));
        // --perf adds every perf metric to the defaults.
        let sel = catalog.select_with(None, &[Source::Perf]).unwrap();
        let got = ids(&sel);
        for id in [
            "cycles",
            "instructions",
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "ipc",
            "branch-miss-rate",
            "llc-miss-rate",
        ] {
            assert!(got.contains(&id.to_string()), "{id} missing from {got:?}");
        }
        assert!(got.contains(&"rusage.minor_faults".to_string()));
        let ipc = sel.metrics().iter().find(|m| m.id == "ipc").unwrap();
        assert_eq!(ipc.class, MetricClass::Diagnostic);
    }

    #[test]
    fn unknown_events_and_syscalls_are_errors_naming_their_flag() {
        let options = CountingOptions {
            events: vec!["cycles".into(), "cyclez".into()],
            ..CountingOptions::default()
        };
        let err = Catalog::probe_with(&options).unwrap_err().to_string();
        assert!(err.contains("--events") && err.contains("cyclez"), "{err}");
        let options = CountingOptions {
            syscalls: vec!["read".into(), "no_such_call".into()],
            syscalls_named: true,
            ..CountingOptions::default()
        };
        match Catalog::probe_with(&options) {
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("--syscalls") && e.contains("no_such_call"),
                    "{e}"
                );
            }
            // Where tracepoints cannot be counted at all, every syscall metric is absent
            // with that reason instead.
            Ok(c) => {
                let m = c
                    .descriptors()
                    .iter()
                    .find(|m| m.id == "syscalls:no_such_call")
                    .unwrap();
                assert!(matches!(m.availability, Availability::Unavailable(_)));
            }
        }
    }

    #[test]
    fn an_absent_pmu_is_reported_once_for_all_its_metrics() {
        let system = sparkles_sampler::system::System {
            kernel: None,
            perf_event_paranoid: 2,
            kptr_restrict: None,
            hypervisor: true,
            hypervisor_vendor: Some("KVM".into()),
            is_root: true,
            cpu_vendor: None,
        };
        let resolver = sparkles_sampler::EventResolver::empty("/nonexistent");
        let attr = resolver.resolve("cycles").unwrap().remove(0);
        // What the kernel answers a guest without a virtual PMU.
        let why = sparkles_sampler::open::explain(
            libc::ENOENT,
            &attr,
            0,
            sparkles_sampler::open::OpenMode::Counting,
            &system,
        );
        let entry = |id: &'static str, source, availability| MetricDescriptor {
            id: id.into(),
            header: id.into(),
            description: "".into(),
            format: MetricFormat::Count,
            class: MetricClass::Quantitative,
            source,
            default_visible: true,
            availability,
        };
        let metrics: Vec<MetricDescriptor> = ["cycles", "instructions", "branches", "ipc"]
            .into_iter()
            .map(|id| entry(id, Source::Perf, Availability::Unavailable(why.clone())))
            .chain([
                entry("task-clock", Source::Perf, Availability::Available),
                entry(
                    "io.syscr",
                    Source::Tier0,
                    Availability::Unavailable("no io".into()),
                ),
            ])
            .collect();
        let notes = unavailable_notes(&metrics, |m| m.source == Source::Perf);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("metrics cycles, instructions, branches, ipc unavailable: ENOENT")
                && notes[0].contains("hypervisor"),
            "{}",
            notes[0]
        );
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
