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
    pub(crate) default_samples: Option<u32>,
    pub(crate) reexec: Reexec,
}

impl Suite {
    /// A new, empty suite; `name` keys its baselines (use the bench target's name).
    pub fn new(name: impl Into<String>) -> Suite {
        Suite {
            name: name.into(),
            cases: Vec::new(),
            default_samples: None,
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
        self.default_samples = Some(samples.max(1));
        self
    }

    /// The suite's name.
    pub fn name(&self) -> &str {
        &self.name
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
        });
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
}

impl Group<'_> {
    /// Registers `PREFIX/name`.
    pub fn case<F, R>(&mut self, name: impl Display, f: F) -> &mut Self
    where
        F: FnOnce(&mut Bencher) -> R + Send + 'static,
        R: CaseOutcome,
    {
        self.suite.case(format!("{}/{name}", self.prefix), f);
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
            self.suite.case(name, move |b| f(b, p));
        }
        self
    }

    /// A nested group, `PREFIX/prefix`.
    pub fn group(&mut self, prefix: impl Display, f: impl FnOnce(&mut Group<'_>)) -> &mut Self {
        let mut inner = Group {
            suite: self.suite,
            prefix: format!("{}/{prefix}", self.prefix),
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
    #[should_panic(expected = "same slug")]
    fn colliding_slugs_are_refused() {
        let mut s = Suite::new("t");
        s.case("a/b", |b| b.iter(|| ()));
        s.case("a b", |b| b.iter(|| ()));
    }
}
