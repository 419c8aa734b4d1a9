//! Registering cases: names, groups, parameters, and the slug every per-case folder uses.

use std::fmt::{Debug, Display};

use crate::bencher::Bencher;
use std::ffi::OsString;

pub use sparkles_results::row::slug;

/// How the parent reruns the bench executable: the arguments after the program name,
/// and variables added to the environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reexec {
    pub args: Option<Vec<OsString>>,
    pub envs: Vec<(OsString, OsString)>,
}

/// Why a case failed: the message it reports (its error's, or its panic's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CaseFailure(pub String);

/// What a case function may return: nothing, or a `Result` whose `Err` fails the case.
pub trait CaseOutcome {
    /// `Err` with what a failed case reports.
    fn into_outcome(self) -> Result<(), CaseFailure>;
}

impl CaseOutcome for () {
    fn into_outcome(self) -> Result<(), CaseFailure> {
        Ok(())
    }
}

impl<E: Display> CaseOutcome for Result<(), E> {
    fn into_outcome(self) -> Result<(), CaseFailure> {
        self.map_err(|e| CaseFailure(e.to_string()))
    }
}

pub(crate) type CaseFn = Box<dyn FnOnce(&mut Bencher) -> Result<(), CaseFailure> + Send + 'static>;

/// One registered case.
pub(crate) struct Case {
    pub name: String,
    pub body: CaseFn,
    /// Its group's settings, its own over them.
    pub settings: Settings,
    /// Where the case is its group's reference ([`Group::reference`]): the same body
    /// again, run on a thread of its own beside it in the timing pass as the null its
    /// group's cases are held to.
    pub twin: Option<CaseFn>,
    /// A thread sweep's case ([`Suite::case_threads`]): the threads its body runs on at
    /// once.
    pub threads: Option<usize>,
}

/// Timing samples a case takes where nothing sets them.
pub(crate) const DEFAULT_SAMPLES: u32 = 32;
/// The shortest timing sample where nothing sets it.
pub(crate) const DEFAULT_SAMPLE_TIME: std::time::Duration = std::time::Duration::from_millis(5);
/// The profile pass's duration where nothing sets it.
pub(crate) const DEFAULT_PROFILE_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// A case's settings once the command line's, its own, its group's, the suite's and the
/// harness's defaults are weighed, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub samples: u32,
    pub sample_time: std::time::Duration,
    pub warm_up: std::time::Duration,
    pub profile_time: std::time::Duration,
}

/// How a group's or a case's samples are taken, where they differ from the suite's:
/// each setting left `None` is its group's, then the suite's ([`Suite::defaults`]), then
/// the harness's; the command line's flag wins over all of them (`--samples`,
/// `--bench-min-time`, `--warm-up`, `--profile-time`). criterion's `sample_size`,
/// `measurement_time`/`warm_up_time` per group, divan's `sample_count`/`min_time` per
/// bench.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// Timing samples.
    pub samples: Option<u32>,
    /// The shortest a timing sample may be (iterations double until one takes this long).
    pub sample_time: Option<std::time::Duration>,
    /// How long the body runs, untimed, before its iterations are calibrated.
    pub warm_up: Option<std::time::Duration>,
    /// How long the body runs under the sampler with `--profile`.
    pub profile_time: Option<std::time::Duration>,
}

impl Settings {
    /// No setting of its own.
    pub fn new() -> Settings {
        Settings::default()
    }

    /// Timing samples (at least one).
    pub fn samples(mut self, n: u32) -> Settings {
        self.samples = Some(n.max(1));
        self
    }

    /// The shortest timing sample.
    pub fn sample_time(mut self, d: std::time::Duration) -> Settings {
        self.sample_time = Some(d);
        self
    }

    /// The untimed run before calibration.
    pub fn warm_up(mut self, d: std::time::Duration) -> Settings {
        self.warm_up = Some(d);
        self
    }

    /// The profile pass's duration.
    pub fn profile_time(mut self, d: std::time::Duration) -> Settings {
        self.profile_time = Some(d);
        self
    }

    /// These settings where set, `under`'s where not.
    pub fn over(self, under: Settings) -> Settings {
        Settings {
            samples: self.samples.or(under.samples),
            sample_time: self.sample_time.or(under.sample_time),
            warm_up: self.warm_up.or(under.warm_up),
            profile_time: self.profile_time.or(under.profile_time),
        }
    }

    /// Each setting, the harness's default where none is set.
    pub(crate) fn resolve(self) -> Resolved {
        Resolved {
            samples: self.samples.unwrap_or(DEFAULT_SAMPLES),
            sample_time: self.sample_time.unwrap_or(DEFAULT_SAMPLE_TIME),
            warm_up: self.warm_up.unwrap_or_default(),
            profile_time: self.profile_time.unwrap_or(DEFAULT_PROFILE_TIME),
        }
    }

    /// The settings given, as `--list` shows them (`10 samples, sample time 20ms`); `None`
    /// where none is.
    pub fn describe(&self) -> Option<String> {
        let d = |d: std::time::Duration| sparkles_results::units::format_ns(d.as_nanos() as f64);
        let parts: Vec<String> = [
            self.samples.map(|n| format!("{n} samples")),
            self.sample_time.map(|t| format!("sample time {}", d(t))),
            self.warm_up.map(|t| format!("warm-up {}", d(t))),
            self.profile_time.map(|t| format!("profile time {}", d(t))),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

impl Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case").field("name", &self.name).finish()
    }
}

/// A benchmark suite: the cases of one bench target.
#[derive(Debug)]
pub struct Suite {
    name: String,
    pub(crate) cases: Vec<Case>,
    /// Every case's settings where neither its group nor it says otherwise.
    pub(crate) defaults: Settings,
    /// Each group's reference case ([`Group::reference`]): the group's prefix, and the
    /// reference's full name.
    pub(crate) references: Vec<(String, String)>,
    pub(crate) reexec: Reexec,
}

impl Suite {
    /// A new, empty suite; `name` keys its baselines (use the bench target's name).
    pub fn new(name: impl Into<String>) -> Suite {
        Suite {
            name: name.into(),
            cases: Vec::new(),
            defaults: Settings::default(),
            references: Vec::new(),
            reexec: Reexec::default(),
        }
    }

    /// How `--instructions` reruns this executable to count a case under valgrind: with
    /// `args` after the program name (by default this process's own) and `envs` added to
    /// its environment. For suites run from a test function: the arguments that select
    /// the test (`["my_test", "--exact", "--nocapture"]`) and whatever the test needs to
    /// build the same suite again; the rerun's [`crate::run`] counts the case and exits.
    pub fn reexec_with<A, K, V>(
        &mut self,
        args: impl IntoIterator<Item = A>,
        envs: impl IntoIterator<Item = (K, V)>,
    ) -> &mut Self
    where
        A: Into<std::ffi::OsString>,
        K: Into<std::ffi::OsString>,
        V: Into<std::ffi::OsString>,
    {
        self.reexec = Reexec {
            args: Some(args.into_iter().map(Into::into).collect()),
            envs: envs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        };
        self
    }

    /// Timing samples per case when `--samples` is not given (32 otherwise): for suites
    /// whose cases take seconds each.
    pub fn default_samples(&mut self, samples: u32) -> &mut Self {
        self.defaults.samples = Some(samples.max(1));
        self
    }

    /// Every case's settings where its group or it sets none: `settings` over the ones
    /// set before ([`Settings`]).
    pub fn defaults(&mut self, settings: Settings) -> &mut Self {
        self.defaults = settings.over(self.defaults);
        self
    }

    /// The suite's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Each of `names`' reference: the index in `names` of the case its group names with
    /// [`Group::reference`] (the innermost such group's, where groups nest); `None` for a
    /// reference itself, for a case of no group with one, and where the reference is not
    /// among `names` (filtered out).
    pub(crate) fn references_among(
        references: &[(String, String)],
        names: &[&str],
    ) -> Vec<Option<usize>> {
        names
            .iter()
            .map(|name| {
                let (_, reference) = references
                    .iter()
                    .filter(|(prefix, _)| {
                        name.strip_prefix(prefix.as_str())
                            .is_some_and(|rest| rest.starts_with('/'))
                    })
                    .max_by_key(|(prefix, _)| prefix.len())?;
                if reference == name {
                    return None;
                }
                names.iter().position(|n| n == reference)
            })
            .collect()
    }

    /// The names of the registered cases, in registration order.
    pub fn case_names(&self) -> impl Iterator<Item = &str> {
        self.cases.iter().map(|c| c.name.as_str())
    }

    /// Registers a case. `f` runs on the case's own thread: it does its setup, then calls
    /// one `iter` method of the [`Bencher`] exactly once.
    ///
    /// # Panics
    /// When a case of the same name, or of the same slug, is already registered: the two
    /// would share every per-case file.
    pub fn case<F, R>(&mut self, name: impl Into<String>, f: F) -> &mut Self
    where
        F: FnOnce(&mut Bencher) -> R + Send + 'static,
        R: CaseOutcome,
    {
        self.case_with(name, Settings::default(), f)
    }

    /// Registers a case with settings of its own ([`Settings`]: over its group's and the
    /// suite's, under the command line's).
    ///
    /// # Panics
    /// As [`Suite::case`].
    pub fn case_with<F, R>(
        &mut self,
        name: impl Into<String>,
        settings: Settings,
        f: F,
    ) -> &mut Self
    where
        F: FnOnce(&mut Bencher) -> R + Send + 'static,
        R: CaseOutcome,
    {
        let name = name.into();
        let s = slug(&name);
        if let Some(other) = self.cases.iter().find(|c| slug(&c.name) == s) {
            panic!(
                "sparkles: case '{name}' has the same slug '{s}' as case '{}'",
                other.name
            );
        }
        self.cases.push(Case {
            name,
            body: Box::new(move |b| f(b).into_outcome()),
            settings,
            twin: None,
            threads: None,
        });
        self
    }

    /// Registers a thread sweep: for each count of `threads` (0 = one per CPU, as
    /// `std::thread::available_parallelism` says; a count given twice is one), a case
    /// `name/threads=N` whose body runs on N threads at once, released together each
    /// sample ([`Bencher::iter_threads`], which `f` calls). `f` runs once per count, on
    /// the case's thread: its setup is the threads' shared state (the lock they contend
    /// for). Each row carries `"threads": N`, its time is per iteration per thread and
    /// its rate counts the calls of all threads; the console and the run report show
    /// how the throughput scales.
    ///
    /// # Panics
    /// As [`Suite::case`], and for an empty list.
    pub fn case_threads<F, R>(
        &mut self,
        name: impl Into<String>,
        threads: impl IntoIterator<Item = usize>,
        f: F,
    ) -> &mut Self
    where
        F: Fn(&mut Bencher) -> R + Send + Sync + 'static,
        R: CaseOutcome,
    {
        self.case_threads_with(name.into(), Settings::default(), threads, f)
    }

    fn case_threads_with<F, R>(
        &mut self,
        name: String,
        settings: Settings,
        threads: impl IntoIterator<Item = usize>,
        f: F,
    ) -> &mut Self
    where
        F: Fn(&mut Bencher) -> R + Send + Sync + 'static,
        R: CaseOutcome,
    {
        let counts = sweep_counts(threads);
        assert!(
            !counts.is_empty(),
            "sparkles: thread sweep '{name}' names no thread count"
        );
        let f = std::sync::Arc::new(f);
        for n in counts {
            let f = std::sync::Arc::clone(&f);
            self.case_with(format!("{name}/threads={n}"), settings, move |b| (*f)(b));
            if let Some(case) = self.cases.last_mut() {
                case.threads = Some(n);
            }
        }
        self
    }

    /// Registers cases under a common prefix: `group("json/parse", |g| g.case("twitter", …))`
    /// names the case `json/parse/twitter`.
    pub fn group(
        &mut self,
        prefix: impl Into<String>,
        f: impl FnOnce(&mut Group<'_>),
    ) -> &mut Self {
        let mut group = Group {
            suite: self,
            prefix: prefix.into(),
            settings: Settings::default(),
        };
        f(&mut group);
        self
    }
}

/// Cases that share a name prefix.
#[derive(Debug)]
pub struct Group<'s> {
    suite: &'s mut Suite,
    prefix: String,
    /// The settings of the cases registered from here on (a nested group's start as its
    /// parent's).
    settings: Settings,
}

/// A sweep's thread counts in the order given, 0 as one per CPU, each once.
fn sweep_counts(threads: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut counts: Vec<usize> = Vec::new();
    for n in threads {
        let n = if n == 0 { cpus } else { n };
        if !counts.contains(&n) {
            counts.push(n);
        }
    }
    counts
}

impl Group<'_> {
    /// Registers a thread sweep `PREFIX/name/threads=N` ([`Suite::case_threads`]), with
    /// the group's settings.
    pub fn case_threads<F, R>(
        &mut self,
        name: impl Display,
        threads: impl IntoIterator<Item = usize>,
        f: F,
    ) -> &mut Self
    where
        F: Fn(&mut Bencher) -> R + Send + Sync + 'static,
        R: CaseOutcome,
    {
        self.suite
            .case_threads_with(format!("{}/{name}", self.prefix), self.settings, threads, f);
        self
    }

    /// Registers `PREFIX/name`.
    pub fn case<F, R>(&mut self, name: impl Display, f: F) -> &mut Self
    where
        F: FnOnce(&mut Bencher) -> R + Send + 'static,
        R: CaseOutcome,
    {
        self.case_with(name, Settings::default(), f)
    }

    /// Registers `PREFIX/name` with settings of its own, over the group's.
    pub fn case_with<F, R>(&mut self, name: impl Display, settings: Settings, f: F) -> &mut Self
    where
        F: FnOnce(&mut Bencher) -> R + Send + 'static,
        R: CaseOutcome,
    {
        let settings = settings.over(self.settings);
        self.suite
            .case_with(format!("{}/{name}", self.prefix), settings, f);
        self
    }

    /// Registers `PREFIX/name` as the group's reference: every other case of the group
    /// (a nested group's too, unless it names its own) is measured against it in the same
    /// rounds of the timing pass, and its row gets the ratio of its time to the
    /// reference's, with a 95% interval and a verdict (`reference` in its `--bench-json`
    /// row). "Is my new hasher faster than the old one", in one build.
    ///
    /// `f` is called twice, each call on a thread of its own: the reference, and its
    /// twin, whose time against the reference's is the null (what two threads running
    /// the very same code read apart here). The twin has no row of its own. Needs the
    /// round-robin sample order (the default).
    ///
    /// # Panics
    /// When the group already named a reference, and as [`Suite::case`].
    pub fn reference<F, R>(&mut self, name: impl Display, f: F) -> &mut Self
    where
        F: Fn(&mut Bencher) -> R + Send + Sync + 'static,
        R: CaseOutcome,
    {
        let full = format!("{}/{name}", self.prefix);
        if let Some((_, other)) = self
            .suite
            .references
            .iter()
            .find(|(p, _)| *p == self.prefix)
        {
            panic!(
                "sparkles: group '{}' names two references, '{other}' and '{full}'",
                self.prefix
            );
        }
        let f = std::sync::Arc::new(f);
        let twin = std::sync::Arc::clone(&f);
        self.suite
            .case_with(full.clone(), self.settings, move |b| (*f)(b));
        if let Some(case) = self.suite.cases.last_mut() {
            case.twin = Some(Box::new(move |b| (*twin)(b).into_outcome()));
        }
        self.suite.references.push((self.prefix.clone(), full));
        self
    }

    /// Timing samples of the group's cases registered after this call (criterion's
    /// `sample_size`).
    pub fn samples(&mut self, n: u32) -> &mut Self {
        self.settings = self.settings.samples(n);
        self
    }

    /// The shortest timing sample of the group's cases registered after this call.
    pub fn sample_time(&mut self, d: std::time::Duration) -> &mut Self {
        self.settings = self.settings.sample_time(d);
        self
    }

    /// The untimed run before calibration, for the group's cases registered after this
    /// call (criterion's `warm_up_time`).
    pub fn warm_up(&mut self, d: std::time::Duration) -> &mut Self {
        self.settings = self.settings.warm_up(d);
        self
    }

    /// The profile pass's duration, for the group's cases registered after this call.
    pub fn profile_time(&mut self, d: std::time::Duration) -> &mut Self {
        self.settings = self.settings.profile_time(d);
        self
    }

    /// Registers one case per parameter, `PREFIX/param`, each given its parameter.
    pub fn cases<P, F, R>(&mut self, params: impl IntoIterator<Item = P>, f: F) -> &mut Self
    where
        P: Display + Send + 'static,
        F: Fn(&mut Bencher, P) -> R + Clone + Send + 'static,
        R: CaseOutcome,
    {
        for p in params {
            let f = f.clone();
            let name = format!("{}/{p}", self.prefix);
            self.suite.case_with(name, self.settings, move |b| f(b, p));
        }
        self
    }

    /// A nested group, `PREFIX/prefix`.
    pub fn group(&mut self, prefix: impl Display, f: impl FnOnce(&mut Group<'_>)) -> &mut Self {
        let mut inner = Group {
            suite: self.suite,
            prefix: format!("{}/{prefix}", self.prefix),
            settings: self.settings,
        };
        f(&mut inner);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_parameters_build_names() {
        let mut s = Suite::new("t");
        s.group("json", |g| {
            g.group("parse", |g| {
                g.case("twitter", |b| b.iter(|| 1));
            });
            g.cases([1, 10], |b, n: u32| b.iter(move || n));
        });
        let names: Vec<_> = s.case_names().collect();
        assert_eq!(names, ["json/parse/twitter", "json/1", "json/10"]);
    }

    #[test]
    fn settings_weigh_case_over_group_over_suite_under_the_flags() {
        use std::time::Duration;
        let ms = Duration::from_millis;
        let mut s = Suite::new("t");
        s.defaults(Settings::new().samples(20).profile_time(ms(900)));
        s.group("g", |g| {
            g.samples(10).sample_time(ms(2)).warm_up(ms(50));
            g.case_with("own", Settings::new().samples(3).sample_time(ms(1)), |b| {
                b.iter(|| ())
            });
            g.group("inner", |g| {
                g.case("nested", |b| b.iter(|| ()));
            });
        });
        s.case("plain", |b| b.iter(|| ()));
        let weigh =
            |flags: Settings, i: usize| flags.over(s.cases[i].settings).over(s.defaults).resolve();
        let none = Settings::new();
        assert_eq!(
            weigh(none, 0),
            Resolved {
                samples: 3,
                sample_time: ms(1),
                warm_up: ms(50),
                profile_time: ms(900)
            }
        );
        assert_eq!(
            weigh(none, 1),
            Resolved {
                samples: 10,
                sample_time: ms(2),
                warm_up: ms(50),
                profile_time: ms(900)
            }
        );
        assert_eq!(
            weigh(none, 2),
            Resolved {
                samples: 20,
                sample_time: DEFAULT_SAMPLE_TIME,
                warm_up: Duration::ZERO,
                profile_time: ms(900)
            }
        );
        let flags = Settings::new()
            .samples(4)
            .sample_time(ms(7))
            .warm_up(ms(0))
            .profile_time(ms(100));
        for i in 0..3 {
            assert_eq!(
                weigh(flags, i),
                Resolved {
                    samples: 4,
                    sample_time: ms(7),
                    warm_up: ms(0),
                    profile_time: ms(100)
                }
            );
        }
        assert_eq!(
            s.cases[0].settings.describe().unwrap(),
            "3 samples, sample time 1.00 ms, warm-up 50.0 ms"
        );
        assert_eq!(s.cases[2].settings.describe(), None);
    }

    #[test]
    #[should_panic(expected = "same slug")]
    fn colliding_slugs_are_refused() {
        let mut s = Suite::new("t");
        s.case("a/b", |b| b.iter(|| ()));
        s.case("a b", |b| b.iter(|| ()));
    }
}
