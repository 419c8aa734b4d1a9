//! One reading of a capture for everything made of it: its records decoded once, each
//! sample's stack unwound and named once, for its profiles, the annotation of its
//! hottest functions and its time line alike (the harness's `--profile` makes all three
//! of each case's capture).

use std::path::Path;

use sparkles_perf_data::{Event, PerfData, Record};

use crate::capture::{each_record, Found, Pass, Profiles, Visit};
use crate::stacks::{NamedStack, StackNamer, StackOptions};
use crate::Error;

/// What one reading of a capture makes ([`read_capture`]): each with the options it is
/// read with.
#[derive(Debug, Default)]
pub struct Wants<'o> {
    /// Profiles ([`crate::capture::profiles_of_capture`]'s), one for each options (of one event each, say).
    pub profiles: Vec<&'o StackOptions>,
    /// The annotation of its hottest functions ([`crate::annotate::annotate`]'s).
    #[cfg(feature = "annotate")]
    pub annotate: Option<(&'o StackOptions, &'o crate::annotate::Select)>,
    /// Its samples on their time line, for the viewers
    /// ([`crate::export::Timeline::of_capture`]'s).
    pub timeline: Option<&'o StackOptions>,
}

/// What [`read_capture`] made: each what it was asked for, or why that one could not be
/// made (an event the capture lacks, say); a capture that cannot be read is the reading's
/// error.
#[derive(Debug)]
pub struct Read {
    /// The profiles, in the order asked.
    pub profiles: Vec<Result<Profiles, Error>>,
    /// The annotation, where asked.
    #[cfg(feature = "annotate")]
    pub annotation: Option<Result<crate::annotate::Annotation, Error>>,
    /// The time line, where asked.
    pub timeline: Option<Result<crate::export::Timeline, Error>>,
}

/// Reads a capture once for everything `wants`: its records decoded once, each sample's
/// stack unwound and named once (by one namer, made with `options`: the unwinding mode,
/// symbol paths and allocator frames every reader shares) for the profiles, the
/// annotation and the time line alike. `observe` sees each sample's stack that the first
/// profile takes.
pub fn read_capture(
    path: &Path,
    case: &str,
    options: &StackOptions,
    wants: Wants<'_>,
    mut observe: impl FnMut(&NamedStack),
) -> Result<Read, Error> {
    let data = PerfData::open(path)?;
    let mut namer = StackNamer::for_capture(&data, options);
    let mut all = All {
        passes: wants
            .profiles
            .iter()
            .map(|o| Pass::new(&data, case, o))
            .collect(),
        observe: &mut observe,
        #[cfg(feature = "annotate")]
        annotating: wants
            .annotate
            .map(|(o, _)| crate::annotate::Tallying::new(&data, o)),
        timeline: wants
            .timeline
            .map(|o| crate::export::TimelineBuilder::new(&data, case, o)),
    };
    each_record(&data, &mut namer, &mut all)?;
    let profiles = all
        .passes
        .into_iter()
        .map(|p| p.map(|p| p.finish(&mut namer, case)))
        .collect();
    #[cfg(feature = "annotate")]
    let annotation = all
        .annotating
        .zip(wants.annotate)
        .map(|(a, (_, select))| a.map(|a| a.finish(&mut namer, select)));
    Ok(Read {
        profiles,
        #[cfg(feature = "annotate")]
        annotation,
        timeline: all
            .timeline
            .map(|t| t.map(crate::export::TimelineBuilder::finish)),
    })
}

/// Every reader of one reading; one that could not be made (an event the capture lacks)
/// keeps why, and reads nothing.
struct All<'a, 'o, F> {
    passes: Vec<Result<Pass<'a>, Error>>,
    /// Shown each sample's stack that the first profile takes.
    observe: &'o mut F,
    #[cfg(feature = "annotate")]
    annotating: Option<Result<crate::annotate::Tallying, Error>>,
    timeline: Option<Result<crate::export::TimelineBuilder, Error>>,
}

impl<F: FnMut(&NamedStack)> Visit for All<'_, '_, F> {
    fn before_observed(&mut self, _record: &Record<'_>, _namer: &mut StackNamer) {
        #[cfg(feature = "annotate")]
        if let Some(Ok(a)) = self.annotating.as_mut() {
            a.before_observed(_record, _namer);
        }
    }

    fn record(&mut self, e: &Event<'_>, namer: &mut StackNamer, found: &mut Found) {
        for (i, pass) in self.passes.iter_mut().enumerate() {
            if let Ok(pass) = pass {
                if i == 0 {
                    pass.record(e, namer, found, self.observe);
                } else {
                    pass.record(e, namer, found, &mut |_| {});
                }
            }
        }
        #[cfg(feature = "annotate")]
        if let Some(Ok(a)) = self.annotating.as_mut() {
            a.record(e, namer, found);
        }
        if let Some(Ok(t)) = self.timeline.as_mut() {
            t.record(e, namer, found);
        }
    }
}
