//! The harness's command line: what `cargo bench -- …`, `cargo test` and nextest pass to a
//! bench binary.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

pub use sparkles_results::export::BenchFormat;
pub use sparkles_results::profile::ViewerFormat;

/// What `--profile=KIND` profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileKind {
    /// CPU sampling (`--profile`).
    Cpu,
    /// CPU sampling and where the case's threads wait.
    Wall,
    /// Memory: precise memory events, else first-touch placement.
    Mem,
    /// Where the bytes are allocated: the counting allocator's samples.
    Alloc,
    /// callgrind's exact instruction counts per function, under valgrind.
    Instructions,
}

/// The order the timing pass takes its samples in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum SampleOrder {
    /// One sample of every case, then the next round: each case's series spans the run,
    /// so drift of the machine spreads over all cases instead of landing on one.
    #[default]
    RoundRobin,
    /// Every sample of a case before the next case starts.
    Blocked,
}

/// Output format of `--list` (libtest's spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// Human-readable listing.
    Pretty,
    /// `name: test` lines, as nextest reads them.
    Terse,
    /// Accepted for libtest compatibility; listed like pretty.
    Json,
}

/// Flags of a sparkles bench binary.
#[derive(Debug, Clone, Parser)]
#[command(
    about = "A sparkles benchmark suite. Without --bench each case runs once as a test.",
    disable_version_flag = true
)]
pub struct HarnessArgs {
    /// Run only cases whose name contains one of these substrings.
    pub filters: Vec<String>,

    /// Measure (cargo bench passes this); without it each case runs once as a smoke test.
    #[arg(long)]
    pub bench: bool,

    /// List the cases instead of running them.
    #[arg(long)]
    pub list: bool,

    /// Serve a coordinator (`sparkles compare`): requests as JSON lines on stdin, one JSON
    /// line answered on stdout each (docs/schemas/serve.md); nothing runs unasked.
    #[arg(long, conflicts_with_all = ["list", "list_metrics", "capabilities", "baseline", "save_baseline", "bench_json"])]
    pub serve: bool,

    /// Listing format for --list (libtest's spelling).
    #[arg(long, value_enum)]
    pub format: Option<ListFormat>,

    /// Filters match whole names exactly.
    #[arg(long)]
    pub exact: bool,

    /// Skip cases whose name contains this substring (repeatable).
    #[arg(long)]
    pub skip: Vec<String>,

    /// Run one share of the cases, as nextest spells it: `count:K/N` takes every Nth case
    /// the filters leave, from the Kth (suite order); `hash:K/N` the cases whose name
    /// hashes to K of N (a case keeps its share as cases are added). N machines, each
    /// given one K, run the whole suite between them; each share's rows, baseline and
    /// history are complete on their own.
    #[arg(long, value_name = "count:K/N|hash:K/N", value_parser = Partition::parse)]
    pub partition: Option<Partition>,

    /// Run only ignored cases (sparkles has none, so this runs nothing).
    #[arg(long)]
    pub ignored: bool,

    /// Run ignored cases too.
    #[arg(long)]
    pub include_ignored: bool,

    /// Accepted for libtest compatibility: output is never captured.
    #[arg(long)]
    pub nocapture: bool,

    /// Accepted for libtest compatibility: output is never captured.
    #[arg(long)]
    pub show_output: bool,

    /// Accepted for libtest compatibility: cases always run one at a time, so timings
    /// do not contend for cores.
    #[arg(long, value_name = "N")]
    pub test_threads: Option<usize>,

    /// Less output: no per-case lines in smoke mode.
    #[arg(short, long)]
    pub quiet: bool,

    /// Colour: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub color: ColorChoice,

    /// Accepted for libtest compatibility (unstable options).
    #[arg(short = 'Z', value_name = "OPTION")]
    pub unstable: Vec<String>,

    /// Accepted for libtest compatibility.
    #[arg(long)]
    pub report_time: bool,

    /// Minimum duration of one timing sample; iterations per sample double until one
    /// sample takes at least this long (e.g. 5ms, 200us, 1s). Default 5ms, or the case's,
    /// its group's or the suite's setting; given, it wins over them.
    #[arg(long, value_name = "DURATION", value_parser = sparkles_results::units::parse_duration)]
    pub bench_min_time: Option<Duration>,

    /// Timing samples per case (default 32, or the case's, its group's or the suite's
    /// setting; given, it wins over them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: Option<u32>,

    /// How long each case's body runs, untimed, before its iterations are calibrated
    /// (default none, or the case's, its group's or the suite's setting).
    #[arg(long, value_name = "DURATION", value_parser = sparkles_results::units::parse_duration)]
    pub warm_up: Option<Duration>,

    /// Order of the timing samples across cases.
    #[arg(long, value_enum, default_value_t = SampleOrder::RoundRobin)]
    pub sample_order: SampleOrder,

    /// Most iterations of the counting pass (it runs the calibrated per-sample count,
    /// capped here).
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub count_iterations: u64,

    /// Brackets of the counting pass: each counter is read over this many separate runs
    /// of the case, so that every metric has a median and an interval, as timing does
    /// (each run is a share of the pass's iterations).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub count_brackets: u32,

    /// Write one JSON object per case to PATH (`-` for stdout; relative to the current
    /// directory, which under cargo bench is the package's folder).
    #[arg(long, value_name = "PATH")]
    pub bench_json: Option<String>,

    /// Write the results in a format CI services read: `bmf` (Bencher), `github-action`
    /// (github-action-benchmark's customSmallerIsBetter), `libtest` (bench: N ns/iter
    /// lines); to --bench-out, else standard output.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub bench_format: Option<BenchFormat>,

    /// Where --bench-format writes (whole, or not at all); default standard output.
    #[arg(long, value_name = "PATH", requires = "bench_format")]
    pub bench_out: Option<PathBuf>,

    /// Do not append this run to the suite's history (`target/sparkles/history/SUITE.jsonl`,
    /// what `sparkles history` reads).
    #[arg(long)]
    pub no_history: bool,

    /// Keep the history here instead of `history/` in the output folder.
    #[arg(long, value_name = "DIR")]
    pub history_dir: Option<PathBuf>,

    /// Report only metrics whose id matches one of these globs (comma-separated); opens
    /// only the tiers they need.
    #[arg(long, value_name = "GLOB[,GLOB...]", value_delimiter = ',')]
    pub metrics: Option<Vec<String>>,

    /// Count hardware and software events in the counting pass (a perf_event counter
    /// group; `--events` says which), and report them per iteration.
    #[arg(long)]
    pub perf: bool,

    /// Events --perf counts (any spelling `sparkles event` takes), comma-separated;
    /// default: cycles, instructions, branches, branch-misses, cache-references,
    /// cache-misses, page-faults, task-clock, context-switches, cpu-migrations.
    #[arg(long, value_name = "EVENT[,EVENT...]", value_delimiter = ',')]
    pub events: Option<Vec<String>>,

    /// Never scale: where the events do not fit on the PMU as one group that runs all the
    /// time, leave the ones that do not out (and say which) instead of letting groups
    /// take turns and reporting estimates.
    #[arg(long)]
    pub perf_exact: bool,

    /// Threads the counters cover: `all` (every thread of the process, and those started
    /// during the pass) or `self` (the case's own thread only; the one shape in which
    /// hardware counters are read with rdpmc instead of read(2)).
    #[arg(long, value_name = "WHICH", default_value = "all", value_parser = ["all", "self"])]
    pub perf_threads: String,

    /// Count these syscalls (names as in tracefs's syscalls:sys_enter_NAME) with
    /// tracepoints, plus the total, as metrics syscalls:NAME and syscalls:total.
    /// `--metrics 'syscalls:*'` alone counts the most common ones.
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    pub syscalls: Option<Vec<String>>,

    /// Count each case's instructions exactly, and its simulated cache and branch misses,
    /// under valgrind's callgrind in a child process after the timing pass (metrics
    /// valgrind.*): the count where no PMU gives one, identical run to run.
    #[arg(long)]
    pub instructions: bool,

    /// Most seconds one case's valgrind pass may take (valgrind's start and the case's
    /// setup included); past it the case's valgrind metrics are absent, with the reason.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub valgrind_timeout: u64,

    /// Children under valgrind counting at once, each one case (valgrind runs a process's
    /// threads one at a time, so one child uses one CPU): 0, the default, is one per CPU.
    /// The counts are the same whatever it is.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub valgrind_jobs: usize,

    /// What callgrind simulates beside the instruction count: `cache` (the L1 and
    /// last-level misses, and the estimated cycles), `branch` (the mispredictions), both
    /// (the default) or `none`. Each simulation slows the count: with none, about half the
    /// time; the instruction counts are the same whatever it is.
    #[arg(long, value_name = "cache,branch|none", default_value = "cache,branch", value_parser = crate::tiers::valgrind::Simulation::parse)]
    pub valgrind_sim: crate::tiers::valgrind::Simulation,

    /// Set from `--profile=instructions`, or `--instructions` with `--profile`: each case's
    /// instruction profile from its valgrind pass.
    #[arg(skip)]
    pub instruction_profile: bool,

    /// List every metric with its class, source and availability, then exit.
    #[arg(long)]
    pub list_metrics: bool,

    /// Probe what perf_event can do on this machine (the seven capabilities), then exit.
    #[arg(long)]
    pub capabilities: bool,

    /// Store this run as baseline NAME (under target/sparkles/baselines/NAME/).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,

    /// Compare every ok case against baseline NAME, or against a baseline file or folder.
    /// Where the baseline kept its bench executable (`--save-baseline` does), both run
    /// again side by side after this run's timing, each in `--paired-processes` fresh
    /// processes, rounds interleaved (`paired`); else this run's samples against the saved
    /// ones, a verdict needing a change beyond the case's between-run noise (`unpaired`).
    #[arg(long, value_name = "NAME|PATH")]
    pub baseline: Option<String>,

    /// With --baseline: compare against the saved rows even where the saved executable
    /// could run side by side.
    #[arg(long, requires = "baseline")]
    pub baseline_unpaired: bool,

    /// With --baseline, side by side: the measurement time per case (rounds until the
    /// cases' times are spent: a budget, never a look at the results).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = sparkles_results::units::parse_duration)]
    pub paired_time: Duration,

    /// With --baseline, side by side: processes each side runs in (2 to 16).
    #[arg(long, value_name = "N", default_value_t = sparkles_results::paired::PROCESSES_PER_SIDE, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=16))]
    pub paired_processes: usize,

    /// With --baseline, side by side: changes smaller than this many percent are inside
    /// the noise whatever the intervals say (two builds of the same code differ by their
    /// layout alone). Default: the case's floor learned from its earlier paired runs in
    /// the history (the median of their nulls), at least 0.5%.
    #[arg(long, value_name = "PCT", requires = "baseline", value_parser = percent)]
    pub noise_threshold: Option<f64>,

    /// With --baseline: exit with status 1 when a case's verdict is a regression
    /// (`regression`) or any change (`change`), after every file is written: a CI job's
    /// gate.
    #[arg(long, value_name = "WHAT", requires = "baseline")]
    pub fail_on: Option<sparkles_results::comparison::FailOn>,

    /// Profile each case after timing and counting: its body re-runs under the sampler
    /// and the capture goes to target/sparkles/profile/<slug>/capture.perf.data.
    /// `--profile=wall` also captures where the case's threads wait (context switches,
    /// and `sched:sched_switch` stacks where allowed): profile.json's `offcpu` section,
    /// flamegraph-wall.svg, the hot-function diff on wall time. `--profile=mem` samples
    /// memory accesses. `--profile=instructions` samples nothing: the `--instructions`
    /// pass's callgrind costs per function and line become profile-instructions.json,
    /// flamegraph-instructions.svg and, against a baseline saved with it, the exact
    /// diff-instructions.json (`--instructions --profile` makes both profiles).
    /// Use the `=` form: a bare word after --profile is a case filter.
    #[arg(long, value_name = "KIND", num_args = 0..=1, require_equals = true, default_missing_value = "cpu")]
    pub profile: Option<ProfileKind>,

    /// Event the profile samples (any spelling `sparkles event` takes); default: cycles
    /// at the highest precise level, else cpu-clock, with the reason.
    #[arg(long, value_name = "NAME")]
    pub profile_event: Option<String>,

    /// Profile samples per second.
    #[arg(long, value_name = "HZ", default_value_t = 4000)]
    pub profile_freq: u64,

    /// Events between profile samples (instead of --profile-freq).
    #[arg(long, value_name = "N")]
    pub profile_period: Option<u64>,

    /// How long each case's body runs under the sampler: a duration (`2s`, `500ms`) or a
    /// number of seconds, as criterion's `--profile-time` takes it. Default 2s, or the
    /// case's, its group's or the suite's setting; given, it wins over them.
    #[arg(long, value_name = "DURATION", value_parser = sparkles_results::units::parse_seconds)]
    pub profile_time: Option<Duration>,

    /// Bytes of user stack copied per sample (for DWARF unwinding); 0 for frame-pointer
    /// callchains only.
    #[arg(long, value_name = "BYTES", default_value_t = sparkles_sampler::session::DEFAULT_STACK_BYTES)]
    pub profile_stack: u32,

    /// With `--profile=alloc`: mean bytes allocated between samples (a random,
    /// exponentially distributed interval, as tcmalloc samples): `512KiB`, `64k`, `1M` or
    /// a number of bytes. Smaller means more samples and more cost.
    #[arg(long, value_name = "BYTES", default_value = "512KiB", value_parser = parse_bytes)]
    pub profile_alloc_mean: u64,

    /// Write no run report (`target/sparkles/report/index.html`, one HTML page with every
    /// case's timing, verdict, explanation and profile).
    #[arg(long)]
    pub no_report: bool,

    /// Keep the harness's frames in profile flamegraphs and folded stacks: by default the
    /// frames around a case's body (thread start, the bencher, the timing loop) are folded
    /// into one root frame named after the case.
    #[arg(long)]
    pub profile_full_stacks: bool,

    /// Also write each case's profile for interactive viewers, beside its capture: a
    /// comma list of `speedscope` (profile.speedscope.json, for speedscope) and `firefox`
    /// (profile.firefox.json.gz, for the Firefox Profiler).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    pub profile_format: Vec<ViewerFormat>,

    /// Store profile captures as they are: by default their records are zstd-compressed,
    /// as `perf record -z` stores them (perf 6.1 and `sparkles report` read both): by
    /// libzstd where the harness is built with its `zstd` feature, else by ruzstd.
    #[arg(long)]
    pub profile_no_compress: bool,

    /// How profile stacks are unwound: `dwarf`, `fp` (frame pointers; for builds with
    /// `-C force-frame-pointers=yes`) or `auto` (DWARF where a sample has a stack copy).
    #[arg(long, value_name = "MODE", default_value = "auto",
          value_parser = clap::builder::PossibleValuesParser::new(["dwarf", "fp", "auto"]))]
    pub profile_unwind: String,

    /// Folder for every file the run writes (default: target/sparkles/ of the target
    /// folder the bench binary was built into).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// When to colour the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl HarnessArgs {
    /// The settings this command line gives (`--samples`, `--bench-min-time`,
    /// `--warm-up`, `--profile-time`): they win over every case's, group's and suite's.
    pub fn settings(&self) -> crate::suite::Settings {
        crate::suite::Settings {
            samples: self.samples,
            sample_time: self.bench_min_time,
            warm_up: self.warm_up,
            profile_time: self.profile_time,
        }
    }

    /// The `--profile-*` flags given on this command line (set away from their
    /// defaults): without `--profile` they do nothing in a run, which is said.
    pub fn profile_flags_given(&self) -> Vec<&'static str> {
        let defaults = HarnessArgs::default_values();
        [
            ("--profile-event", self.profile_event.is_some()),
            ("--profile-freq", self.profile_freq != defaults.profile_freq),
            ("--profile-period", self.profile_period.is_some()),
            ("--profile-time", self.profile_time.is_some()),
            (
                "--profile-stack",
                self.profile_stack != defaults.profile_stack,
            ),
            (
                "--profile-alloc-mean",
                self.profile_alloc_mean != defaults.profile_alloc_mean,
            ),
            ("--profile-full-stacks", self.profile_full_stacks),
            ("--profile-format", !self.profile_format.is_empty()),
            ("--profile-no-compress", self.profile_no_compress),
            (
                "--profile-unwind",
                self.profile_unwind != defaults.profile_unwind,
            ),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }

    fn default_values() -> HarnessArgs {
        // The empty command line parses: every flag has a default or is optional.
        <HarnessArgs as clap::Parser>::try_parse_from(["bench"])
            .unwrap_or_else(|e| unreachable!("the harness's flags have no defaults: {e}"))
    }
}

/// A byte count: a number with an optional `k`/`KiB`, `m`/`MiB`, `g`/`GiB` suffix (powers
/// of 1024), at least 1.
fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "'{text}' is not a byte count (512KiB, 64k, 1M, 4096)"
            ))
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a byte count (512KiB, 64k, 1M, 4096)"))?;
    match n.checked_shl(shift).filter(|v| *v >> shift == n) {
        Some(0) => Err(format!("'{text}': at least one byte")),
        Some(v) => Ok(v),
        None => Err(format!("'{text}' is too large")),
    }
}

/// A percentage: a finite number, zero or more.
fn percent(text: &str) -> Result<f64, String> {
    match text.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "`{text}` is no percentage (a number, zero or more)"
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_noise_threshold_is_a_percentage() {
        use super::percent;
        assert_eq!(percent("2"), Ok(2.0));
        assert_eq!(percent("1.5%"), Ok(1.5));
        assert_eq!(percent("0"), Ok(0.0));
        for bad in ["-1", "nan", "inf", "two"] {
            let why = percent(bad).unwrap_err();
            assert!(why.contains(bad), "{why}");
        }
    }

    #[test]
    fn partitions_share_the_cases_between_them_exactly_once() {
        use super::Partition;
        let names: Vec<String> = (0..50).map(|i| format!("group{}/case{i}", i % 7)).collect();
        for how in ["count", "hash"] {
            let shares: Vec<Partition> = (1..=3)
                .map(|k| Partition::parse(&format!("{how}:{k}/3")).unwrap())
                .collect();
            let mut taken = vec![0; names.len()];
            for p in &shares {
                let mine: Vec<usize> = (0..names.len())
                    .filter(|&i| p.takes(i, &names[i]))
                    .collect();
                // Each share a fair part: none empty, none with most of them.
                assert!(
                    (8..=26).contains(&mine.len()),
                    "{how} {p:?}: {}",
                    mine.len()
                );
                for i in mine {
                    taken[i] += 1;
                }
            }
            assert!(taken.iter().all(|&t| t == 1), "{how}: {taken:?}");
        }
        // Said as it is spelled.
        for text in ["count:2/3", "hash:1/4"] {
            assert_eq!(Partition::parse(text).unwrap().to_string(), text);
        }
        // By hash a case keeps its share when others are added before it.
        let p = Partition::parse("hash:2/3").unwrap();
        let kept: Vec<bool> = names.iter().map(|n| p.takes(0, n)).collect();
        let again: Vec<bool> = names.iter().map(|n| p.takes(99, n)).collect();
        assert_eq!(kept, again);
        assert_eq!(
            Partition::parse("count:1/1"),
            Ok(Partition {
                by_hash: false,
                k: 1,
                n: 1
            })
        );
        for bad in [
            "1/3",
            "count:0/3",
            "count:4/3",
            "hash:1/0",
            "mod:1/2",
            "count:a/b",
        ] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn byte_counts_take_binary_suffixes_and_refuse_nonsense() {
        assert_eq!(super::parse_bytes("512KiB"), Ok(512 * 1024));
        assert_eq!(super::parse_bytes("64k"), Ok(65536));
        assert_eq!(super::parse_bytes("1M"), Ok(1 << 20));
        assert_eq!(super::parse_bytes("4096"), Ok(4096));
        for bad in ["", "0", "12 parsecs", "-1", "k", "99999999999G"] {
            assert!(super::parse_bytes(bad).is_err(), "{bad}");
        }
    }

    use super::*;

    fn parse(args: &[&str]) -> Result<HarnessArgs, clap::Error> {
        HarnessArgs::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
    }

    #[test]
    fn accepts_what_cargo_test_and_nextest_pass() {
        let a = parse(&["--list", "--format", "terse", "--ignored"]).unwrap();
        assert!(a.list && a.ignored && a.format == Some(ListFormat::Terse));
        let a = parse(&[
            "--exact",
            "json/parse",
            "--nocapture",
            "--test-threads",
            "1",
            "-q",
        ])
        .unwrap();
        assert!(a.exact && a.nocapture && a.quiet);
        assert_eq!(a.filters, ["json/parse"]);
        let a = parse(&["--bench", "sort", "hash"]).unwrap();
        assert!(a.bench);
        assert_eq!(a.filters, ["sort", "hash"]);
    }

    #[test]
    fn harness_flags_have_their_defaults_and_parse_units() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.bench_min_time, None);
        assert_eq!(a.samples, None);
        assert_eq!(a.sample_order, SampleOrder::RoundRobin);
        let a = parse(&["--bench-min-time", "200us", "--sample-order", "blocked"]).unwrap();
        assert_eq!(a.bench_min_time, Some(Duration::from_micros(200)));
        assert_eq!(a.sample_order, SampleOrder::Blocked);
        let a = parse(&["--metrics", "rusage.*,io.syscr"]).unwrap();
        assert_eq!(a.metrics.unwrap(), ["rusage.*", "io.syscr"]);
        // --profile-time as criterion takes it (seconds), or with a unit.
        assert_eq!(
            parse(&["--profile-time", "2"]).unwrap().profile_time,
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse(&["--profile-time", "250ms"]).unwrap().profile_time,
            Some(Duration::from_millis(250))
        );
        let e = parse(&["--profile-time=-1"]).unwrap_err().to_string();
        assert!(e.contains("--profile-time"), "{e}");
        // The profile flags a command line gave, for the warning without --profile.
        assert!(parse(&[]).unwrap().profile_flags_given().is_empty());
        let a = parse(&["--profile-event", "cpu-clock", "--profile-time", "1s"]).unwrap();
        assert_eq!(
            a.profile_flags_given(),
            ["--profile-event", "--profile-time"]
        );
    }

    #[test]
    fn bad_values_name_the_flag() {
        let e = parse(&["--bench-min-time", "5"]).unwrap_err().to_string();
        assert!(e.contains("--bench-min-time") && e.contains("unit"), "{e}");
        let e = parse(&["--samples", "0"]).unwrap_err().to_string();
        assert!(e.contains("--samples"), "{e}");
        let e = parse(&["--no-such-flag"]).unwrap_err().to_string();
        assert!(e.contains("--no-such-flag"), "{e}");
        let e = parse(&["--valgrind-sim", "none,cache"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--valgrind-sim") && e.contains("alone"), "{e}");
        assert!(
            !parse(&["--valgrind-sim", "branch"])
                .unwrap()
                .valgrind_sim
                .cache
        );
    }
}

/// `--partition`: which share of the cases this run takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// Hash the names (`hash:`) rather than count the cases (`count:`).
    pub by_hash: bool,
    /// The share, 1-based.
    pub k: u64,
    /// Of how many.
    pub n: u64,
}

impl Partition {
    /// `count:K/N` or `hash:K/N`, 1 ≤ K ≤ N.
    pub fn parse(text: &str) -> Result<Partition, String> {
        let (how, share) = text
            .split_once(':')
            .ok_or_else(|| format!("'{text}': expected count:K/N or hash:K/N"))?;
        let by_hash = match how {
            "count" => false,
            "hash" => true,
            other => return Err(format!("'{other}': expected count or hash before the ':'")),
        };
        let (k, n) = share
            .split_once('/')
            .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)))
            .ok_or_else(|| format!("'{share}': expected K/N, two whole numbers"))?;
        if n == 0 || k == 0 || k > n {
            return Err(format!("'{share}': K must be 1 to N, and N at least 1"));
        }
        Ok(Partition { by_hash, k, n })
    }

    /// Whether the `index`th case (0-based, among those the filters leave) called `name`
    /// is in this share.
    pub fn takes(&self, index: usize, name: &str) -> bool {
        let slot = if self.by_hash {
            // FNV-1a of the name: the same share on every machine and in every version.
            name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        } else {
            index as u64
        };
        slot % self.n == self.k - 1
    }
}

impl std::fmt::Display for Partition {
    /// `count:K/N` or `hash:K/N`, as [`Partition::parse`] reads it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.by_hash { "hash" } else { "count" };
        write!(f, "{how}:{}/{}", self.k, self.n)
    }
}
